#if canImport(Glibc)
import Glibc
#endif
import Contracts
import Foundation
import Kafka
import Logging
import TestSupport
import WireCodec
import XCTest

/// Sends, managed notifications, acks and callbacks (docs/API.md#sending-notifications) through the
/// real services and broker; outbound records are read back with kcat.
final class NotificationFlowTests: XCTestCase {
    private var stack: PushlineStack!

    override func setUp() async throws {
        stack = try await PushlineStack.start()
    }

    override func tearDown() async throws {
        await stack?.stop()
    }

    func testSendToAUserWithThreeDevicesWritesTheSeedPayloads() async throws {
        let app = try await stack.createApp()
        let ios1 = Tokens.apns(1), ios2 = Tokens.apns(2), android = Tokens.fcm(3)
        try await stack.registerKF5([("123", ios1, "IOS"), ("123", ios2, "ios"), ("123", android, "ANDROID"), ("456", Tokens.apns(4), "IOS")], app: app)
        try await stack.waitForDevices(4, app: app.mobileAppId)

        let deliveryId = try await stack.send([
            "userId": "123", "title": "Push Notification Title", "body": "This is the content of my push notification",
            "sound": "default", "badge": 2, "category": "NEW_MESSAGE_CATEGORY", "contentAvailable": true,
            "uri": "https://mydeeplinkurl.com", "mediaAttachmentUrl": "https://2.img-dpreview.com/files/p/articles/9440145363/Creative_Cloud.jpeg",
            "collapseKey": "1476005", "priority": "high",
            "custom": ["custom_field1": "custom_value1", "custom_field2": "custom_value2"],
        ], app: app)
        let records = try await stack.waitForOutbound(3)
        XCTAssertEqual(records.count, 3, "only the user's devices")
        XCTAssertEqual(Set(records.map(\.record.deviceToken)), [ios1, ios2, android])
        XCTAssertEqual(Set(records.map(\.record.messageId)).count, 3)
        let d = deliveryId.uuidString.lowercased()
        for (_, r) in records {
            XCTAssertEqual(r.deliveryId, deliveryId)
            XCTAssertEqual(r.mobileAppId, app.mobileAppId)
            let expected: String
            switch r.platform {
            case .ios:
                expected = """
                    {"aps":{"alert":{"title":"Push Notification Title","body":"This is the content of my push notification"},
                     "badge":2,"sound":"default","category":"NEW_MESSAGE_CATEGORY","content-available":1,"mutable-content":1},
                     "custom_field1":"custom_value1","custom_field2":"custom_value2",
                     "media-attachment-url":"https://2.img-dpreview.com/files/p/articles/9440145363/Creative_Cloud.jpeg",
                     "uri":"https://mydeeplinkurl.com","_dId":"\(d)","_mId":"\(r.messageId)","_acsDeliveryTracking":"on"}
                    """
            case .android:
                expected = """
                    {"collapseKey":"1476005","priority":"high","data":{"_dId":"\(d)","_mId":"\(r.messageId)",
                     "title":"Push Notification Title","body":"This is the content of my push notification","category":"NEW_MESSAGE_CATEGORY",
                     "custom_field1":"custom_value1","custom_field2":"custom_value2",
                     "media-attachment-url":"https://2.img-dpreview.com/files/p/articles/9440145363/Creative_Cloud.jpeg",
                     "sound":"default","uri":"https://mydeeplinkurl.com","badge":"2","_acsDeliveryTracking":"on"}}
                    """
            }
            XCTAssertEqual(r.payload, try JSONValue.parse(Data(expected.utf8)), "\(r.platform)")
        }
        let delivery = try await stack.sqlite("SELECT sent, managed, tracking FROM deliveries WHERE delivery_id = '\(d)'")
        XCTAssertEqual(delivery, ["3|0|1"])
        let pendingRows = try await stack.sqlite("SELECT COUNT(*) FROM pending_notifications")
        XCTAssertEqual(pendingRows, ["0"], "unmanaged: never pending")
    }

    func testManagedNotificationIsPendingUntilAckedAndBadgeFollows() async throws {
        let app = try await stack.createApp()
        let phone = Tokens.apns(10), tablet = Tokens.fcm(11)
        for (token, type) in [(phone, "IOS"), (tablet, "ANDROID")] {
            let answer = try await stack.call(.PUT, "/bwmi/v1/apps/\(app.mobileAppId)/devices",
                                              json: ["deviceId": token, "type": type, "user": ["phone": "+1 988 399 9901", "email": "ABC@yahoo.com"]],
                                              token: app.apiToken)
            XCTAssertEqual(answer.status, 201, answer.text)
        }
        try await stack.waitForDevices(2, app: app.mobileAppId)
        let users = try await stack.sqlite("SELECT DISTINCT user_id FROM devices")
        XCTAssertEqual(users, ["tel:+19883999901"])

        let first = try await stack.send(["userId": "tel:+19883999901", "text": "Boarding announced", "managed": true, "businessId": "GATE_CHANGE"], app: app)
        let second = try await stack.send(["userId": "tel:+19883999901", "title": "Flight canceled", "managed": true], app: app)
        _ = try await stack.send(["userId": "tel:+19883999901", "text": "Salary deposited", "managed": false], app: app)
        try await stack.waitForOutbound(6)
        try await eventually("both managed notifications pending on both devices") {
            try await self.stack.sqlite("SELECT COUNT(*) FROM pending_notifications") == ["4"]
        }
        let ns = try await stack.pendingList(app: app, device: phone)
        XCTAssertEqual(ns.map { $0[0] }, [first, second].map { $0.uuidString.lowercased() }, "oldest first, unmanaged absent")
        XCTAssertEqual(ns[0][2], "Boarding announced")
        XCTAssertEqual(ns[0][3], "GATE_CHANGE")
        XCTAssertEqual(ns[1].count, 3, "no bid")
        XCTAssertEqual(ns[1][2], "Flight canceled", "alert text falls back to the title")
        XCTAssertNotNil(Int64(ns[0][1]))
        let phoneRecords = try await stack.outboundRecords().filter { $0.record.deviceToken == phone }
        XCTAssertEqual(phoneRecords.compactMap { $0.record.payload["badge"] },
                       [.string("1"), .string("2")], "managed badge = pending count; the unmanaged one has none")

        for nid in [first, second] {
            let answer = try await stack.call(.PUT, "/bwmi/v1/apps/\(app.mobileAppId)/acks",
                                              json: ["nid": nid.uuidString, "did": phone, "bid": "GATE_CHANGE"], token: app.apiToken)
            XCTAssertEqual(answer.status, 201, answer.text)
        }
        let records = try await stack.waitForOutbound(8)
        let badgeUpdates = records.filter { $0.record.deliveryId == nil }
        XCTAssertEqual(badgeUpdates.map(\.record.deviceToken), [phone, phone])
        XCTAssertEqual(badgeUpdates.last?.record.payload, try JSONValue.parse(Data(#"{"aps":{"badge":0},"badge":"0"}"#.utf8)))
        let phoneList = try await stack.pendingList(app: app, device: phone)
        XCTAssertEqual(phoneList, [])
        let tabletPending = try await stack.pendingList(app: app, device: tablet).count
        XCTAssertEqual(tabletPending, 2, "acks are per device")

        // Deleting the tablet drops its pending notifications and stops sends to it.
        let delete = try await stack.call(.DELETE, "/bwmi/v1/apps/\(app.mobileAppId)/devices",
                                          json: ["deviceId": tablet, "type": "IOS|ANDROID", "user": ["phone": "+19883999901"]], token: app.apiToken)
        XCTAssertEqual(delete.status, 200, delete.text)
        try await stack.waitForDevices(1, app: app.mobileAppId)
        let tabletList = try await stack.pendingList(app: app, device: tablet)
        XCTAssertEqual(tabletList, [])
        let afterDelete = try await stack.send(["userId": "tel:+19883999901", "text": "after delete"], app: app)
        let after = try await stack.waitForOutbound(9)
        XCTAssertEqual(after.filter { $0.record.deliveryId == afterDelete }.map(\.record.deviceToken), [phone])
    }

    /// An ack of a notification not yet sent (made up, or early) counts for nothing: it stores no
    /// row and sends no badge update, and the notification sent after it is pending until it is
    /// acknowledged (docs/API.md#acknowledgements).
    func testAnAckBeforeItsNotificationIsRefusedAndTheNotificationStaysPendingUntilAcked() async throws {
        let app = try await stack.createApp()
        let device = Tokens.apns(20)
        try await stack.registerKF5([("u", device, "IOS")], app: app)
        try await stack.waitForDevices(1, app: app.mobileAppId)
        let deliveryId = UUID()
        let notPending = #"pushline_processor_commands_rejected_total{type="notification.acknowledged",reason="not-pending"}"#
        let refusedBefore = try await stack.processorMetric(notPending)
        let ack = try await stack.call(.PUT, "/bwmi/v1/apps/\(app.mobileAppId)/acks",
                                       json: ["nid": deliveryId.uuidString, "did": device], token: app.apiToken)
        XCTAssertEqual(ack.status, 201, ack.text)
        try await eventually("early ack refused") { try await self.stack.processorMetric(notPending) == refusedBefore + 1 }
        let earlyAcks = try await stack.sqlite("SELECT COUNT(*) FROM acks")
        XCTAssertEqual(earlyAcks, ["0"])

        try await stack.produce(NotificationRequested(deliveryId: deliveryId, mobileAppId: app.mobileAppId,
                                                      target: NotificationTarget(userIds: ["u"]), content: NotificationContent(text: "late"),
                                                      managed: true))
        try await eventually("delivery applied") {
            try await self.stack.sqlite("SELECT sent FROM deliveries WHERE delivery_id = '\(deliveryId.uuidString.lowercased())'") == ["1"]
        }
        let pendingList = try await stack.pendingList(app: app, device: device)
        XCTAssertEqual(pendingList.count, 1, "the early ack did not acknowledge what came after it")
        let records = try await stack.waitForOutbound(1)
        XCTAssertEqual(records.map(\.record.deliveryId), [deliveryId], "the early ack sent no badge update")
        guard case .object(let payload)? = records.first?.record.payload else { return XCTFail("no push record") }
        XCTAssertEqual(payload["badge"], .string("1"))

        let again = try await stack.call(.PUT, "/bwmi/v1/apps/\(app.mobileAppId)/acks",
                                         json: ["nid": deliveryId.uuidString, "did": device], token: app.apiToken)
        XCTAssertEqual(again.status, 201, again.text)
        try await eventually("ack applied") { try await self.stack.sqlite("SELECT COUNT(*) FROM acks") == ["1"] }
        let pendingRows = try await stack.sqlite("SELECT COUNT(*) FROM pending_notifications")
        XCTAssertEqual(pendingRows, ["0"])
        let badgeUpdate = try await stack.waitForOutbound(2).last
        XCTAssertNil(badgeUpdate?.record.deliveryId, "the counted ack sent a badge update")
        XCTAssertEqual(badgeUpdate?.record.payload, try JSONValue.parse(Data(#"{"aps":{"badge":0},"badge":"0"}"#.utf8)))
    }

    func testTicketAndImCallbacksReachTheAppOncePerUser() async throws {
        try await ticketAndImCallbacks()
    }

    /// In an app in parts, each part stores its share of a send's callbacks and the last share's
    /// commit merges them: still one request per user, listing the devices of every part.
    func testTicketAndImCallbacksReachTheAppOncePerUserWithTheAppInThreeParts() async throws {
        await stack.stop()
        let parts = ["PUSHLINE_APP_PARTS": "3"]
        stack = try await PushlineStack.start(processorEnvironment: parts, ingestEnvironment: parts)
        // User 123's two devices are in different parts.
        XCTAssertNotEqual(AppParts(3).part(ofToken: Tokens.apns(30)), AppParts(3).part(ofToken: Tokens.fcm(31)))
        try await ticketAndImCallbacks()
    }

    private func ticketAndImCallbacks() async throws {
        let receiver = WebhookReceiver()
        try await receiver.start()
        defer { Task { await receiver.stop() } }
        let app = try await stack.createApp()
        let patch = try await HTTPClientHelpers.request(.PATCH, "\(stack.ingestURL)/admin/v1/apps/\(app.mobileAppId)",
                                                        body: Data(#"{"callbackUrl":"\#(receiver.baseURL)/kf5","callbackHeaders":{"X-Kf-Key":"secret-1"}}"#.utf8),
                                                        headers: stack.adminHeaders)
        XCTAssertEqual(patch.status, 202, patch.text)
        try await eventually("callback URL projected") {
            try await self.stack.sqlite("SELECT DISTINCT callback_url FROM apps") == ["\(receiver.baseURL)/kf5"]
        }
        let a1 = Tokens.apns(30), a2 = Tokens.fcm(31), b1 = Tokens.apns(32)
        try await stack.registerKF5([("123", a1, "IOS"), ("123", a2, "ANDROID"), ("bob", b1, "IOS")], app: app)
        try await stack.waitForDevices(3, app: app.mobileAppId)

        let ticket = try await stack.send(["userIds": ["123", "bob"], "title": "Ticket answered", "kind": "ticket", "ticketId": "123"], app: app)
        _ = try await stack.send(["userId": "bob", "body": "hello", "kind": "im", "message": "hello"], app: app)
        _ = try await stack.send(["userId": "bob", "body": "plain alert"], app: app)
        try await receiver.waitFor(count: 3, timeout: .seconds(60))
        try await stack.waitForOutbound(5)

        let requests = receiver.requests
        XCTAssertEqual(requests.count, 3)
        for r in requests {
            XCTAssertEqual(r.path, "/kf5")
            XCTAssertEqual(r.headers["x-kf-key"] ?? r.headers["X-Kf-Key"], "secret-1")
            XCTAssertEqual(r.headers["content-type"] ?? r.headers["Content-Type"], "application/json")
            XCTAssertEqual(r.headers["accept"] ?? r.headers["Accept"], "application/json")
        }
        let bodies = try requests.map { try JSONValue.parse($0.body) }
        XCTAssertTrue(bodies.contains(try JSONValue.parse(Data("""
            {"user":{"user_id":123},"device":[{"device_token":"\(a1)","type":"IOS"},{"device_token":"\(a2)","type":"ANDROID"}],
             "notification":{"ticket_id":"123","type":"ticket"}}
            """.utf8))), "\(bodies)")
        XCTAssertTrue(bodies.contains(try JSONValue.parse(Data("""
            {"user":{"user_id":"bob"},"device":[{"device_token":"\(b1)","type":"IOS"}],"notification":{"ticket_id":"123","type":"ticket"}}
            """.utf8))))
        XCTAssertTrue(bodies.contains(try JSONValue.parse(Data("""
            {"user":{"user_id":"bob"},"device":[{"device_token":"\(b1)","type":"IOS"}],"notification":{"message":"hello","type":"im"}}
            """.utf8))))
        let ids = Set(requests.compactMap { $0.headers[WebhookHeaders.webhookId] })
        XCTAssertTrue(ids.contains("callback:\(ticket.uuidString.lowercased()):123"), "\(ids)")

        // A restart does not call anyone back again.
        try await stack.restartProcessor(signal: SIGTERM)
        try await Task.sleep(for: .seconds(2))
        XCTAssertEqual(receiver.requests.count, 3)
    }

    func testBearerRoutesRefuseBadTokens() async throws {
        let app = try await stack.createApp()
        let other = try await stack.createApp(name: "other")
        let path = "/v1/apps/\(app.mobileAppId)/notifications"
        let none = try await HTTPClientHelpers.request(.POST, "\(stack.ingestURL)\(path)", body: Data(#"{"userId":"u","title":"t"}"#.utf8))
        XCTAssertEqual(none.status, 401)
        let forged = try await stack.call(.POST, path, json: ["userId": "u", "title": "t"], token: "forged").status
        XCTAssertEqual(forged, 401)
        let foreign = try await stack.call(.POST, path, json: ["userId": "u", "title": "t"], token: other.apiToken).status
        XCTAssertEqual(foreign, 401, "another app's token is refused as a forged one is")
        let bad = try await stack.call(.POST, path, json: ["userIds": [], "title": "t"], token: app.apiToken)
        XCTAssertEqual(bad.status, 400)
        let badAck = try await stack.call(.PUT, "/bwmi/v1/apps/\(app.mobileAppId)/acks", json: ["nid": "x", "did": "d"], token: app.apiToken).status
        XCTAssertEqual(badAck, 400)
        let notificationRecords = try await stack.countRecords(topic: stack.topics.notification)
        XCTAssertEqual(notificationRecords, 0, "nothing refused reached Kafka")
    }
}
