import Contracts
import Foundation
import Projections
import TestSupport
import XCTest

/// The device registration API end to end: real broker, real ingest and processor executables, real
/// SQLite, a real HTTP server receiving the status webhooks.
final class DeviceRegistrationTests: XCTestCase {
    typealias API = DeviceRegistrationAPI
    private var stack: PushlineStack!
    private var receiver: WebhookReceiver!

    override func setUp() async throws {
        stack = try await PushlineStack.start()
        receiver = WebhookReceiver()
        try await receiver.start()
    }

    override func tearDown() async throws {
        await receiver?.stop()
        await stack?.stop()
    }

    private let tracked = [API.trackRegistrationHeader: "true"]

    func testSingleAndBatchRegistrationsForBothPlatformsAreDecidedAndAnsweredInRequestOrder() async throws {
        let app = try await stack.createApp()
        let org = app.orgId, appId = app.mobileAppId.uuidString
        // Single, tracked, iOS.
        let single = try await HTTPClientHelpers.post(stack.registrationURL(org: org, "devices"), json: API.Registration(
            MobileAppId: appId, UserId: "user-1", ApiToken: app.apiToken, ApnsDeviceToken: Tokens.apns(1)), headers: tracked)
        XCTAssertEqual(single.status, 202)
        let singleId = try single.decode(API.RegistrationAccepted.self).RegistrationRequestId
        // Single, untracked, Android: 202 with an empty body.
        let untracked = try await HTTPClientHelpers.post(stack.registrationURL(org: org, "devices"), json: API.Registration(
            MobileAppId: appId, UserId: "user-1", ApiToken: app.apiToken, FcmDeviceToken: Tokens.fcm(1)))
        XCTAssertEqual(untracked.status, 202)
        XCTAssertTrue(untracked.body.isEmpty)
        // Batch, tracked, mixed platforms.
        let batch = [
            API.Registration(MobileAppId: appId, UserId: "user-2", ApiToken: app.apiToken, ApnsDeviceToken: Tokens.apns(2)),
            API.Registration(MobileAppId: appId, UserId: "user-2", ApiToken: app.apiToken, FcmDeviceToken: Tokens.fcm(2)),
            API.Registration(MobileAppId: appId, UserId: "user-3", ApiToken: app.apiToken, FcmDeviceToken: "not a valid fcm token"),
        ]
        let batchAnswer = try await HTTPClientHelpers.post(stack.registrationURL(org: org, "devices/batch"), json: batch, headers: tracked)
        XCTAssertEqual(batchAnswer.status, 202)
        let batchIds = try batchAnswer.decode([API.RegistrationAccepted].self).map(\.RegistrationRequestId)
        XCTAssertEqual(batchIds.count, 3)
        XCTAssertEqual(Set(batchIds).count, 3)
        // Untracked batch: empty body.
        let untrackedBatch = try await HTTPClientHelpers.post(stack.registrationURL(org: org, "devices/batch"), json: [
            API.Registration(MobileAppId: appId, UserId: "user-4", ApiToken: app.apiToken, ApnsDeviceToken: Tokens.apns(4)),
        ])
        XCTAssertEqual(untrackedBatch.status, 202)
        XCTAssertTrue(untrackedBatch.body.isEmpty)

        // The status answer follows the order of the ids asked for, whatever it is.
        let unknown = UUID()
        let ids = [batchIds[2], unknown, singleId, batchIds[0], batchIds[1]]
        let statuses = try await stack.decidedStatuses(org: org, app: app.mobileAppId, token: app.apiToken,
                                                       ids: [batchIds[2], singleId, batchIds[0], batchIds[1]])
        XCTAssertEqual(statuses.map(\.Status), [.Failed, .Success, .Success, .Success])
        XCTAssertEqual(statuses[0].FailureReason, .DryRunSendingFailed)
        let withUnknown = try await stack.statuses(org: org, app: app.mobileAppId, token: app.apiToken, ids: ids)
        XCTAssertEqual(withUnknown.map(\.Status), [.Failed, .Pending, .Success, .Success, .Success])

        // The untracked registrations were applied all the same.
        let store = try await stack.openStore()
        try await eventually("untracked devices stored") {
            try await store.devices(app: app.mobileAppId, user: "user-4").count == 1
        }
        let user1 = try await store.devices(app: app.mobileAppId, user: "user-1")
        XCTAssertEqual(Set(user1.map(\.platform)), [.ios, .android])
        XCTAssertEqual(Set(user1.map(\.deviceToken)), [Tokens.apns(1), Tokens.fcm(1)])
    }

    func testEveryFailureReasonIsDecided() async throws {
        let app = try await stack.createApp()
        let org = app.orgId, appId = app.mobileAppId.uuidString
        func register(_ r: API.Registration) async throws -> UUID {
            let a = try await HTTPClientHelpers.post(stack.registrationURL(org: org, "devices"), json: r, headers: tracked)
            XCTAssertEqual(a.status, 202, a.text)
            return try a.decode(API.RegistrationAccepted.self).RegistrationRequestId
        }
        let first = try await register(.init(MobileAppId: appId, UserId: "u", ApiToken: app.apiToken, ApnsDeviceToken: Tokens.apns(7)))
        _ = try await stack.decidedStatuses(org: org, app: app.mobileAppId, token: app.apiToken, ids: [first])
        let duplicate = try await register(.init(MobileAppId: appId, UserId: "u", ApiToken: app.apiToken, ApnsDeviceToken: Tokens.apns(7)))
        let tooLong = try await register(.init(MobileAppId: appId, UserId: "u", ApiToken: app.apiToken,
                                               FcmDeviceToken: String(repeating: "a", count: 4097)))
        let badApns = try await register(.init(MobileAppId: appId, UserId: "u", ApiToken: app.apiToken, ApnsDeviceToken: "abc"))
        let shortFcm = try await register(.init(MobileAppId: appId, UserId: "u", ApiToken: app.apiToken, FcmDeviceToken: "short"))

        // The store refuses one device write (a real SQLite trigger), as a throttled or broken
        // database would: the outcome is FailedToStoreDevice and the stream goes on.
        let store = try await stack.openStore()
        try await stack.sqlite("CREATE TRIGGER refuse_device BEFORE INSERT ON devices WHEN NEW.device_token = '\(Tokens.apns(666))' "
                         + "BEGIN SELECT RAISE(ABORT, 'refused by test'); END;")
        let refused = try await register(.init(MobileAppId: appId, UserId: "u", ApiToken: app.apiToken, ApnsDeviceToken: Tokens.apns(666)))
        let after = try await register(.init(MobileAppId: appId, UserId: "u", ApiToken: app.apiToken, ApnsDeviceToken: Tokens.apns(667)))

        let statuses = try await stack.decidedStatuses(org: org, app: app.mobileAppId, token: app.apiToken,
                                                       ids: [duplicate, tooLong, badApns, shortFcm, refused, after])
        XCTAssertEqual(statuses.map(\.FailureReason), [.DuplicateExists, .DeviceTokenTooLong, .DryRunSendingFailed,
                                                       .DryRunSendingFailed, .FailedToStoreDevice, nil], stack.logs())
        XCTAssertEqual(statuses.last?.Status, .Success)
        let refusedDevice = try await store.device(DeviceKey(appId: app.mobileAppId, deviceToken: Tokens.apns(666)))
        XCTAssertNil(refusedDevice)
    }

    func testRegisteringATokenHeldByAnotherUserMovesItToTheNewUser() async throws {
        let app = try await stack.createApp()
        let org = app.orgId, appId = app.mobileAppId.uuidString
        let token = Tokens.fcm(42)
        var ids: [UUID] = []
        for user in ["alice", "bob"] {
            let a = try await HTTPClientHelpers.post(stack.registrationURL(org: org, "devices"), json: API.Registration(
                MobileAppId: appId, UserId: user, ApiToken: app.apiToken, FcmDeviceToken: token), headers: tracked)
            ids.append(try a.decode(API.RegistrationAccepted.self).RegistrationRequestId)
            // Different users' commands travel on different partitions: wait so the order is known.
            _ = try await stack.decidedStatuses(org: org, app: app.mobileAppId, token: app.apiToken, ids: [ids.last!])
        }
        let statuses = try await stack.statuses(org: org, app: app.mobileAppId, token: app.apiToken, ids: ids)
        XCTAssertEqual(statuses.map(\.Status), [.Success, .Success])
        let store = try await stack.openStore()
        let device = try await store.device(DeviceKey(appId: app.mobileAppId, deviceToken: token))
        XCTAssertEqual(device?.userId, "bob")
        XCTAssertEqual(device?.version, 2)
        let alices = try await store.devices(app: app.mobileAppId, user: "alice")
        XCTAssertTrue(alices.isEmpty)
    }

    func testStatusWebhookIsSignedAndCarriesTheRequestedHeaders() async throws {
        let app = try await stack.createApp()
        let org = app.orgId, appId = app.mobileAppId.uuidString
        let callbackURL = "\(receiver.baseURL)/hooks/registration?app=\(appId)"
        let headers = [
            API.callbackURLHeader: callbackURL,
            API.callbackURLHeadersHeader: #"{"X-App-Key":"secret-1","X-Trace":"abc"}"#,
        ]
        let ok = try await HTTPClientHelpers.post(stack.registrationURL(org: org, "devices"), json: API.Registration(
            MobileAppId: appId, UserId: "u1", ApiToken: app.apiToken, ApnsDeviceToken: Tokens.apns(100)), headers: headers)
        XCTAssertEqual(ok.status, 202)
        try await receiver.waitFor(count: 1)
        // The other accepted header name works too, and failures are reported with their reason.
        let failing = try await HTTPClientHelpers.post(stack.registrationURL(org: org, "devices"), json: API.Registration(
            MobileAppId: appId, UserId: "u1", ApiToken: app.apiToken, ApnsDeviceToken: Tokens.apns(100)),
            headers: [API.statusCallbackURLHeader: callbackURL])
        XCTAssertEqual(failing.status, 202)
        try await receiver.waitFor(count: 2)

        let requests = receiver.requests
        let expectedSignature = ApiTokens.webhookSignature(apiToken: app.apiToken, callbackURL: callbackURL)
        let first = try JSONDecoder().decode(API.StatusWebhook.self, from: requests[0].body)
        XCTAssertEqual(first, API.StatusWebhook(Status: .Success, Signature: expectedSignature, FailureReason: nil))
        XCTAssertEqual(requests[0].path, "/hooks/registration")
        XCTAssertEqual(requests[0].headers["x-app-key"], "secret-1")
        XCTAssertEqual(requests[0].headers["x-trace"], "abc")
        XCTAssertEqual(requests[0].headers["content-type"], "application/json")
        XCTAssertNotNil(requests[0].headers[WebhookHeaders.webhookId])
        let second = try JSONDecoder().decode(API.StatusWebhook.self, from: requests[1].body)
        XCTAssertEqual(second, API.StatusWebhook(Status: .Failed, Signature: expectedSignature, FailureReason: .DuplicateExists))
        XCTAssertNil(requests[1].headers["x-app-key"])
        XCTAssertNotEqual(requests[0].headers[WebhookHeaders.webhookId], requests[1].headers[WebhookHeaders.webhookId])
        // One record per attempt on the audit topic.
        try await eventually("two webhook audit records") { try await self.stack.countRecords(topic: self.stack.topics.webhooks) == 2 }
    }

    /// A receiver's URL may carry a credential in its userinfo or query string: the webhooks
    /// topic and the services' logs show those parts redacted, while the receivers are still called.
    func testNoCredentialInAWebhookOrCallbackURLReachesTheAuditTopicOrTheLogs() async throws {
        let app = try await stack.createApp()
        let secret = "planted-\(UUID().uuidString)"
        let statusURL = "\(receiver.baseURL)/hooks/registration?token=\(secret)-query"
        let callbackURL = receiver.baseURL.replacingOccurrences(of: "http://", with: "http://hook-user:\(secret)-password@")
            + "/kf5?key=\(secret)-key&plain"
        let patch = try await HTTPClientHelpers.request(.PATCH, "\(stack.ingestURL)/admin/v1/apps/\(app.mobileAppId)",
                                                        body: try JSONEncoder().encode(["callbackUrl": callbackURL]),
                                                        headers: stack.adminHeaders)
        XCTAssertEqual(patch.status, 202, patch.text)
        let registered = try await HTTPClientHelpers.post(stack.registrationURL(org: app.orgId, "devices"), json: API.Registration(
            MobileAppId: app.mobileAppId.uuidString, UserId: "123", ApiToken: app.apiToken, ApnsDeviceToken: Tokens.apns(70)),
            headers: [API.callbackURLHeader: statusURL])
        XCTAssertEqual(registered.status, 202)
        try await receiver.waitFor(count: 1)
        _ = try await stack.send(["userId": "123", "title": "Ticket answered", "kind": "ticket", "ticketId": "123"], app: app)
        try await receiver.waitFor(count: 2)
        XCTAssertEqual(Set(receiver.requests.map(\.path)), ["/hooks/registration", "/kf5"])

        try await eventually("two webhook audit records") { try await self.stack.countRecords(topic: self.stack.topics.webhooks) == 2 }
        let audit = try await stack.broker.kcat(["-C", "-t", stack.topics.webhooks, "-o", "beginning", "-e", "-q", "-f", "%s\\n"])
        XCTAssertFalse(audit.contains(secret), audit)
        XCTAssertTrue(audit.contains("/hooks/redacted?token=redacted"), audit)
        XCTAssertTrue(audit.contains("//redacted@127.0.0.1"), audit)
        let logs = try FileManager.default.contentsOfDirectory(at: stack.directory, includingPropertiesForKeys: nil)
            .filter { $0.pathExtension == "log" }
        XCTAssertFalse(logs.isEmpty)
        for log in logs {
            let text = try String(contentsOf: log, encoding: .utf8)
            XCTAssertFalse(text.contains(secret), "\(log.lastPathComponent) holds the planted credential")
        }
    }

    func testInvalidApiTokenIsAcceptedButLeavesNoHistoryAndSendsNoWebhook() async throws {
        let app = try await stack.createApp()
        let org = app.orgId, appId = app.mobileAppId.uuidString
        var headers = tracked
        headers[API.callbackURLHeader] = "\(receiver.baseURL)/hook"
        let forged = try await HTTPClientHelpers.post(stack.registrationURL(org: org, "devices"), json: API.Registration(
            MobileAppId: appId, UserId: "victim", ApiToken: "forged-token", ApnsDeviceToken: Tokens.apns(5)), headers: headers)
        XCTAssertEqual(forged.status, 202)
        let forgedId = try forged.decode(API.RegistrationAccepted.self).RegistrationRequestId
        // A genuine registration after it is decided, so the forged one has been processed too
        // (same user, same partition, in order).
        let genuine = try await HTTPClientHelpers.post(stack.registrationURL(org: org, "devices"), json: API.Registration(
            MobileAppId: appId, UserId: "victim", ApiToken: app.apiToken, ApnsDeviceToken: Tokens.apns(6)), headers: headers)
        let genuineId = try genuine.decode(API.RegistrationAccepted.self).RegistrationRequestId
        _ = try await stack.decidedStatuses(org: org, app: app.mobileAppId, token: app.apiToken, ids: [genuineId])
        try await receiver.waitFor(count: 1)

        let statuses = try await stack.statuses(org: org, app: app.mobileAppId, token: app.apiToken, ids: [forgedId, genuineId])
        XCTAssertEqual(statuses.map(\.Status), [.Pending, .Success])
        XCTAssertEqual(receiver.requests.count, 1, "only the genuine registration's webhook")
        let store = try await stack.openStore()
        let forgedDevice = try await store.device(DeviceKey(appId: app.mobileAppId, deviceToken: Tokens.apns(5)))
        XCTAssertNil(forgedDevice)
        // The status route with a wrong token reveals nothing either.
        let probe = try await stack.statuses(org: org, app: app.mobileAppId, token: "forged-token", ids: [genuineId])
        XCTAssertEqual(probe.map(\.Status), [.Pending])
        // Ingest knew the token was not live: it wrote nothing and counted it.
        let metrics = try await HTTPClientHelpers.get("\(stack.ingestURL)/metrics").text
        XCTAssertTrue(metrics.contains("pushline_ingest_forged_commands_total 1"), metrics)
        let processorMetrics = try await HTTPClientHelpers.get("\(stack.processorURL)/metrics").text
        XCTAssertFalse(processorMetrics.contains("invalid-api-token"), "the processor never read the forged command")
    }

    func testCleanupRemovesOneDeviceOrAllOfTheUsersDevices() async throws {
        let app = try await stack.createApp()
        let org = app.orgId, appId = app.mobileAppId.uuidString
        let batch = [
            API.Registration(MobileAppId: appId, UserId: "a", ApiToken: app.apiToken, ApnsDeviceToken: Tokens.apns(11)),
            API.Registration(MobileAppId: appId, UserId: "a", ApiToken: app.apiToken, FcmDeviceToken: Tokens.fcm(11)),
            API.Registration(MobileAppId: appId, UserId: "b", ApiToken: app.apiToken, ApnsDeviceToken: Tokens.apns(12)),
            API.Registration(MobileAppId: appId, UserId: "b", ApiToken: app.apiToken, FcmDeviceToken: Tokens.fcm(12)),
            API.Registration(MobileAppId: appId, UserId: "c", ApiToken: app.apiToken, ApnsDeviceToken: Tokens.apns(13)),
            API.Registration(MobileAppId: appId, UserId: "c", ApiToken: app.apiToken, FcmDeviceToken: Tokens.fcm(13)),
        ]
        let ids = try await HTTPClientHelpers.post(stack.registrationURL(org: org, "devices/batch"), json: batch, headers: tracked)
            .decode([API.RegistrationAccepted].self).map(\.RegistrationRequestId)
        _ = try await stack.decidedStatuses(org: org, app: app.mobileAppId, token: app.apiToken, ids: ids)

        // Single with a token: only that device of "a" goes.
        var answer = try await HTTPClientHelpers.post(stack.registrationURL(org: org, "devices/cleanup"), json: API.Cleanup(
            MobileAppId: appId, ApiToken: app.apiToken, UserId: "a", DeviceToken: Tokens.apns(11)))
        XCTAssertEqual(answer.status, 202)
        // Batch given as one object, without a token: every device of "b" goes.
        answer = try await HTTPClientHelpers.post(stack.registrationURL(org: org, "devices/cleanup/batch"), json: API.Cleanup(
            MobileAppId: appId, ApiToken: app.apiToken, UserId: "b"))
        XCTAssertEqual(answer.status, 202)
        // Batch as an array: one of "c" by token, nothing for an unknown user, a forged token does nothing.
        answer = try await HTTPClientHelpers.post(stack.registrationURL(org: org, "devices/cleanup/batch"), json: [
            API.Cleanup(MobileAppId: appId, ApiToken: app.apiToken, UserId: "c", DeviceToken: Tokens.fcm(13)),
            API.Cleanup(MobileAppId: appId, ApiToken: app.apiToken, UserId: "nobody"),
            API.Cleanup(MobileAppId: appId, ApiToken: "forged", UserId: "c"),
        ])
        XCTAssertEqual(answer.status, 202)

        let store = try await stack.openStore()
        // All three, not only the last two sent: a cleanup's place in the event order is its
        // partition's event time, which ingest's progress mark (the newest command + 200 ms) on
        // that idle partition may have put after the other two.
        try await eventually("cleanups applied") {
            let a = try await store.devices(app: app.mobileAppId, user: "a")
            let b = try await store.devices(app: app.mobileAppId, user: "b")
            let c = try await store.devices(app: app.mobileAppId, user: "c")
            return a.count == 1 && b.isEmpty && c.count == 1
        }
        let a = try await store.devices(app: app.mobileAppId, user: "a")
        XCTAssertEqual(a.map(\.deviceToken), [Tokens.fcm(11)])
        let c = try await store.devices(app: app.mobileAppId, user: "c")
        XCTAssertEqual(c.map(\.deviceToken), [Tokens.apns(13)])
        // A cleaned device can be registered again (it is gone, not a duplicate).
        let again = try await HTTPClientHelpers.post(stack.registrationURL(org: org, "devices"), json: API.Registration(
            MobileAppId: appId, UserId: "a", ApiToken: app.apiToken, ApnsDeviceToken: Tokens.apns(11)), headers: tracked)
        let againId = try again.decode(API.RegistrationAccepted.self).RegistrationRequestId
        let status = try await stack.decidedStatuses(org: org, app: app.mobileAppId, token: app.apiToken, ids: [againId])
        XCTAssertEqual(status.map(\.Status), [.Success])
    }

    func testFailedWebhookIsAttemptedOnceByDefaultAndRetriedWhenTheAppAsksForRetries() async throws {
        receiver.answer(.internalServerError)
        let app = try await stack.createApp()
        let org = app.orgId, appId = app.mobileAppId.uuidString
        func register(_ n: Int) async throws {
            let a = try await HTTPClientHelpers.post(stack.registrationURL(org: org, "devices"), json: API.Registration(
                MobileAppId: appId, UserId: "u\(n)", ApiToken: app.apiToken, ApnsDeviceToken: Tokens.apns(n)),
                headers: [API.callbackURLHeader: "\(receiver.baseURL)/hook/\(n)"])
            XCTAssertEqual(a.status, 202)
        }
        try await register(1)
        try await eventually("first job failed") {
            try await self.stack.sqlite("SELECT state FROM outbox") == ["failed"]
        }
        let patch = try await HTTPClientHelpers.request(.PATCH, "\(stack.ingestURL)/admin/v1/apps/\(appId)",
                                                        body: try JSONEncoder().encode(AdminAPI.UpdateApp(webhookRetries: 2)),
                                                        headers: stack.adminHeaders)
        XCTAssertEqual(patch.status, 202, patch.text)
        try await eventually("retries projected") {
            let view = try await HTTPClientHelpers.get("\(self.stack.ingestURL)/admin/v1/apps/\(appId)", headers: self.stack.adminHeaders)
            return try view.decode(AdminAPI.AppView.self).webhookRetries == 2
        }
        try await register(2)
        try await receiver.waitFor(count: 4, timeout: .seconds(30))
        try await eventually("second job failed after its retries") {
            try await self.stack.sqlite("SELECT state FROM outbox ORDER BY created_at") == ["failed", "failed"]
        }
        let paths = receiver.requests.map(\.path)
        XCTAssertEqual(paths, ["/hook/1", "/hook/2", "/hook/2", "/hook/2"])
        let ids = Set(receiver.requests.dropFirst().map { $0.headers[WebhookHeaders.webhookId] })
        XCTAssertEqual(ids.count, 1, "every attempt of one job carries the same webhook id")
        // Every attempt is recorded, with the receiver's answer.
        let attempts = try await stack.sqlite("SELECT attempt, http_status, outcome FROM outbox_attempts ORDER BY job_id, attempt")
        XCTAssertEqual(attempts.count, 4)
        XCTAssertTrue(attempts.allSatisfy { $0.contains("|500|") }, "\(attempts)")
        try await eventually("four audit records") { try await self.stack.countRecords(topic: self.stack.topics.webhooks) == 4 }
    }
}

/// The request id of an ingest request travels with its commands (the `request-id` record
/// header) into the processor's log lines about them.
final class RequestIdTraceTests: XCTestCase {
    private var stack: PushlineStack!

    override func tearDown() async throws {
        await stack?.stop()
    }

    func testTheProcessorLogsARejectedRegistrationWithItsIngestRequestId() async throws {
        stack = try await PushlineStack.start(processorEnvironment: ["PUSHLINE_LOG_LEVEL": "debug"])
        let app = try await stack.createApp()
        let requestId = "trace-\(UUID().uuidString.prefix(8))"
        let registration = DeviceRegistrationAPI.Registration(MobileAppId: app.mobileAppId.uuidString, UserId: "user-1",
                                                               ApiToken: app.apiToken, ApnsDeviceToken: Tokens.apns(1))
        let first = try await HTTPClientHelpers.post(stack.registrationURL(org: app.orgId, "devices"), json: registration)
        XCTAssertEqual(first.status, 202)
        // The same device again: the processor, not ingest, decides it is a duplicate.
        let answer = try await HTTPClientHelpers.post(stack.registrationURL(org: app.orgId, "devices"), json: registration,
                                                      headers: ["x-request-id": requestId])
        XCTAssertEqual(answer.status, 202)
        try await eventually("the processor logs the rejection with the request id") {
            self.stack.processor.tail(lines: 100_000).split(separator: "\n").contains {
                $0.contains("command rejected") && $0.contains("request_id=\(requestId)") && $0.contains("reason=DuplicateExists")
            }
        }
    }
}
