import Contracts
import Foundation
import WireCodec
import XCTest

/// Every UUID in Pushline's JSON is written in lower case — HTTP answers and commands alike —
/// and read in either case.
final class LowercaseUUIDTests: XCTestCase {
    let id = UUID(uuidString: "0A1868E6-04C9-4D3B-8125-2F9597F68E78")!
    let lower = "0a1868e6-04c9-4d3b-8125-2f9597f68e78"

    func json(_ value: some Encodable) throws -> String {
        let encoder = WireJSON.encoder()
        encoder.outputFormatting = .sortedKeys
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    func testAdminAnswersWriteLowerCase() throws {
        let created = AdminAPI.AppCreatedAnswer(orgId: id, mobileAppId: id, apiToken: "t", tokenId: id, apiTokenScopes: [.client, .server],
                                                clientToken: "c", clientTokenId: id, clientTokenScopes: [.client], note: "n")
        let identity = try json(AdminAPI.UserIdentityView(required: false, secretSealedWith: nil))
        XCTAssertEqual(try json(created), #"{"apiToken":"t","apiTokenScopes":["client","server"],"clientToken":"c","clientTokenId":"\#(lower)","clientTokenScopes":["client"],"mobileAppId":"\#(lower)","note":"n","orgId":"\#(lower)","tokenId":"\#(lower)","userIdentity":\#(identity)}"#)
        XCTAssertEqual(try json(AdminAPI.AppList(apps: [], next: id)), #"{"apps":[],"next":"\#(lower)"}"#)
        XCTAssertEqual(try json(DeviceRegistrationAPI.RegistrationAccepted(RegistrationRequestId: id)),
                       #"{"RegistrationRequestId":"\#(lower)"}"#)
    }

    func testALastPageLeavesNextOutAndReadsBackAsNil() throws {
        let text = try json(AdminAPI.AppList(apps: [], next: nil))
        XCTAssertEqual(text, #"{"apps":[]}"#)
        XCTAssertNil(try WireJSON.decoder().decode(AdminAPI.AppList.self, from: Data(text.utf8)).next)
    }

    func testCommandsWriteLowerCaseAndReadEitherCase() throws {
        let command = ApiTokenRevoked(mobileAppId: id, tokenId: id)
        let envelope = Envelope(type: ApiTokenRevoked.type.rawValue, id: id, payload: command)
        let text = try json(envelope)
        XCTAssertFalse(text.contains(id.uuidString), text)
        XCTAssertTrue(text.contains(#""id":"\#(lower)""#), text)
        let upper = text.replacingOccurrences(of: lower, with: id.uuidString)
        let read = try WireJSON.decoder().decode(Envelope<ApiTokenRevoked>.self, from: Data(upper.utf8))
        XCTAssertEqual(read.id, id)
        XCTAssertEqual(read.payload, command)
    }

    func testAFieldThatIsNoUUIDIsADecodingError() {
        XCTAssertThrowsError(try WireJSON.decoder().decode(AdminAPI.TokenView.self, from: Data(#"{"tokenId":"nope","revoked":false}"#.utf8)))
    }
}
