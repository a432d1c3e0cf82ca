import Contracts
import Foundation
import Kafka
import Logging
import Projections
import ProjectionStores
import TestSupport
import XCTest

/// The whole stack for one integration test: a fresh Tansu broker (started by the project's
/// own script), the real `pushline-processor` and `pushline-ingest` executables, and a fresh
/// SQLite store in a temporary directory, or the store a test names (`PUSHLINE_STORE`, e.g. a
/// PostgreSQL database). Everything is stopped in `stop()`.
final class PushlineStack: @unchecked Sendable {
    let broker: TestBroker
    let directory: URL
    let adminToken = "test-admin-token-" + UUID().uuidString
    let topics = Topics(prefix: "pushline.")
    let ingestPort = TestBroker.freePort()
    let processorPort = TestBroker.freePort()
    let groupId = "pushline-test-" + UUID().uuidString
    private(set) var processor: ServiceProcess
    private(set) var ingest: ServiceProcess
    /// Extra or overriding processor settings of this test.
    let processorEnvironment: [String: String]
    /// `PUSHLINE_STORE` of both services.
    private(set) var storeLocation: String
    /// Extra or overriding ingest settings of this test.
    let ingestEnvironment: [String: String]

    var ingestURL: String { "http://127.0.0.1:\(ingestPort)" }
    var processorURL: String { "http://127.0.0.1:\(processorPort)" }
    var storePath: String { directory.appendingPathComponent("store.sqlite").path }

    /// `store`: the services' `PUSHLINE_STORE`; nil: a new SQLite file in the stack's directory.
    /// `durableBroker`: the broker keeps its log on disk, so that a test can stop and start it
    /// again (`broker.stopKeepingLog()`, `broker.startAgain()`) under the running services.
    static func start(processorEnvironment: [String: String] = [:], ingestEnvironment: [String: String] = [:],
                      store: String? = nil, durableBroker: Bool = false) async throws -> PushlineStack {
        let broker = try await TestBroker.start(durable: durableBroker)
        let stack = PushlineStack(broker: broker, processorEnvironment: processorEnvironment, ingestEnvironment: ingestEnvironment,
                                  store: store)
        do {
            try stack.processor.start()
            try await stack.processor.waitHealthy("\(stack.processorURL)/health")
            try stack.ingest.start()
            try await stack.ingest.waitHealthy("\(stack.ingestURL)/health")
        } catch {
            await stack.stop()
            throw error
        }
        return stack
    }

    /// A setting as scripts/one-machine.env (what `make run` gives the stack) has it.
    static func oneMachineSetting(_ name: String) throws -> String {
        let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../scripts/one-machine.env")
        let text = try String(contentsOf: file, encoding: .utf8)
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(name + "=") }) else {
            throw TestFailure("scripts/one-machine.env does not set \(name)")
        }
        return String(line.dropFirst(name.count + 1))
    }

    private init(broker: TestBroker, processorEnvironment: [String: String], ingestEnvironment: [String: String], store: String?) {
        self.broker = broker
        // One deployment, one key: ingest names its key in every send, and the processor makes the
        // sends' message ids with it (a processor without it stops at the first keyed send).
        var processorEnvironment = processorEnvironment
        for name in ["PUSHLINE_SECRETS_KEY", "PUSHLINE_SECRETS_PREVIOUS_KEYS"] where processorEnvironment[name] == nil {
            processorEnvironment[name] = ingestEnvironment[name]
        }
        self.processorEnvironment = processorEnvironment
        self.ingestEnvironment = ingestEnvironment
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("pushline-it-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        processor = ServiceProcess(name: "pushline-processor", environment: [:], logDirectory: directory)
        let storeLocation = store ?? "sqlite:" + directory.appendingPathComponent("store.sqlite").path
        self.storeLocation = storeLocation
        ingest = ServiceProcess(name: "pushline-ingest", environment: [:], logDirectory: directory)
        ingest = makeIngest()
        processor = makeProcessor()
    }

    /// An ingest process of this stack (not started), on `port` (default: the stack's ingest port).
    func makeIngest(port: Int? = nil) -> ServiceProcess {
        ServiceProcess(name: "pushline-ingest", environment: [
            "PUSHLINE_INGEST_PORT": "\(port ?? ingestPort)",
            "PUSHLINE_ADMIN_TOKEN": adminToken,
            "PUSHLINE_KAFKA_BROKERS": broker.bootstrapServers,
            "PUSHLINE_STORE": storeLocation,
            "PUSHLINE_PARTITIONS": "6",
            "PUSHLINE_LOG_LEVEL": "warning",
            // The flows send as fast as they can from one app and one address; the limits have
            // tests of their own.
            "PUSHLINE_RATE_LIMIT_APP_PER_SECOND": "0",
            "PUSHLINE_RATE_LIMIT_SOURCE_PER_SECOND": "0",
        ].merging(ingestEnvironment) { $1 }, logDirectory: directory)
    }

    /// A processor process of this stack (not started), on `store` (default: the stack's) with
    /// `environment` added to the stack's processor environment.
    func makeProcessor(store: String? = nil, environment: [String: String] = [:]) -> ServiceProcess {
        ServiceProcess(name: "pushline-processor", environment: [
            "PUSHLINE_PROCESSOR_PORT": "\(processorPort)",
            "PUSHLINE_KAFKA_BROKERS": broker.bootstrapServers,
            "PUSHLINE_STORE": store ?? storeLocation,
            "PUSHLINE_GROUP_ID": groupId,
            "PUSHLINE_PARTITIONS": "6",
            "PUSHLINE_KAFKA_SESSION_TIMEOUT_MS": "6000",
            "PUSHLINE_KAFKA_MAX_POLL_INTERVAL_MS": "7000",
            "PUSHLINE_LOG_LEVEL": "info",
            // The tests' webhook receivers listen on 127.0.0.1.
            "PUSHLINE_WEBHOOK_ALLOW_PRIVATE_TARGETS": "true",
        ].merging(processorEnvironment) { $1 }.merging(environment) { $1 }, logDirectory: directory)
    }

    /// Stops the processor with `signal` and starts a new one on the same store and group.
    func restartProcessor(signal: Int32) async throws {
        try await processor.stop(signal: signal)
        try processor.start()
        try await processor.waitHealthy("\(processorURL)/health")
    }

    /// Restarts both services on another store (after a rebuild's switch-over).
    func switchStore(to location: String) async throws {
        _ = try await processor.stop()
        _ = try await ingest.stop()
        storeLocation = location
        processor = makeProcessor()
        ingest = makeIngest()
        try processor.start()
        try await processor.waitHealthy("\(processorURL)/health")
        try ingest.start()
        try await ingest.waitHealthy("\(ingestURL)/health")
    }

    /// Runs `pushline-processor rebuild` into a new SQLite store at `path` and waits for it to
    /// exit; throws if it failed.
    func rebuild(into path: String, timeout: Duration = .seconds(300)) async throws {
        _ = try await rebuild(store: "sqlite:\(path)", arguments: [], timeout: timeout)
    }

    /// Runs `pushline-processor rebuild <arguments>` into `store` and waits for it to exit;
    /// returns what it wrote (logs, progress lines), throws if it failed.
    func rebuild(store: String, arguments: [String], timeout: Duration = .seconds(300)) async throws -> String {
        if !arguments.contains("--previous") { try await waitUntilTheChangelogIsPublished() }
        let log = directory.appendingPathComponent("rebuild-\(UUID().uuidString).log").path
        let executable = ServiceProcess.binDirectory.appendingPathComponent("pushline-processor").path
        let pid = try ProcessRunner.spawn(executable, ["rebuild"] + arguments, environment: [
            "PUSHLINE_KAFKA_BROKERS": broker.bootstrapServers,
            "PUSHLINE_STORE": store,
            "PUSHLINE_GROUP_ID": groupId,
            "PUSHLINE_KAFKA_SESSION_TIMEOUT_MS": "6000",
            "PUSHLINE_KAFKA_MAX_POLL_INTERVAL_MS": "7000",
            "PUSHLINE_LOG_LEVEL": "info",
        ], standardOutput: log, standardError: log, append: true)
        let exit = Task { await ProcessRunner.waitForExit(pid) }
        let watchdog = Task {
            try await Task.sleep(for: timeout)
            kill(pid, SIGKILL)
        }
        let status = await exit.value
        watchdog.cancel()
        let output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        guard status == 0 else { throw TestFailure("rebuild exited with \(status):\n\(output)") }
        return output
    }

    /// Waits until the processor published every changelog entry its store committed (it
    /// publishes beside its apply loop): a restore without a previous store reads the topic only.
    func waitUntilTheChangelogIsPublished() async throws {
        let store = try await openStore()
        try await eventually("every changelog entry published") {
            try await store.unpublishedChangelog(after: 0, limit: 1).isEmpty
        }
        await store.close()
    }

    /// Stops everything it started and removes its directory (logs reach failure messages
    /// through `logs()` before that).
    func stop() async {
        _ = try? await ingest.stop()
        _ = try? await processor.stop()
        try? await broker.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    /// The logs of both services, for failure messages.
    func logs() -> String {
        "--- processor ---\n\(processor.tail())\n--- ingest ---\n\(ingest.tail())"
    }

    // MARK: - Admin

    var adminHeaders: [String: String] { ["Authorization": "Bearer \(adminToken)"] }

    /// Creates an app and waits until the processor has projected it.
    func createApp(name: String = "test app", orgId: UUID? = nil) async throws -> AdminAPI.AppCreatedAnswer {
        let answer = try await HTTPClientHelpers.post("\(ingestURL)/admin/v1/apps", json: AdminAPI.CreateApp(orgId: orgId, name: name),
                                                      headers: adminHeaders)
        guard answer.status == 201 else { throw TestFailure("create app answered \(answer.status): \(answer.text)") }
        let created = try answer.decode(AdminAPI.AppCreatedAnswer.self)
        try await eventually("app \(created.mobileAppId) projected") {
            try await HTTPClientHelpers.get("\(self.ingestURL)/admin/v1/apps/\(created.mobileAppId)", headers: self.adminHeaders).status == 200
        }
        return created
    }

    // MARK: - Registration API routes

    func registrationURL(org: UUID, _ path: String) -> String {
        "\(ingestURL)/api/v1.0/orgs/\(org)/pushdeviceregistration/\(path)"
    }

    func statuses(org: UUID, app: UUID, token: String, ids: [UUID]) async throws -> [DeviceRegistrationAPI.RegistrationStatus] {
        let query = DeviceRegistrationAPI.StatusQuery(RegistrationRequestIds: ids.map(\.uuidString), MobileAppId: app.uuidString, ApiToken: token)
        let answer = try await HTTPClientHelpers.post(registrationURL(org: org, "devices/status/"), json: query)
        guard answer.status == 200 else { throw TestFailure("status answered \(answer.status): \(answer.text)") }
        return try answer.decode([DeviceRegistrationAPI.RegistrationStatus].self)
    }

    /// Waits until none of the statuses is Pending and returns them.
    func decidedStatuses(org: UUID, app: UUID, token: String, ids: [UUID],
                         timeout: Duration = .seconds(60)) async throws -> [DeviceRegistrationAPI.RegistrationStatus] {
        var last: [DeviceRegistrationAPI.RegistrationStatus] = []
        try await eventually("\(ids.count) registrations decided", timeout: timeout) {
            last = []
            let most = DeviceRegistrationAPI.maxStatusIds
            for chunk in stride(from: 0, to: ids.count, by: most) {
                last += try await self.statuses(org: org, app: app, token: token, ids: Array(ids[chunk..<min(chunk + most, ids.count)]))
            }
            return !last.contains { $0.Status == .Pending }
        }
        return last
    }

    // MARK: - Store and topics

    /// Opens the services' store (SQLite in WAL mode, or PostgreSQL: safe beside the running processor).
    func openStore() async throws -> any ProjectionStore {
        try await ProjectionStoreFactory.open(storeLocation, logger: Logger(label: "test"))
    }

    /// Runs SQL on the SQLite store (the default one) with the sqlite3 command-line client
    /// (another real SQLite client) and returns its output lines.
    @discardableResult
    func sqlite(_ sql: String) async throws -> [String] {
        let out = try await ProcessRunner.run("sqlite3", ["-cmd", ".timeout 10000", storePath, sql])
        guard out.status == 0 else { throw TestFailure("sqlite3 failed (\(out.status)) for: \(sql): \(out.standardError)") }
        return out.standardOutput.split(separator: "\n").map(String.init)
    }

    /// Counts the records of a topic with kcat (a real Kafka client beside ours), leaving out the
    /// processor's progress marks: they share the command topics but are no commands.
    func countRecords(topic: String) async throws -> Int {
        try await broker.kcat(["-C", "-t", topic, "-o", "beginning", "-e", "-q", "-f", "%s\\n"])
            .split(separator: "\n").filter { ProgressMark.at(in: Data($0.utf8)) == nil }.count
    }
}

/// Polls `condition` until it holds or the timeout passes.
func eventually(_ what: String, timeout: Duration = .seconds(30), _ condition: () async throws -> Bool) async throws {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return }
        try await Task.sleep(for: .milliseconds(100))
    }
    throw TestFailure("timed out waiting for: \(what)")
}

/// Device tokens that pass the default format verifier.
enum Tokens {
    /// 64 hex characters, unique per `n` and `salt`.
    static func apns(_ n: Int, salt: UInt32 = 0) -> String {
        String(format: "%08x", salt) + String(repeating: "0", count: 40) + String(format: "%016x", n)
    }

    /// 152 characters of the FCM alphabet, unique per `n` and `salt`.
    static func fcm(_ n: Int, salt: UInt32 = 0) -> String {
        "fcm:" + String(format: "%08x", salt) + String(repeating: "A", count: 124) + "-" + String(format: "%015d", n)
    }
}
