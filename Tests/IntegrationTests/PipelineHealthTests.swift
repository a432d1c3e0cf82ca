import Contracts
import Foundation
import Projections
import ProjectionStores
import TestSupport
import WireCodec
import XCTest

/// No single input stops the pipeline unseen, with the real services, broker and stores: a
/// record the store refuses for good is dead-lettered and can be applied again with `pushline
/// dead-letters`; `/health` says so when the store is away; and a live processor does not take
/// an old log for new work.
final class PipelineHealthTests: XCTestCase {
    private var stack: PushlineStack?
    private var postgres: PostgresServer?
    /// Processors a test starts beside its stack's, stopped with it.
    private var processors: [ServiceProcess] = []

    override func tearDown() async throws {
        for processor in processors { _ = try? await processor.stop() }
        await stack?.stop()
        try? await postgres?.stop()
    }

    private func pushline(_ arguments: [String], _ stack: PushlineStack) async throws -> ProcessOutput {
        let executable = ServiceProcess.binDirectory.appendingPathComponent("pushline").path
        return try await ProcessRunner.run(executable, arguments, environment: [
            "PUSHLINE_LOG_LEVEL": "warning", "PUSHLINE_KAFKA_BROKERS": stack.broker.bootstrapServers, "PUSHLINE_STORE": stack.storeLocation,
        ])
    }

    private func send(_ deliveryId: UUID, app: AdminAPI.AppCreatedAnswer) -> NotificationRequested {
        NotificationRequested(deliveryId: deliveryId, mobileAppId: app.mobileAppId, target: NotificationTarget(userIds: ["u"]),
                              content: NotificationContent(text: "hello"))
    }

    func testARefusedRecordIsDeadLetteredListedAndAppliedAgainWithTheCLI() async throws {
        let stack = try await PushlineStack.start()
        self.stack = stack
        let app = try await stack.createApp()
        try await stack.registerKF5([(user: "u", token: Tokens.apns(1), type: "IOS")], app: app)
        let store = try await stack.openStore()
        try await eventually("the device projected") { try await !store.devices(app: app.mobileAppId, user: "u").isEmpty }
        let poisoned = UUID(), later = UUID()
        // The store refuses this one delivery for good, as it would a value it cannot hold.
        try await stack.sqlite("""
            CREATE TRIGGER poison BEFORE INSERT ON deliveries WHEN NEW.delivery_id = '\(poisoned.lowercasedString)'
            BEGIN SELECT RAISE(ABORT, 'poisoned by the test'); END;
            """)
        try await stack.produce(send(poisoned, app: app))
        try await stack.produce(send(later, app: app))
        try await eventually("the send after the refused one applied", timeout: .seconds(60)) {
            try await stack.stats(later, app: app) != nil
        }
        let listed = try await pushline(["dead-letters", "list", "--json"], stack)
        XCTAssertEqual(listed.status, 0, listed.standardError)
        let letters = try JSONSerialization.jsonObject(with: Data(listed.standardOutput.utf8)) as? [[String: Any]] ?? []
        XCTAssertEqual(letters.count, 1, listed.standardOutput)
        let id = try XCTUnwrap(letters.first?["id"] as? String)
        XCTAssertTrue(id.hasPrefix("pushline.commands.notification:"), id)
        XCTAssertEqual(letters.first?["type"] as? String, CommandType.notificationRequested.rawValue)
        XCTAssertTrue((letters.first?["reason"] as? String ?? "").contains("poisoned by the test"))
        let metrics = try await HTTPClientHelpers.get("\(stack.processorURL)/metrics").text
        XCTAssertTrue(metrics.contains(#"pushline_processor_dead_letters_total{type="notification.requested"} 1"#), metrics)
        let health = try await HTTPClientHelpers.get("\(stack.processorURL)/health")
        XCTAssertEqual(health.status, 200, "a dead letter does not stop the processor: \(health.text)")

        let refused = try await pushline(["dead-letters", "reapply", id], stack)
        XCTAssertEqual(refused.status, 1, "the store still refuses it")
        XCTAssertTrue(refused.standardError.contains("refused \(id) again"), refused.standardError)

        try await stack.sqlite("DROP TRIGGER poison;")
        let reapplied = try await pushline(["dead-letters", "reapply", id], stack)
        XCTAssertEqual(reapplied.status, 0, reapplied.standardError)
        XCTAssertTrue(reapplied.standardOutput.contains("1 outbound record"), reapplied.standardOutput)
        let stats = try await stack.stats(poisoned, app: app)
        XCTAssertEqual(stats?.sent, 1)
        let empty = try await pushline(["dead-letters", "list"], stack)
        XCTAssertEqual(empty.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines), "no dead letters")
    }

    func testHealthIsUnavailableWhileThePostgreSQLStoreIsDownAndOkOnceItIsBack() async throws {
        let server = try await PostgresServer.start()
        postgres = server
        let stack = try await PushlineStack.start(processorEnvironment: ["PUSHLINE_STALL_TIMEOUT_MS": "2000"],
                                                  store: try await server.createDatabase("health"))
        self.stack = stack
        let app = try await stack.createApp()
        try await server.pause()
        try await stack.produce(send(UUID(), app: app))
        var answer = ""
        try await eventually("processor health unavailable while the store is down", timeout: .seconds(60)) {
            let health = try await HTTPClientHelpers.get("\(stack.processorURL)/health")
            answer = health.text
            return health.status == 503
        }
        XCTAssertTrue(answer.contains("projection store has been unavailable") || answer.contains("no progress on shard"), answer)
        try await server.resume()
        try await eventually("processor healthy again", timeout: .seconds(90)) {
            try await HTTPClientHelpers.get("\(stack.processorURL)/health").status == 200
        }
    }

    func testALiveProcessorRefusesALogOlderThanItsStoreUnlessToldToApplyIt() async throws {
        let stack = try await PushlineStack.start()
        self.stack = stack
        let app = try await stack.createApp()
        // The log's records must be older than the new store by more than the allowed clock skew.
        try await Task.sleep(for: .seconds(6))
        try await stack.processor.stop()
        let fresh = "sqlite:" + FileManager.default.temporaryDirectory.appendingPathComponent("pushline-fresh-\(UUID()).sqlite").path

        let refusing = stack.makeProcessor(store: fresh, environment: ["PUSHLINE_GROUP_ID": "fresh-\(UUID())"])
        processors.append(refusing)
        try refusing.start()
        try await eventually("the processor on a fresh store over an old log stops", timeout: .seconds(60)) { !refusing.isRunning }
        let status = try await refusing.stop()
        XCTAssertNotEqual(status, 0)
        let log = refusing.tail(lines: 200)
        XCTAssertTrue(log.contains("refusing to apply pushline.commands."), log)
        XCTAssertTrue(log.contains("pushline-processor rebuild"), log)
        let store = try await ProjectionStoreFactory.open(fresh, logger: .init(label: "test"))
        let nothing = try await store.app(app.mobileAppId)
        XCTAssertNil(nothing, "nothing of the old log was applied")

        let told = stack.makeProcessor(store: fresh, environment: ["PUSHLINE_GROUP_ID": "fresh-\(UUID())",
                                                                   "PUSHLINE_ACCEPT_EXISTING_LOG": "true"])
        processors.append(told)
        try told.start()
        try await eventually("the old log applied when told to", timeout: .seconds(60)) {
            try await store.app(app.mobileAppId) != nil
        }
        try await told.stop()
    }
}
