#if canImport(Glibc)
import Glibc
#endif
import Contracts
import Foundation
import TestSupport
import XCTest

/// The processor stopped in the middle of a stream and started again: every registration is
/// applied exactly once, and webhooks are not sent twice (beyond the documented crash window).
final class ProcessorRestartTests: XCTestCase {
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

    /// Sends `total` tracked registrations with a status webhook, 100 per request, 10 devices per
    /// user, while `interrupt` runs once `trigger` statuses are stored. Returns the request ids.
    private func stream(total: Int, app: AdminAPI.AppCreatedAnswer, killAt trigger: Int,
                        interrupt: @escaping @Sendable () async throws -> ContinuousClock.Instant) async throws -> (ids: [UUID], killedAt: ContinuousClock.Instant) {
        let stack = self.stack!
        let killer = Task {
            try await eventually("\(trigger) statuses stored", timeout: .seconds(120)) {
                Int(try await stack.sqlite("SELECT COUNT(*) FROM registration_status").first ?? "0") ?? 0 >= trigger
            }
            return try await interrupt()
        }
        var ids: [UUID] = []
        let headers = [API.trackRegistrationHeader: "true", API.callbackURLHeader: "\(receiver.baseURL)/status"]
        for start in stride(from: 0, to: total, by: 100) {
            let batch = (start..<min(start + 100, total)).map { n in
                API.Registration(MobileAppId: app.mobileAppId.uuidString, UserId: "user-\(n / 10)", ApiToken: app.apiToken,
                                 ApnsDeviceToken: n % 2 == 0 ? Tokens.apns(n) : nil, FcmDeviceToken: n % 2 == 0 ? nil : Tokens.fcm(n))
            }
            let answer = try await HTTPClientHelpers.post(stack.registrationURL(org: app.orgId, "devices/batch"), json: batch, headers: headers)
            XCTAssertEqual(answer.status, 202, answer.text)
            ids += try answer.decode([API.RegistrationAccepted].self).map(\.RegistrationRequestId)
        }
        let killedAt = try await killer.value
        return (ids, killedAt)
    }

    private func assertAppliedExactlyOnce(_ ids: [UUID], app: AdminAPI.AppCreatedAnswer, total: Int) async throws {
        let statuses = try await stack.decidedStatuses(org: app.orgId, app: app.mobileAppId, token: app.apiToken, ids: ids, timeout: .seconds(180))
        // A registration applied twice would have turned its own status into DuplicateExists.
        XCTAssertEqual(statuses.filter { $0.Status == .Success }.count, total, stack.logs())
        let devices = try await stack.sqlite("SELECT COUNT(*), MAX(version) FROM devices WHERE app_id = '\(app.mobileAppId.uuidString.lowercased())'")
        XCTAssertEqual(devices, ["\(total)|1"])
    }

    func testProcessorKilledMidStreamAppliesEveryRegistrationOnceAndRepeatsOnlyInFlightWebhooks() async throws {
        let app = try await stack.createApp()
        let total = 10_000
        let stack = self.stack!
        let (ids, killedAt) = try await stream(total: total, app: app, killAt: 2_500) {
            let at = ContinuousClock.now
            try await stack.restartProcessor(signal: SIGKILL)
            return at
        }
        XCTAssertEqual(ids.count, total)
        try await assertAppliedExactlyOnce(ids, app: app, total: total)
        try await receiver.waitFor(count: total, timeout: .seconds(180))
        try await eventually("webhook outbox drained", timeout: .seconds(60)) {
            try await stack.sqlite("SELECT COUNT(*) FROM outbox WHERE state = 'pending'") == ["0"]
        }

        let received = receiver.requests
        var byId: [String: [ContinuousClock.Instant]] = [:]
        for r in received { byId[r.headers[WebhookHeaders.webhookId] ?? "missing", default: []].append(r.at) }
        XCTAssertNil(byId["missing"], "every webhook carries its id")
        XCTAssertEqual(byId.count, total, "one webhook job per registration")
        let repeated = byId.filter { $0.value.count > 1 }
        // Only a POST in flight when the process died may be repeated: at most one per
        // dispatcher slot, each first received around the kill (a POST already on the wire may
        // land a moment after the signal). A job first received well before the kill had its
        // attempt recorded, and must never come again.
        print("webhooks repeated after SIGKILL: \(repeated.count) of \(total)")
        XCTAssertLessThanOrEqual(repeated.count, 32, "repeats beyond the crash window")
        for (id, times) in repeated {
            XCTAssertEqual(times.count, 2, "\(id) sent \(times.count) times")
            XCTAssertGreaterThan(times[0], killedAt - .seconds(2), "\(id) was recorded long before the kill yet sent again")
            XCTAssertLessThan(times[0], killedAt + .seconds(1), "\(id) was first sent after the kill, then repeated")
        }
    }

    func testProcessorStoppedGracefullyMidStreamRepeatsNothing() async throws {
        let app = try await stack.createApp()
        let total = 3_000
        let stack = self.stack!
        let (ids, _) = try await stream(total: total, app: app, killAt: 800) {
            let at = ContinuousClock.now
            try await stack.restartProcessor(signal: SIGTERM)
            return at
        }
        try await assertAppliedExactlyOnce(ids, app: app, total: total)
        try await receiver.waitFor(count: total, timeout: .seconds(120))
        try await Task.sleep(for: .seconds(1))
        let webhookIds = receiver.requests.map { $0.headers[WebhookHeaders.webhookId] ?? "" }
        XCTAssertEqual(webhookIds.count, total, "no webhook sent twice")
        XCTAssertEqual(Set(webhookIds).count, total)
    }
}
