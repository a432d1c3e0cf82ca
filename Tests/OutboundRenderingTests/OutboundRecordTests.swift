import Contracts
import Foundation
import OutboundRendering
import WireCodec
import XCTest

final class OutboundRecordTests: XCTestCase {
    let app = UUID(uuidString: "6B1F0C2E-9A3D-4E5F-8A7B-1C2D3E4F5A6B")!
    let delivery = UUID(uuidString: "0A1868E6-04C9-4D3B-8125-2F9597F68E78")!
    let sentAt = Date(timeIntervalSince1970: 1_795_000_000)

    func testANotificationRecordReadsBackWithItsFieldsAndPayload() throws {
        let n = NotificationRequested(deliveryId: delivery, mobileAppId: app, target: NotificationTarget(deviceTokens: ["tok"]),
                                      content: NotificationContent(title: "Hi", badge: 3))
        let messageId = MessageId.make(deliveryId: delivery, index: 0)
        for platform in Platform.allCases {
            let data = OutboundRecord.notification(n, deviceToken: "tok", platform: platform, messageId: messageId, sentAt: sentAt, managedBadge: nil)
            var payload = JSONWriter()
            PushPayload.render(n, platform: platform, messageId: messageId, sentAt: sentAt, managedBadge: nil, into: &payload)
            let view = try OutboundRecordView.decode(data)
            XCTAssertEqual(view, OutboundRecordView.decode(mobileAppId: app, deviceToken: "tok", platform: platform, deliveryId: delivery,
                                                           messageId: messageId, payload: try JSONValue.parse(payload.data)))
            // The payload is embedded byte for byte, in key order.
            XCTAssertTrue(String(decoding: data, as: UTF8.self).hasSuffix(#","payload":"# + String(decoding: payload.bytes, as: UTF8.self) + "}"))
        }
    }

    func testTheSendsDeliveryOptionsAreFieldsOfTheRecordForTheSender() throws {
        let n = NotificationRequested(deliveryId: delivery, mobileAppId: app, target: NotificationTarget(deviceTokens: ["tok"]),
                                      content: NotificationContent(title: "Hi", collapseKey: "scores", priority: .normal, timeToLive: 90))
        let data = OutboundRecord.notification(n, deviceToken: "tok", platform: .ios, messageId: "0-abc", sentAt: sentAt, managedBadge: nil)
        let view = try OutboundRecordView.decode(data)
        XCTAssertEqual(view.collapseKey, "scores")
        XCTAssertEqual(view.priority, .normal)
        XCTAssertEqual(view.expiresAt, 1_795_000_090_000, "the send's time plus its time to live")
        XCTAssertEqual(view.expiry, sentAt.addingTimeInterval(90))
        XCTAssertTrue(String(decoding: data, as: UTF8.self).contains(#""messageId":"0-abc","collapseKey":"scores","priority":"normal","expiresAt":1795000090000,"payload":"#))
        let template = OutboundTemplate(n, platform: .ios, sentAt: sentAt, managedBadge: nil, series: MessageId.Series(deliveryId: delivery))
        XCTAssertEqual(template.record(deviceToken: "tok", index: 0),
                       OutboundRecord.notification(n, deviceToken: "tok", platform: .ios, messageId: MessageId.make(deliveryId: delivery, index: 0),
                                                   sentAt: sentAt, managedBadge: nil), "the template writes them too")
        let plain = try OutboundRecordView.decode(OutboundRecord.notification(
            NotificationRequested(deliveryId: delivery, mobileAppId: app, target: NotificationTarget(deviceTokens: ["tok"]),
                                  content: NotificationContent(title: "Hi")),
            deviceToken: "tok", platform: .ios, messageId: "0-abc", sentAt: sentAt, managedBadge: nil))
        XCTAssertNil(plain.expiresAt)
        XCTAssertNil(plain.collapseKey)
    }

    func testRecordShapeAndPayloadSize() throws {
        var w = JSONWriter()
        let size = OutboundRecord.encode(mobileAppId: app, deviceToken: "t\"1", platform: .android, deliveryId: delivery, messageId: "0-abc",
                                         into: &w) { w in
            w.beginObject(); w.field("k", "v"); w.endObject()
        }
        XCTAssertEqual(String(decoding: w.bytes, as: UTF8.self),
                       #"{"mobileAppId":"6b1f0c2e-9a3d-4e5f-8a7b-1c2d3e4f5a6b","deviceToken":"t\"1","platform":"android","#
                       + #""deliveryId":"0a1868e6-04c9-4d3b-8125-2f9597f68e78","messageId":"0-abc","payload":{"k":"v"}}"#)
        XCTAssertEqual(size, #"{"k":"v"}"#.utf8.count)
    }

    func testABadgeUpdateRecordHasNoDeliveryId() throws {
        let ack = UUID(uuidString: "B8BA7A54-92DC-4978-B125-53BFE57DAA6C")!
        let data = OutboundRecord.badgeUpdate(mobileAppId: app, deviceToken: "tok", platform: .ios, ackId: ack, badge: 0)
        XCTAssertEqual(String(decoding: data, as: UTF8.self),
                       #"{"mobileAppId":"6b1f0c2e-9a3d-4e5f-8a7b-1c2d3e4f5a6b","deviceToken":"tok","platform":"ios","#
                       + #""messageId":"badge-b8ba7a54-92dc-4978-b125-53bfe57daa6c","payload":{"aps":{"badge":0},"badge":"0"}}"#)
        let view = try OutboundRecordView.decode(data)
        XCTAssertNil(view.deliveryId)
        XCTAssertEqual(view.platform, .ios)
        XCTAssertEqual(view.payload, try JSONValue.parse(#"{"aps":{"badge":0},"badge":"0"}"#))
        XCTAssertNil(try JSONValue.parse(data)["deliveryId"])
    }
}

extension OutboundRecordView {
    /// Builds the expected view through the decoder (the struct has no public memberwise init).
    static func decode(mobileAppId: UUID, deviceToken: String, platform: Platform, deliveryId: UUID?, messageId: String,
                       payload: JSONValue) -> OutboundRecordView {
        var object: [String: JSONValue] = [
            "mobileAppId": .string(mobileAppId.uuidString), "deviceToken": .string(deviceToken),
            "platform": .string(platform.rawValue), "messageId": .string(messageId), "payload": payload,
        ]
        if let deliveryId { object["deliveryId"] = .string(deliveryId.uuidString) }
        return try! JSONDecoder().decode(OutboundRecordView.self, from: JSONEncoder().encode(JSONValue.object(object)))
    }
}
