import Contracts
import Foundation
import OutboundRendering
import WireCodec
import XCTest

/// `OutboundPush.read`, the sender's reading of outbound records: whatever path it takes, it
/// means what `JSONDecoder` (`OutboundRecordView`) reads from the same bytes.
final class OutboundPushTests: XCTestCase {
    let app = UUID(uuidString: "6B1F0C2E-9A3D-4E5F-8A7B-1C2D3E4F5A6B")!
    let delivery = UUID(uuidString: "0A1868E6-04C9-4D3B-8125-2F9597F68E78")!
    let sentAt = Date(timeIntervalSince1970: 1_795_000_000)

    /// The push read from `data` agrees with the decoder's view of it.
    private func assertAgrees(_ data: Data, file: StaticString = #filePath, line: UInt = #line) throws {
        let push = try OutboundPush.read(data)
        let view = try OutboundRecordView.decode(data)
        XCTAssertEqual(push.mobileAppId, view.mobileAppId, file: file, line: line)
        XCTAssertEqual(push.deviceToken, view.deviceToken, file: file, line: line)
        XCTAssertEqual(push.platform, view.platform, file: file, line: line)
        XCTAssertEqual(push.deliveryId, view.deliveryId, file: file, line: line)
        XCTAssertEqual(push.messageId, view.messageId, file: file, line: line)
        XCTAssertEqual(push.collapseKey, view.collapseKey, file: file, line: line)
        XCTAssertEqual(push.priority, view.priority, file: file, line: line)
        XCTAssertEqual(push.expiresAt, view.expiresAt, file: file, line: line)
        XCTAssertEqual(try JSONValue.parse(push.payload), view.payload, file: file, line: line)
        var contents = OutboundPush.PayloadContents(view.payload)
        // `data` compared as JSON: the decoded path writes it again, in its own key order.
        XCTAssertEqual(try push.contents.data.map(JSONValue.parse), try contents.data.map(JSONValue.parse), file: file, line: line)
        contents.data = push.contents.data
        XCTAssertEqual(push.contents, contents, file: file, line: line)
    }

    func testTheProcessorsRecordsAreReadWithTheirPayloadByteForByte() throws {
        let n = NotificationRequested(deliveryId: delivery, mobileAppId: app, target: NotificationTarget(deviceTokens: ["tok"]),
                                      content: NotificationContent(title: "Hi", body: "a \"quoted\" \\ line\n", badge: 3,
                                                                   collapseKey: "k\u{1F600}", priority: .normal,
                                                                   custom: ["k": "v\u{0}", "ключ": "значение"], timeToLive: 60),
                                      managed: true, businessId: "b-1")
        for platform in Platform.allCases {
            let data = OutboundRecord.notification(n, deviceToken: "tok", platform: platform, messageId: "0-abc", sentAt: sentAt, managedBadge: 4)
            try assertAgrees(data)
            let push = try OutboundPush.read(data)
            XCTAssertTrue(String(decoding: data, as: UTF8.self).hasSuffix(#","payload":"# + String(decoding: push.payload, as: UTF8.self) + "}"),
                          "the payload as rendered, not written again")
            XCTAssertEqual(push.expiry, sentAt.addingTimeInterval(60))
        }
    }

    func testWakingOnlyIsAContentAvailablePushWithoutAlertBadgeOrSound() throws {
        func wakesOnly(_ content: NotificationContent) throws -> Bool {
            let n = NotificationRequested(deliveryId: delivery, mobileAppId: app, target: NotificationTarget(deviceTokens: ["t"]), content: content)
            let data = OutboundRecord.notification(n, deviceToken: "t", platform: .ios, messageId: "m", sentAt: sentAt, managedBadge: nil)
            try assertAgrees(data)
            return try OutboundPush.read(data).contents.wakesOnly
        }
        XCTAssertTrue(try wakesOnly(NotificationContent(contentAvailable: true, custom: ["x": "y"])))
        XCTAssertFalse(try wakesOnly(NotificationContent(title: "t", contentAvailable: true)))
        XCTAssertFalse(try wakesOnly(NotificationContent(sound: "s", contentAvailable: true)))
        XCTAssertFalse(try wakesOnly(NotificationContent(badge: 0, contentAvailable: true)))
        XCTAssertFalse(try wakesOnly(NotificationContent(category: "c")))
    }

    /// Records no processor writes, each read as the decoder reads them: the hand-written path
    /// gives up and the decoder decides, or both agree.
    func testUnusualRecordsMeanWhatTheDecoderReads() throws {
        let head = #""mobileAppId":"\#(app.lowercasedString)","deviceToken":"t","platform":"ios","messageId":"m""#
        let agreeing = [
            #"{\#(head),"payload":{"aps":{"content-available":1}}}"#,
            #"{\#(head),"payload":{"aps":{"content-available":1.0}}}"#,
            #"{\#(head),"payload":{"aps":{"content-available":2}}}"#,
            #"{\#(head),"payload":{"aps":{"alert":null,"content-available":1}}}"#,
            #"{\#(head),"payload":{"aps":"x","data":[1,{"a":[true,false,null,-1.5e3]}]}}"#,
            #" { \#(head) , "payload" : { "\u0061ps" : { "content-available" : 1 } , "priority" : "high" } } "#,
            #"{\#(head),"payload":{"data":{"k\"ey":"v"},"collapseKey":"c\u0041"}}"#,
            #"{\#(head),"unknown":1,"deliveryId":null,"payload":{"priority":7}}"#,
            #"{\#(head),"payload":[1,2]}"#,
            #"{\#(head),"payload":"text"}"#,
            #"{\#(head),"expiresAt":1795000090000,"priority":"high","collapseKey":"x","payload":{}}"#,
            #"{\#(head),"platform":"android","payload":{"data":{},"data":{"a":"b"}}}"#,
        ]
        for text in agreeing { try assertAgrees(Data(text.utf8)) }
        XCTAssertFalse(try OutboundPush.read(Data(agreeing[8].utf8)).contents.isObject)
        XCTAssertEqual(try OutboundPush.read(Data(agreeing[6].utf8)).contents.collapseKey, "cA")
        let failing = [
            #"{\#(head)}"#,
            #"{\#(head),"payload":{"aps":{"content-available":1}}"#,
            #"{\#(head),"payload":{"a":"unterminated}}"#,
            #"{"mobileAppId":"\#(app.lowercasedString)","deviceToken":"t","platform":"windows","messageId":"m","payload":{}}"#,
            #"{\#(head),"payload":{}} trailing"#,
            #"{\#(head),"payload":{"a":tru}}"#,
        ]
        for text in failing {
            XCTAssertThrowsError(try OutboundPush.read(Data(text.utf8)), text)
            XCTAssertThrowsError(try OutboundRecordView.decode(Data(text.utf8)), text)
        }
    }

    /// Random contents, custom fields of any characters: every record agrees.
    func testRandomRecordsAgree() throws {
        var random = SystemRandomNumberGenerator()
        let alphabet = Array("aZ09 \"\\/\n\t\u{0}\u{1F}é€\u{1F600}{}[]:,")
        func text() -> String? {
            Bool.random(using: &random) ? nil : String((0..<Int.random(in: 0...12, using: &random)).map { _ in alphabet.randomElement(using: &random)! })
        }
        for _ in 0..<300 {
            var custom: [String: String] = [:]
            for _ in 0..<Int.random(in: 0...3, using: &random) { custom[text() ?? "k"] = text() ?? "" }
            custom = custom.filter { !PushPayload.reservedCustomKeys.contains($0.key) }
            let content = NotificationContent(title: text(), body: text(), sound: text(), badge: Bool.random() ? Int.random(in: 0...99) : nil,
                                              category: text(), uri: text(), contentAvailable: Bool.random() ? true : nil,
                                              collapseKey: text(), priority: [nil, .high, .normal].randomElement()!,
                                              custom: custom.isEmpty ? nil : custom, timeToLive: Bool.random() ? 30 : nil)
            let n = NotificationRequested(deliveryId: delivery, mobileAppId: app, target: NotificationTarget(deviceTokens: ["t"]), content: content)
            for platform in Platform.allCases {
                try assertAgrees(OutboundRecord.notification(n, deviceToken: text() ?? "t", platform: platform, messageId: "m",
                                                             sentAt: sentAt, managedBadge: nil))
            }
        }
    }
}
