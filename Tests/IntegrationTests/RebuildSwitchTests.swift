#if canImport(Glibc)
import Glibc
#endif
import Contracts
import Foundation
import Logging
import Projections
import ProjectionStores
import Synchronization
import TestSupport
import XCTest

/// `pushline-processor rebuild` on a running stack (docs/ARCHITECTURE.md#replay-and-rebuild): the
/// new PostgreSQL store is built from offset 0 while ingest keeps serving reads from the old one,
/// the switch carries the old outbox over, and the stack restarted on the new store has the same
/// tables and sends no webhook and no outbound record a second time.
final class RebuildSwitchTests: XCTestCase {
    typealias API = DeviceRegistrationAPI
    private var stack: PushlineStack!
    private var receiver: WebhookReceiver!

    override func tearDown() async throws {
        await receiver?.stop()
        await stack?.stop()
    }

    /// Registers users `range` through ingest with a status callback to the receiver; returns the request ids.
    private func register(_ range: Range<Int>, app: AdminAPI.AppCreatedAnswer) async throws -> [UUID] {
        var ids: [UUID] = []
        for start in stride(from: range.lowerBound, to: range.upperBound, by: 100) {
            let batch = (start..<min(start + 100, range.upperBound)).map { n in
                API.Registration(MobileAppId: app.mobileAppId.uuidString, UserId: "u-\(n)", ApiToken: app.apiToken,
                                 ApnsDeviceToken: Tokens.apns(n))
            }
            let answer = try await HTTPClientHelpers.post(stack.registrationURL(org: app.orgId, "devices/batch"), json: batch,
                                                          headers: [API.trackRegistrationHeader: "true", API.callbackURLHeader: "\(receiver.baseURL)/hooks"])
            guard answer.status == 202 else { throw TestFailure("registration answered \(answer.status): \(answer.text)") }
            ids += try answer.decode([API.RegistrationAccepted].self).map(\.RegistrationRequestId)
        }
        return ids
    }

    private func webhookIds() -> [String] {
        receiver.requests.compactMap { $0.headers["X-Pushline-Webhook-Id"] ?? $0.headers["x-pushline-webhook-id"] }
    }

    func testRebuildWhileServingThenSwitchSendsNothingTwice() async throws {
        let postgres = try await PostgresServer.shared()
        let old = try await postgres.createDatabase("t_\(UInt32.random(in: 0...UInt32.max))")
        let new = try await postgres.createDatabase("t_\(UInt32.random(in: 0...UInt32.max))")
        receiver = WebhookReceiver()
        try await receiver.start()
        stack = try await PushlineStack.start(store: old)
        let app = try await stack.createApp()

        // State with side effects: status webhooks, a managed send's outbound records, reports.
        let first = try await register(0..<300, app: app)
        _ = try await stack.decidedStatuses(org: app.orgId, app: app.mobileAppId, token: app.apiToken, ids: first)
        let delivery = try await stack.send(["userIds": (0..<300).map { "u-\($0)" }, "title": "before", "managed": true], app: app)
        let records = try await stack.waitForOutbound(300).map(\.record)
        try await stack.track(records.prefix(100).map { ["deliveryId": delivery.uuidString, "broadlogId": $0.messageId, "action": "7"] },
                              app: app)
        try await eventually("300 status webhooks delivered", timeout: .seconds(90)) { self.webhookIds().count >= 300 }

        // Step 1 while the stack serves: ingest reads the old store meanwhile.
        let finished = Flag()
        let stack = self.stack!
        let building = Task {
            defer { finished.set() }
            return try await stack.rebuild(store: new, arguments: ["--previous", old])
        }
        var readsDuringRebuild = 0
        while !finished.isSet || readsDuringRebuild == 0 {
            let statuses = try await stack.statuses(org: app.orgId, app: app.mobileAppId, token: app.apiToken, ids: Array(first.prefix(50)))
            XCTAssertEqual(statuses.map(\.Status), Array(repeating: .Success, count: 50))
            readsDuringRebuild += 1
        }
        let stepOne = try await building.value
        XCTAssertTrue(stepOne.contains("rebuild: ") && stepOne.contains(" records/s"), "progress lines: \(stepOne)")
        XCTAssertTrue(stepOne.contains("done in"), "a final progress line: \(stepOne)")

        // More traffic after step 1, applied by the old processors only.
        let second = try await register(300..<400, app: app)
        _ = try await stack.decidedStatuses(org: app.orgId, app: app.mobileAppId, token: app.apiToken, ids: second)
        try await eventually("400 status webhooks delivered") { self.webhookIds().count >= 400 }

        // Step 2: processors stopped, the switch replays the rest and carries the outbox over.
        try await stack.processor.stop()
        let outboundBefore = try await stack.countRecords(topic: stack.topics.outbound)
        let stepTwo = try await stack.rebuild(store: new, arguments: ["--previous", old, "--switch"])
        XCTAssertTrue(stepTwo.contains("switched"), stepTwo)

        let oldStore = try await ProjectionStoreFactory.open(old, logger: Logger(label: "test"))
        let newStore = try await ProjectionStoreFactory.open(new, logger: Logger(label: "test"))
        ScaleOutTests.assertSameDump(try await newStore.dump(), try await oldStore.dump(), "rebuilt store vs serving store")
        let oldJobs = try await oldStore.outboxJobs(after: nil, limit: 10_000)
        let newJobs = try await newStore.outboxJobs(after: nil, limit: 10_000)
        XCTAssertEqual(oldJobs.count, 400)
        XCTAssertEqual(newJobs, oldJobs, "the outbox, delivery progress included, is carried over")

        // The stack on the new store: nothing old is sent again, new work is done once.
        try await stack.switchStore(to: new)
        let third = try await register(400..<450, app: app)
        _ = try await stack.decidedStatuses(org: app.orgId, app: app.mobileAppId, token: app.apiToken, ids: third)
        try await eventually("450 status webhooks delivered") { self.webhookIds().count >= 450 }
        let ids = webhookIds()
        XCTAssertEqual(ids.count, 450)
        XCTAssertEqual(Set(ids).count, ids.count, "no webhook sent twice")
        let outboundAfter = try await stack.countRecords(topic: stack.topics.outbound)
        XCTAssertEqual(outboundAfter, outboundBefore, "no outbound record sent again")
        let stats = try await stack.stats(delivery, app: app)
        XCTAssertEqual(stats?.impressions, 100)

        // A rebuild without a previous store refuses a store that holds state.
        do {
            _ = try await stack.rebuild(store: new, arguments: [])
            XCTFail("a rebuild into a store that holds state must refuse")
        } catch let failure as TestFailure {
            XCTAssertTrue("\(failure)".contains("already holds consumed offsets"), "\(failure)")
        }
    }
}

/// A one-way flag set by one task and read by another.
private final class Flag: Sendable {
    private let value = Mutex(false)
    var isSet: Bool { value.withLock { $0 } }
    func set() { value.withLock { $0 = true } }
}
