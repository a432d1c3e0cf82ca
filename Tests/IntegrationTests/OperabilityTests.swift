import Contracts
import Foundation
import TestSupport
import XCTest

/// What operators see of a running stack: every metric family the operator docs list, fed by
/// real traffic, and logs (at debug level) that never hold a secret.
final class OperabilityTests: XCTestCase {
    private typealias API = DeviceRegistrationAPI
    private var stack: PushlineStack!
    private var receiver: WebhookReceiver!

    override func setUp() async throws {
        receiver = WebhookReceiver()
        try await receiver.start()
        stack = try await PushlineStack.start(processorEnvironment: ["PUSHLINE_LOG_LEVEL": "debug"],
                                              ingestEnvironment: ["PUSHLINE_LOG_LEVEL": "debug"])
    }

    override func tearDown() async throws {
        await stack?.stop()
        await receiver?.stop()
    }

    func testMetricsAndLogsOfRealTrafficShowEverythingOperatorsNeedAndNoSecret() async throws {
        let app = try await stack.createApp()
        let callbackSecret = "callback-secret-" + UUID().uuidString
        let patch = try await HTTPClientHelpers.request(
            .PATCH, "\(stack.ingestURL)/admin/v1/apps/\(app.mobileAppId)",
            body: Data(#"{"callbackUrl":"\#(receiver.baseURL)/kf5","callbackHeaders":{"X-Kf-Key":"\#(callbackSecret)"}}"#.utf8),
            headers: stack.adminHeaders)
        XCTAssertEqual(patch.status, 202, patch.text)
        let issued = try await HTTPClientHelpers.request(.POST, "\(stack.ingestURL)/admin/v1/apps/\(app.mobileAppId)/tokens",
                                                         body: Data(#"{"scopes":["client","server"]}"#.utf8), headers: stack.adminHeaders).decode(AdminAPI.TokenIssuedAnswer.self)
        try await eventually("callback URL projected") {
            try await self.stack.sqlite("SELECT callback_url FROM apps") == ["\(self.receiver.baseURL)/kf5"]
        }

        // A registration API registration (token in the body) with a status webhook, a forged one,
        // a device of user 123 and a ticket for it (app callback), a wrong Bearer token, and
        // tracking of an unknown delivery.
        let org = app.orgId, appId = app.mobileAppId.uuidString
        let registered = try await HTTPClientHelpers.post(stack.registrationURL(org: org, "devices"), json: API.Registration(
            MobileAppId: appId, UserId: "u1", ApiToken: app.apiToken, ApnsDeviceToken: Tokens.apns(1)),
            headers: [API.callbackURLHeader: "\(receiver.baseURL)/status", API.callbackURLHeadersHeader: #"{"X-Hook-Key":"\#(callbackSecret)"}"#])
        XCTAssertEqual(registered.status, 202)
        let forgedToken = "forged-" + UUID().uuidString
        let forged = try await HTTPClientHelpers.post(stack.registrationURL(org: org, "devices"), json: API.Registration(
            MobileAppId: appId, UserId: "u2", ApiToken: forgedToken, ApnsDeviceToken: Tokens.apns(2)))
        XCTAssertEqual(forged.status, 202)
        // The same device again: the processor rejects it (DuplicateExists), at debug level.
        let duplicate = try await HTTPClientHelpers.post(stack.registrationURL(org: org, "devices"), json: API.Registration(
            MobileAppId: appId, UserId: "u1", ApiToken: app.apiToken, ApnsDeviceToken: Tokens.apns(1)))
        XCTAssertEqual(duplicate.status, 202)
        try await stack.registerKF5([("123", Tokens.apns(3), "IOS")], app: app)
        try await stack.waitForDevices(2, app: app.mobileAppId)
        _ = try await stack.send(["userId": "123", "title": "Ticket answered", "kind": "ticket", "ticketId": "9"], app: app)
        let wrongBearer = try await stack.call(.POST, "/v1/apps/\(app.mobileAppId)/notifications", json: ["userId": "123", "title": "x"],
                                               token: issued.apiToken + "x")
        XCTAssertEqual(wrongBearer.status, 401)
        try await stack.track([["deliveryId": UUID().uuidString, "broadlogId": "m-1", "action": "1"]], app: app, token: issued.apiToken)
        try await receiver.waitFor(count: 2)
        // A legacy token (of an app an old log created, before token scopes) sends once.
        let legacyToken = ApiTokens.generate(), legacyApp = UUID()
        try await stack.produce(AppCreated(orgId: UUID(), mobileAppId: legacyApp, name: "old", tokenId: UUID(),
                                           tokenHash: ApiTokens.hash(legacyToken)))
        try await eventually("the legacy app projected") {
            try await HTTPClientHelpers.get("\(self.stack.ingestURL)/admin/v1/apps/\(legacyApp)", headers: self.stack.adminHeaders).status == 200
        }
        let legacySend = try await stack.call(.POST, "/v1/apps/\(legacyApp)/notifications", json: ["userId": "nobody", "title": "x"],
                                              token: legacyToken)
        XCTAssertEqual(legacySend.status, 202, legacySend.text)

        // Ingest: requests by route and status, commands published by type, produce latency,
        // legacy tokens on server routes.
        let ingest = try await HTTPClientHelpers.get("\(stack.ingestURL)/metrics").text
        assertSeries(ingest, "pushline_ingest_requests_total", labels: [#"route="/admin/v1/apps""#, #"status="201""#])
        assertSeries(ingest, "pushline_ingest_requests_total", labels: [#"status="401""#])
        assertSeries(ingest, "pushline_ingest_commands_published_total", labels: [#"type="registration.device-registration-requested""#])
        assertSeries(ingest, "pushline_ingest_publish_duration_seconds", labels: [])
        assertSeries(ingest, "pushline_ingest_forged_commands_total", labels: [])
        assertSeries(ingest, "pushline_ingest_legacy_token_requests_total", labels: [#"route="/v1/apps/{mobileAppId}/notifications""#])

        // Processor: applied by type, rejects by reason, attempts by kind and outcome, store
        // transaction time, and every command partition's lag, back to 0 once caught up.
        try await eventually("tracking rejection and both attempts counted") {
            let text = try await HTTPClientHelpers.get("\(self.stack.processorURL)/metrics").text
            return text.contains("pushline_processor_tracking_rejected_total") && text.contains(#"kind="app-callback""#)
                && text.contains(#"kind="registration-status""#)
        }
        let commandTopics = stack.topics.commandTopics
        var processor = ""
        try await eventually("lag of all 24 command partitions is 0") {
            processor = try await HTTPClientHelpers.get("\(self.stack.processorURL)/metrics").text
            let lag = processor.split(separator: "\n").filter { $0.hasPrefix("pushline_processor_consumer_lag{") }
            return lag.count == commandTopics.count * 6 && lag.allSatisfy { $0.hasSuffix(" 0.0") }
        }
        for topic in commandTopics {
            for partition in 0..<6 {
                assertSeries(processor, "pushline_processor_consumer_lag", labels: [#"topic="\#(topic)""#, #"partition="\#(partition)""#])
            }
        }
        assertSeries(processor, "pushline_processor_commands_applied_total", labels: [#"type="notification.requested""#])
        assertSeries(processor, "pushline_processor_commands_rejected_total", labels: [#"reason="DuplicateExists""#])
        assertSeries(processor, "pushline_processor_webhook_attempts_total", labels: [#"kind="app-callback""#, #"outcome="delivered""#])
        assertSeries(processor, "pushline_processor_webhook_attempts_total", labels: [#"kind="registration-status""#, #"outcome="delivered""#])
        assertSeries(processor, "pushline_processor_store_commit_seconds", labels: [])
        assertSeries(processor, "pushline_processor_apply_delay_seconds", labels: [])
        assertSeries(processor, "pushline_processor_apply_delay_max_seconds", labels: [])

        // The logs are there (ingest logged the app's creation, the processor the duplicate
        // registration's rejection at debug level) and hold no token, admin token or header secret.
        _ = try await stack.ingest.stop()
        _ = try await stack.processor.stop()
        for (service, evidence) in [("pushline-ingest", "app created"), ("pushline-processor", "command rejected")] {
            let log = try String(contentsOf: stack.directory.appendingPathComponent("\(service).log"), encoding: .utf8)
            XCTAssertTrue(log.contains(evidence), "\(service) wrote its log at debug level")
            for (name, secret) in [("API token", app.apiToken), ("second API token", issued.apiToken), ("forged token", forgedToken), ("legacy token", legacyToken),
                                   ("admin token", stack.adminToken), ("callback header value", callbackSecret)] {
                XCTAssertFalse(log.contains(secret), "\(service) logged the \(name)")
            }
        }
    }

    /// Fails unless `text` has a sample of `name` (a counter/gauge line, or a summary's or
    /// histogram's `_count`) whose labels include all of `labels`, with a value above 0 for
    /// counters and timings.
    private func assertSeries(_ text: String, _ name: String, labels: [String], file: StaticString = #filePath, line: UInt = #line) {
        let samples = text.split(separator: "\n").filter {
            ($0.hasPrefix(name + "{") || $0.hasPrefix(name + " ") || $0.hasPrefix(name + "_count")) && !$0.hasPrefix("#")
        }
        let matching = samples.filter { sample in labels.allSatisfy { sample.contains($0) } }
        XCTAssertFalse(matching.isEmpty, "no \(name) sample with \(labels) in:\n\(samples.joined(separator: "\n"))", file: file, line: line)
        if !name.hasSuffix("_lag") {
            XCTAssertTrue(matching.contains { (Double($0.split(separator: " ").last ?? "") ?? 0) > 0 },
                          "\(name) \(labels) is 0", file: file, line: line)
        }
    }
}
