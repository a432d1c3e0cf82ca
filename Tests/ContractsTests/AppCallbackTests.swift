import Contracts
import Foundation
import WireCodec
import XCTest

final class AppCallbackTests: XCTestCase {
    func body(_ userId: String, _ devices: [(token: String, platform: Platform)] = [("1234567890", .ios)],
              kind: NotificationKind = .ticket, ticketId: String? = "123", message: String? = nil) -> String {
        String(decoding: AppCallback.body(userId: userId, devices: devices, kind: kind, ticketId: ticketId, message: message), as: UTF8.self)
    }

    func testTicketAndChatBodiesAreSeed002s() throws {
        XCTAssertEqual(body("123"),
                       #"{"user":{"user_id":123},"device":[{"device_token":"1234567890","type":"IOS"}],"notification":{"ticket_id":"123","type":"ticket"}}"#)
        XCTAssertEqual(body("123", kind: .im, ticketId: nil, message: "hello"),
                       #"{"user":{"user_id":123},"device":[{"device_token":"1234567890","type":"IOS"}],"notification":{"message":"hello","type":"im"}}"#)
        // The callback example of docs/API.md#app-callbacks.
        let seed = """
        {
        "user":{
        "user_id":123
        },
        "device":[{
        "device_token":"1234567890",
        "type":"IOS"
        }],
        "notification": {
        "ticket_id":"123",
        "type":"ticket"
        }}
        """
        XCTAssertEqual(try JSONValue.parse(body("123")), try JSONValue.parse(seed))
    }

    func testEveryDeviceIsListedWithItsType() {
        XCTAssertEqual(body("7", [("a", .ios), ("b", .android)], kind: .im, ticketId: "ignored", message: "m\"sg"),
                       #"{"user":{"user_id":7},"device":[{"device_token":"a","type":"IOS"},{"device_token":"b","type":"ANDROID"}],"#
                       + #""notification":{"message":"m\"sg","type":"im"}}"#)
        XCTAssertEqual(body("7", [], ticketId: nil), #"{"user":{"user_id":7},"device":[],"notification":{"type":"ticket"}}"#)
    }

    func testUserIdIsAnIntegerOnlyInCanonicalInt64Form() throws {
        let integers = ["123", "0", "-5", "9223372036854775807", "-9223372036854775808"]
        for id in integers {
            XCTAssertTrue(body(id).hasPrefix(#"{"user":{"user_id":\#(id)},"#), id)
        }
        let strings = ["abc", "0123", "+5", "-0", "99999999999999999999", "9223372036854775808", "", " 1", "1.0", "1e3", "tel:+19883999901"]
        for id in strings {
            let user = try JSONValue.parse(body(id))["user"]?["user_id"]
            XCTAssertEqual(user, .string(id), id)
        }
    }
}
