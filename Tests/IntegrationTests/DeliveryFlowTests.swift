import Contracts
import Foundation
import Sender
import TestSupport
import WireCodec
import XCTest

/// Delivery end to end on the real stack: ingest, processor and `pushline-sender` executables,
/// a Tansu broker, SQLite, and the mock APNs and FCM servers over HTTP/2 with TLS.
final class DeliveryFlowTests: XCTestCase {
    private var rig: DeliveryRig?
    /// Processors started beside the stack's.
    private var extraProcessors: [ServiceProcess] = []

    override func tearDown() async throws {
        for processor in extraProcessors { _ = try? await processor.stop() }
        extraProcessors = []
        await rig?.stop()
        rig = nil
    }

    private static func devices(_ prefix: UInt32, _ count: Int) -> [String] {
        (0..<count).map { Tokens.apns($0, salt: prefix) }
    }

    func testPushesReachBothPlatformsAndDeadTokensAreRetiredUnlessRegisteredAgain() async throws {
        try await bothPlatforms(store: nil)
    }

    func testPushesReachBothPlatformsAndDeadTokensAreRetiredOnPostgreSQL() async throws {
        let server = try await PostgresServer.shared()
        let database = "pushline_it_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(12)
        let store = try await server.createDatabase(database)
        do {
            try await bothPlatforms(store: store)
        } catch {
            await rig?.stop()
            rig = nil
            try? await server.dropDatabase(database)
            throw error
        }
        await rig?.stop()
        rig = nil
        try await server.dropDatabase(database)
    }

    /// The same with every app in two parts (docs/ARCHITECTURE.md#one-app-in-parts) and two
    /// processors: ingest and the sender write each command to its parts, the processors share
    /// the app, and the pushes, their outcomes and the statistics are those of an app in one part.
    func testPushesReachBothPlatformsAndDeadTokensAreRetiredWithTheAppInTwoPartsOverTwoProcessors() async throws {
        try await bothPlatforms(store: nil, environment: ["PUSHLINE_APP_PARTS": "2"], processors: 2)
        let indexes = try await XCTUnwrap(rig?.stack).outboundRecords().map { record in
            try XCTUnwrap(Int(record.record.messageId.prefix { $0 != "-" }))
        }
        XCTAssertEqual(Set(indexes.map(AppParts.part(ofMessageIndex:))), [0, 1], "both parts sent: \(indexes)")
    }

    private func bothPlatforms(store: String?, environment: [String: String] = [:], processors: Int = 1) async throws {
        let rig = try await DeliveryRig.start(store: store, environment: environment)
        self.rig = rig
        let stack = rig.stack
        for _ in 1..<processors {
            let port = TestBroker.freePort()
            let processor = stack.makeProcessor(environment: ["PUSHLINE_PROCESSOR_PORT": "\(port)"])
            extraProcessors.append(processor)
            try processor.start()
            try await processor.waitHealthy("http://127.0.0.1:\(port)/health")
        }
        try await rig.startSender(environment: ["PUSHLINE_LOG_LEVEL": "debug"].merging(environment) { $1 })
        let app = try await stack.createApp(name: "both platforms")
        try await rig.setAPNs(app: app.mobileAppId, keyId: "KEYAAAAAA1")
        try await rig.setFCM(app: app.mobileAppId)

        let (ios, android) = (Tokens.apns(1, salt: 0xA), Tokens.fcm(1, salt: 0xA))
        let (deadIOS, backIOS, deadAndroid) = (Tokens.apns(2, salt: 0xA), Tokens.apns(3, salt: 0xA), Tokens.fcm(4, salt: 0xA))
        try await stack.registerKF5([("alice", ios, "IOS"), ("alice", android, "ANDROID"), ("bob", deadIOS, "IOS"),
                                     ("carol", backIOS, "IOS"), ("dave", deadAndroid, "ANDROID")], app: app)
        let registered = [("alice", ios), ("alice", android), ("bob", deadIOS), ("carol", backIOS), ("dave", deadAndroid)]
        try await eventually("devices projected") {
            for (user, token) in registered where !(try await rig.hasDevice(token, user: user, app: app.mobileAppId)) { return false }
            return true
        }
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
            let (iosKept, androidKept) = (try await rig.hasDevice(deadIOS, user: "bob", app: app.mobileAppId),
                                          try await rig.hasDevice(deadAndroid, user: "dave", app: app.mobileAppId))
            return !iosKept && !androidKept
        }
        for (user, token) in [("alice", ios), ("alice", android), ("carol", backIOS)] {
            let kept = try await rig.hasDevice(token, user: user, app: app.mobileAppId)
            XCTAssertTrue(kept, "\(token) is kept")
        }
        let unregistered = try await rig.outcomes(delivery, app: app, outcome: "unregistered")
        XCTAssertEqual(Set(unregistered.compactMap { $0["deviceToken"] as? String }), [deadIOS, backIOS, deadAndroid])
        XCTAssertEqual(Set(unregistered.compactMap { $0["reason"] as? String }), ["Unregistered", "UNREGISTERED"])

        // A provider token Apple calls expired, an access token Google stopped honouring: each
        // is replaced once, the push goes, and the app is not paused.
        rig.apns.setBehaviour(.status(403, reason: "ExpiredProviderToken"), forNext: 1, requestsTo: ios)
        rig.fcm.revokeAccessTokens()
        let again = try await stack.send(["userIds": ["alice"], "title": "again", "timeToLive": 600, "collapseKey": "greeting"], app: app)
        try await rig.waitForStats(again, app: app, "the second pushes delivered") { $0.delivered == 2 }
        XCTAssertEqual(rig.apns.requests(for: ios).map(\.status), [200, 403, 200])
        // The send's own options reach both providers.
        let records = try await stack.outboundRecords().map(\.record)
        let expiresAt = try XCTUnwrap(records.first { $0.deliveryId == again && $0.deviceToken == ios }?.expiresAt)
        let last = try XCTUnwrap(rig.apns.requests(for: ios).last)
        XCTAssertEqual(last.headers["apns-collapse-id"], "greeting")
        XCTAssertEqual(last.headers["apns-expiration"], String(expiresAt / 1000))
        let lastMessage = try XCTUnwrap(rig.fcm.requests(for: android).last?.json?["message"]?["android"])
        XCTAssertEqual(lastMessage["collapse_key"], .string("greeting"))
        guard case .string(let ttl)? = lastMessage["ttl"], let seconds = Int(ttl.dropLast()) else { return XCTFail("no ttl: \(lastMessage)") }
        XCTAssertTrue((1...600).contains(seconds), "what is left of the ten minutes: \(ttl)")
        XCTAssertEqual(rig.apns.distinctJWTs, 2, "a new provider token after ExpiredProviderToken")
        XCTAssertEqual(rig.fcm.issuedAccessTokenCount, 2, "a new access token after the 401")
        let paused = try await rig.senderMetric("pushline_sender_paused_apps")
        XCTAssertEqual(paused, 0)

        let leaks = try await rig.secretsFoundInSenderOutputs()
        XCTAssertEqual(leaks, [], "the keys never leave the sender's memory in clear")
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
        let refusedKept = try await rig.hasDevice(refusedToken, user: "u", app: refused.mobileAppId)
        XCTAssertTrue(refusedKept, "a credentials error never retires a device")

        // A sender stopped while it holds a paused push stops at once and commits what it
        // finished: its successor repeats only the held push.
        let exit = try await rig.senders[0].process.stop()
        XCTAssertEqual(exit, 0, "stopped cleanly")
        try await rig.startSender()
        try await eventually("the successor tried the unfinished push", timeout: .seconds(60)) {
            rig.apns.requests(for: refusedToken).count == 2
        }
        // Finished pushes are repeated only behind the held one in its partition (committed up to it).
        let positions = try await rig.outboundPositions()
        let held = try XCTUnwrap(positions[refusedToken]?.first)
        for token in [goodToken, busyToken] {
            let behindHeld = positions[token]?.contains { $0.partition == held.partition && $0.offset > held.offset } ?? false
            let pushes = rig.apns.requests(for: token).filter { $0.status == 200 }.count
            XCTAssertEqual(pushes, behindHeld ? 2 : 1, "\(token): behind the held push: \(behindHeld)")
        }
        try await eventually("the successor paused the app") { try await rig.senderMetric("pushline_sender_paused_apps", sender: 1) == 1 }

        // Replaced credentials resume the held push.
        try await rig.setAPNs(app: refused.mobileAppId, keyId: "KEYBBBBBB1")
        try await rig.waitForStats(refusedDelivery, app: refused, "the held push delivered") { $0.delivered == 1 }
        try await eventually("the pause lifted") { try await rig.senderMetric("pushline_sender_paused_apps", sender: 1) == 0 }
        XCTAssertEqual(rig.apns.requests(for: refusedToken).map(\.status), [403, 403, 200])
    }

    func testTwoSendersSplitThePartitionsAndOneKilledMidStreamLosesNoPush() async throws {
        let rig = try await DeliveryRig.start()
        self.rig = rig
        let stack = rig.stack
        // Slow answers keep many pushes in the air when the first sender dies: each lane holds
        // 64 streams, so the first sender's few hundred records take seconds.
        rig.apns.responseDelay = .seconds(1)
        rig.fcm.responseDelay = .seconds(1)
        try await rig.startSender()
        try await rig.startSender()
        try await eventually("both senders own partitions", timeout: .seconds(60)) {
            let (a, b) = (try await rig.senderMetric("pushline_sender_partitions", sender: 0),
                          try await rig.senderMetric("pushline_sender_partitions", sender: 1))
            return a > 0 && b > 0 && a + b == 6
        }
        let app = try await stack.createApp(name: "failover")
        try await rig.setAPNs(app: app.mobileAppId, keyId: "KEYAAAAAA1")
        try await rig.setFCM(app: app.mobileAppId)
        let tokens = try await stack.registerDevices(600, app: app)

        let delivery = try await stack.send(["userIds": (0..<600).map { "u-\($0)" }, "title": "everyone"], app: app)
        // Killed once it has delivered some of its pushes (so it was pushing), with more in the air.
        try await eventually("the first sender delivering", timeout: .seconds(60)) {
            let delivered = try await rig.senderMetric("pushline_sender_attempts_total{platform=\"ios\",answer=\"delivered\"}", sender: 0)
                + rig.senderMetric("pushline_sender_attempts_total{platform=\"android\",answer=\"delivered\"}", sender: 0)
            return delivered > 0
        }
        _ = try await rig.senders[0].process.stop(signal: SIGKILL)

        try await rig.waitForStats(delivery, app: app, timeout: .seconds(120), "every push reported once the survivor took over") {
            $0.delivered == 600
        }
        let survivor = try await rig.senderMetric("pushline_sender_partitions", sender: 1)
        XCTAssertEqual(survivor, 6, "the survivor owns every partition")

        // No push lost; the ones repeated are the same push to Apple.
        var apnsRepeats = 0
        for token in tokens where token.hasPrefix("fcm:") {
            XCTAssertFalse(rig.fcm.requests(for: token).isEmpty, "\(token) got its message")
        }
        for token in tokens where !token.hasPrefix("fcm:") {
            let ids = rig.apns.requests(for: token).map(\.apnsId)
            XCTAssertFalse(ids.isEmpty, "\(token) got its push")
            XCTAssertLessThanOrEqual(Set(ids).count, 1, "every repeat of \(token)'s push carries one apns-id")
            if ids.count > 1 { apnsRepeats += 1 }
        }
        XCTAssertGreaterThan(apnsRepeats, 0, "pushes in the air when the sender died were repeated")
        let outcomes = try await stack.sqlite("SELECT COUNT(*) FROM delivery_outcomes WHERE delivery_id = '\(delivery.uuidString.lowercased())'")
        XCTAssertEqual(outcomes, ["600"], "one outcome per device, whatever was repeated")
    }

    func testEachProviderAnswerEndsAsDocumented() async throws {
        let rig = try await DeliveryRig.start()
        self.rig = rig
        let stack = rig.stack
        // Three seconds to live: a push whose provider keeps failing expires within the test.
        try await rig.startSender(environment: ["PUSHLINE_SENDER_EXPIRY_MS": "3000"])
        let app = try await stack.createApp(name: "answers")
        try await rig.setAPNs(app: app.mobileAppId, keyId: "KEYAAAAAA1")
        try await rig.setFCM(app: app.mobileAppId)
        let ios = (0..<4).map { Tokens.apns($0, salt: 0xC) }
        let android = (0..<3).map { Tokens.fcm($0, salt: 0xC) }
        try await stack.registerKF5(ios.enumerated().map { ("i\($0.offset)", $0.element, "IOS") }
                                    + android.enumerated().map { ("a\($0.offset)", $0.element, "ANDROID") }, app: app)
        try await stack.waitForDevices(7, app: app.mobileAppId)
        rig.apns.setBehaviour(.status(400, reason: "BadDeviceToken"), for: ios[0])
        rig.apns.setBehaviour(.status(400, reason: "BadMessageId"), for: ios[1])
        rig.apns.setBehaviour(.status(500, reason: "InternalServerError"), forNext: 2, requestsTo: ios[2])
        rig.apns.setBehaviour(.status(503, reason: "ServiceUnavailable"), for: ios[3])
        rig.fcm.setBehaviour(.invalidToken, for: android[0])
        rig.fcm.setBehaviour(.status(403, status: "PERMISSION_DENIED", errorCode: "SENDER_ID_MISMATCH"), for: android[1])
        rig.fcm.setBehaviour(.status(503, status: "UNAVAILABLE", errorCode: "UNAVAILABLE"), forNext: 1, requestsTo: android[2])

        let delivery = try await stack.send(["userIds": ["i0", "i1", "i2", "i3", "a0", "a1", "a2"], "title": "answers"], app: app)
        let stats = try await rig.waitForStats(delivery, app: app, "every push ended") {
            $0.delivered + $0.failed + $0.unregistered + $0.expired == 7
        }
        XCTAssertEqual([stats.delivered, stats.failed, stats.unregistered, stats.expired], [2, 2, 2, 1])
        var ended: [String: (outcome: String, reason: String?)] = [:]
        for row in try await rig.outcomes(delivery, app: app) {
            if let token = row["deviceToken"] as? String, let outcome = row["outcome"] as? String {
                ended[token] = (outcome, row["reason"] as? String)
            }
        }
        XCTAssertEqual(ended[ios[0]]?.outcome, "unregistered", "400 BadDeviceToken: the token is dead")
        XCTAssertEqual(ended[ios[1]]?.outcome, "failed", "another 400 is final")
        XCTAssertEqual(ended[ios[1]]?.reason, "BadMessageId")
        XCTAssertEqual(ended[ios[2]]?.outcome, "delivered", "5xx retried")
        XCTAssertEqual(ended[ios[3]]?.outcome, "expired", "retried until the push expired")
        XCTAssertEqual(ended[ios[3]]?.reason, "ServiceUnavailable", "the last answer's reason")
        XCTAssertEqual(ended[android[0]]?.outcome, "unregistered", "INVALID_ARGUMENT about the token")
        XCTAssertEqual(ended[android[1]]?.outcome, "failed", "SENDER_ID_MISMATCH is the token's project, not the account")
        XCTAssertEqual(ended[android[2]]?.outcome, "delivered", "503 retried")
        XCTAssertEqual(rig.apns.requests(for: ios[1]).count, 1, "a final answer is not retried")
        XCTAssertEqual(rig.apns.requests(for: ios[2]).map(\.status), [500, 500, 200])
        XCTAssertGreaterThan(rig.apns.requests(for: ios[3]).count, 1)
        let pausedNow = try await rig.senderMetric("pushline_sender_paused_apps")
        XCTAssertEqual(pausedNow, 0, "none of these is the credentials' fault")
    }

    func testAPushThatExpiredBeforeTheSenderReadItIsNeverHandedOverAndCountsAsExpired() async throws {
        let rig = try await DeliveryRig.start()
        self.rig = rig
        let stack = rig.stack
        let app = try await stack.createApp(name: "stale")
        try await rig.setAPNs(app: app.mobileAppId, keyId: "KEYAAAAAA1")
        try await rig.setFCM(app: app.mobileAppId)
        let ios = Tokens.apns(1, salt: 0xE)
        let android = Tokens.fcm(1, salt: 0xE)
        try await stack.registerKF5([("u", ios, "IOS"), ("u", android, "ANDROID")], app: app)
        try await stack.waitForDevices(2, app: app.mobileAppId)
        // No sender runs yet: the pushes wait on the outbound topic past their one second.
        let stale = try await stack.send(["userIds": ["u"], "title": "flash sale", "timeToLive": 1], app: app)
        let records = try await stack.waitForOutbound(2).map(\.record).filter { $0.deliveryId == stale }
        let expiresAt = try XCTUnwrap(records.compactMap(\.expiresAt).max())
        while Date().timeIntervalSince1970 * 1000 <= Double(expiresAt) { try await Task.sleep(for: .milliseconds(100)) }
        try await rig.startSender()
        let fresh = try await stack.send(["userIds": ["u"], "title": "still on"], app: app)

        let stats = try await rig.waitForStats(stale, app: app, "both pushes ended") { $0.delivered + $0.failed + $0.unregistered + $0.expired == 2 }
        XCTAssertEqual([stats.delivered, stats.failed, stats.unregistered, stats.expired], [0, 0, 0, 2])
        let ended = try await rig.outcomes(stale, app: app, outcome: "expired")
        XCTAssertEqual(Set(ended.compactMap { $0["deviceToken"] as? String }), [ios, android])
        XCTAssertTrue(ended.allSatisfy { $0["reason"] == nil }, "no provider was asked: \(ended)")
        try await rig.waitForStats(fresh, app: app, "the later send delivered") { $0.delivered == 2 }
        XCTAssertEqual(rig.apns.requests(for: ios).count, 1, "only the later push reached APNs")
        XCTAssertEqual(rig.fcm.requests(for: android).count, 1, "only the later push reached FCM")
        let expiredPushes = try await rig.senderMetric("pushline_sender_pushes_total{platform=\"ios\",outcome=\"expired\"}")
        XCTAssertEqual(expiredPushes, 1)
    }

    func testHealthSaysSoWhenNoPushFinishesAndRecoversWhenOneDoes() async throws {
        let rig = try await DeliveryRig.start()
        self.rig = rig
        let stack = rig.stack
        try await rig.startSender(environment: ["PUSHLINE_STALL_TIMEOUT_MS": "2000"])
        let health = "http://127.0.0.1:\(rig.senders[0].port)/health"
        let app = try await stack.createApp(name: "stuck provider")
        try await rig.setAPNs(app: app.mobileAppId, keyId: "KEYAAAAAA1")
        let token = Tokens.apns(1, salt: 0xD)
        try await stack.registerKF5([("u", token, "IOS")], app: app)
        try await stack.waitForDevices(1, app: app.mobileAppId)
        let idle = try await HTTPClientHelpers.get(health)
        XCTAssertEqual(idle.status, 200, "nothing to send is not a stall: \(idle.text)")

        rig.apns.responseDelay = .seconds(8)
        let delivery = try await stack.send(["userIds": ["u"], "title": "slow"], app: app)
        var stalled: HTTPClientHelpers.Answer?
        try await eventually("the sender reports the stall", timeout: .seconds(20)) {
            stalled = try await HTTPClientHelpers.get(health)
            return stalled?.status == 503
        }
        XCTAssertTrue(stalled?.text.contains("no push finished") == true, stalled?.text ?? "")
        rig.apns.responseDelay = nil
        try await rig.waitForStats(delivery, app: app, "the slow push delivered in the end") { $0.delivered == 1 }
        try await eventually("healthy again") { try await HTTPClientHelpers.get(health).status == 200 }
    }

    func testAnFCMAccountGoogleRefusesPausesItsAppUntilReplaced() async throws {
        let rig = try await DeliveryRig.start()
        self.rig = rig
        let stack = rig.stack
        try await rig.startSender()
        let app = try await stack.createApp(name: "unknown account")
        try await rig.setFCM(app: app.mobileAppId, account: TestPushKeys(projectId: "pushline-test-1"))
        let token = Tokens.fcm(1, salt: 0xE)
        try await stack.registerKF5([("u", token, "ANDROID")], app: app)
        try await stack.waitForDevices(1, app: app.mobileAppId)

        let delivery = try await stack.send(["userIds": ["u"], "title": "held"], app: app)
        try await eventually("the app paused") { try await rig.senderMetric("pushline_sender_paused_apps") == 1 }
        XCTAssertEqual(rig.fcm.tokenRequests.map(\.status).filter { $0 == 200 }, [], "the exchange was refused")
        XCTAssertTrue(rig.fcm.requests(for: token).isEmpty, "nothing sent without an access token")
        let held = try await stack.stats(delivery, app: app)
        XCTAssertEqual(held.map { $0.delivered + $0.failed + $0.unregistered }, 0, "held, not failed")

        try await rig.setFCM(app: app.mobileAppId)
        try await rig.waitForStats(delivery, app: app, "the held message delivered") { $0.delivered == 1 }
        XCTAssertEqual(rig.fcm.requests(for: token).map(\.status), [200])
        try await eventually("the pause lifted") { try await rig.senderMetric("pushline_sender_paused_apps") == 0 }
    }
}
