import Contracts
import Foundation
import Sender
import TestSupport
import XCTest

/// Delivery end to end on the real stack: ingest, processor and `pushline-sender` executables,
/// a Tansu broker, SQLite, and the mock APNs and FCM servers over HTTP/2 with TLS.
final class DeliveryFlowTests: XCTestCase {
    private var rig: DeliveryRig?

    override func tearDown() async throws {
        await rig?.stop()
        rig = nil
    }

    private static func devices(_ prefix: UInt32, _ count: Int) -> [String] {
        (0..<count).map { Tokens.apns($0, salt: prefix) }
    }

    func testPushesReachBothPlatformsAndDeadTokensAreRetiredUnlessRegisteredAgain() async throws {
        let rig = try await DeliveryRig.start()
        self.rig = rig
        let stack = rig.stack
        try await rig.startSender()
        let app = try await stack.createApp(name: "both platforms")
        try await rig.setAPNs(app: app.mobileAppId, keyId: "KEYAAAAAA1")
        try await rig.setFCM(app: app.mobileAppId)

        let (ios, android) = (Tokens.apns(1, salt: 0xA), Tokens.fcm(1, salt: 0xA))
        let (deadIOS, backIOS, deadAndroid) = (Tokens.apns(2, salt: 0xA), Tokens.apns(3, salt: 0xA), Tokens.fcm(4, salt: 0xA))
        try await stack.registerKF5([("alice", ios, "IOS"), ("alice", android, "ANDROID"), ("bob", deadIOS, "IOS"),
                                     ("carol", backIOS, "IOS"), ("dave", deadAndroid, "ANDROID")], app: app)
        try await stack.waitForDevices(5, app: app.mobileAppId)
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        // Apple saw bob's token die after he registered it; carol registered hers again after it died.
        rig.apns.setBehaviour(.unregistered(timestampMs: now + 60_000), for: deadIOS)
        rig.apns.setBehaviour(.unregistered(timestampMs: now - 3_600_000), for: backIOS)
        rig.fcm.setBehaviour(.unregistered, for: deadAndroid)

        let delivery = try await stack.send(["userIds": ["alice", "bob", "carol", "dave"], "title": "Hello", "body": "there",
                                             "priority": "high"], app: app)
        let stats = try await rig.waitForStats(delivery, app: app, "every push reported") { $0.delivered + $0.unregistered == 5 }
        XCTAssertEqual([stats.delivered, stats.unregistered, stats.failed], [2, 3, 0])

        // The push as each provider received it.
        let outbound = try await stack.outboundRecords().map(\.record)
        let iosRecord = try XCTUnwrap(outbound.first { $0.deviceToken == ios })
        let apnsRequest = try XCTUnwrap(rig.apns.requests(for: ios).first)
        XCTAssertEqual(apnsRequest.status, 200)
        XCTAssertEqual(apnsRequest.headers["apns-id"], APNsRequest.apnsId(messageId: iosRecord.messageId))
        XCTAssertEqual(apnsRequest.headers["apns-topic"], "com.example.a")
        XCTAssertEqual(apnsRequest.headers["apns-push-type"], "alert")
        XCTAssertNotNil(apnsRequest.headers["apns-expiration"].flatMap { Int($0) }, "the push expires")
        XCTAssertEqual(try JSONValue.parse(apnsRequest.body), iosRecord.payload, "the payload is the rendered outbound payload")
        let fcmRequest = try XCTUnwrap(rig.fcm.requests(for: android).first)
        XCTAssertEqual(fcmRequest.status, 200)
        XCTAssertEqual(fcmRequest.json?["message"]?["android"]?["priority"], .string("HIGH"))
        XCTAssertNotNil(fcmRequest.json?["message"]?["android"]?["ttl"], "the message expires")
        XCTAssertEqual(rig.apns.distinctJWTs, 1, "one provider token for every push")
        XCTAssertEqual(rig.fcm.issuedAccessTokenCount, 1, "one access token for every message")

        // Dead tokens retired, but not the one registered again after it died.
        try await eventually("dead devices retired") {
            let (iosKept, androidKept) = (try await rig.hasDevice(deadIOS, app: app.mobileAppId),
                                          try await rig.hasDevice(deadAndroid, app: app.mobileAppId))
            return !iosKept && !androidKept
        }
        for token in [ios, android, backIOS] {
            let kept = try await rig.hasDevice(token, app: app.mobileAppId)
            XCTAssertTrue(kept, "\(token) is kept")
        }
        let unregistered = try await rig.outcomes(delivery, app: app, outcome: "unregistered")
        XCTAssertEqual(Set(unregistered.compactMap { $0["deviceToken"] as? String }), [deadIOS, backIOS, deadAndroid])
        XCTAssertEqual(Set(unregistered.compactMap { $0["reason"] as? String }), ["Unregistered", "UNREGISTERED"])
    }

    func testRefusedCredentialsPauseOnlyTheirAppUntilReplaced() async throws {
        let rig = try await DeliveryRig.start()
        self.rig = rig
        let stack = rig.stack
        try await rig.startSender()
        let good = try await stack.createApp(name: "good")
        let refused = try await stack.createApp(name: "refused")
        let bare = try await stack.createApp(name: "no credentials")
        try await rig.setAPNs(app: good.mobileAppId, keyId: "KEYAAAAAA1")
        // A key Apple does not know for the second app's team: every push is refused.
        try await rig.setAPNs(app: refused.mobileAppId, keyId: "KEYZZZZZZ9", bundleId: "com.example.b")
        let (goodToken, busyToken, refusedToken, bareToken) = (Tokens.apns(1, salt: 0xB), Tokens.apns(2, salt: 0xB),
                                                               Tokens.apns(3, salt: 0xB), Tokens.apns(4, salt: 0xB))
        try await stack.registerKF5([("u", goodToken, "IOS"), ("v", busyToken, "IOS")], app: good)
        try await stack.registerKF5([("u", refusedToken, "IOS")], app: refused)
        try await stack.registerKF5([("u", bareToken, "IOS")], app: bare)
        try await stack.waitForDevices(2, app: good.mobileAppId)
        try await stack.waitForDevices(1, app: refused.mobileAppId)
        try await stack.waitForDevices(1, app: bare.mobileAppId)
        rig.apns.setBehaviour(.tooManyRequests(retryAfterSeconds: 2), forNext: 1, requestsTo: busyToken)

        let refusedDelivery = try await stack.send(["userIds": ["u"], "title": "held"], app: refused)
        try await eventually("the refused app's first attempt") { !rig.apns.requests(for: refusedToken).isEmpty }
        try await eventually("the refused app paused") { try await rig.senderMetric("pushline_sender_paused_apps") == 1 }

        // The other apps go on meanwhile.
        let goodDelivery = try await stack.send(["userIds": ["u", "v"], "title": "goes"], app: good)
        let bareDelivery = try await stack.send(["userIds": ["u"], "title": "nowhere"], app: bare)
        try await rig.waitForStats(goodDelivery, app: good, "the good app's pushes delivered") { $0.delivered == 2 }
        let bareStats = try await rig.waitForStats(bareDelivery, app: bare, "the app without credentials reported") { $0.failed == 1 }
        XCTAssertEqual(bareStats.delivered, 0)
        let bareOutcome = try await rig.outcomes(bareDelivery, app: bare)
        XCTAssertTrue((bareOutcome.first?["reason"] as? String)?.hasPrefix("NoCredentials") == true, "\(bareOutcome)")
        XCTAssertTrue(rig.apns.requests(for: bareToken).isEmpty, "nothing is sent without credentials")

        // Retry-After honoured: the second attempt came no sooner than the two seconds asked.
        let busy = rig.apns.requests(for: busyToken)
        XCTAssertEqual(busy.map(\.status), [429, 200])
        if busy.count == 2 { XCTAssertGreaterThanOrEqual(busy[1].at - busy[0].at, .seconds(2)) }

        // Paused: not a second attempt, no outcome, the device kept.
        XCTAssertEqual(rig.apns.requests(for: refusedToken).map(\.status), [403])
        let heldStats = try await stack.stats(refusedDelivery, app: refused)
        XCTAssertEqual(heldStats.map { $0.delivered + $0.failed + $0.unregistered }, 0)
        let refusedKept = try await rig.hasDevice(refusedToken, app: refused.mobileAppId)
        XCTAssertTrue(refusedKept, "a credentials error never retires a device")

        // Replaced credentials resume the held push.
        try await rig.setAPNs(app: refused.mobileAppId, keyId: "KEYBBBBBB1")
        try await rig.waitForStats(refusedDelivery, app: refused, "the held push delivered") { $0.delivered == 1 }
        try await eventually("the pause lifted") { try await rig.senderMetric("pushline_sender_paused_apps") == 0 }
        XCTAssertEqual(rig.apns.requests(for: refusedToken).map(\.status), [403, 200])
    }
}
