#if canImport(Glibc)
import Glibc
#endif
import Contracts
import Foundation
import Kafka
import Logging
import Projections
import ProjectionStores
import TestSupport
import XCTest

/// Processors scaled out (docs/ARCHITECTURE.md#scale-out): mixed streams of twelve apps, more than
/// 50,000 commands over 12 partitions, applied by one processor, by three in one consumer group
/// (each applying its shards), and by three of which one is SIGKILLed in the middle, each on a
/// fresh broker and a fresh PostgreSQL database, end in identical tables — and in the same tables
/// as one processor on SQLite.
final class ScaleOutTests: XCTestCase {
    private var fleets: [ProcessorFleet] = []

    override func tearDown() async throws {
        for fleet in fleets { await fleet.stop() }
    }

    private static let sizes = MixedStream.Sizes.about(51_000 / 12)

    func testOneThreeAndThreeWithAKilledProcessorBuildIdenticalTables() async throws {
        var phases: [MixedStream.Phase: [EncodedCommand]] = [:]
        let now = Self.now()
        for seed in 7..<19 {
            for (phase, commands) in try MixedStream(seed: UInt64(seed), sizes: Self.sizes, base: now).commandsByPhase() {
                phases[phase, default: []] += commands
            }
        }
        let total = phases.values.map(\.count).reduce(0, +)
        XCTAssertGreaterThanOrEqual(total, 50_000)

        let postgres = try await PostgresServer.shared()
        let reference = try await run(phases, processors: 1, store: "sqlite:\(Self.temporaryPath("scale-sqlite"))").dump
        let one = try await run(phases, processors: 1, store: try await postgres.createDatabase("t_\(UInt32.random(in: 0...UInt32.max))")).dump
        let threeRun = try await run(phases, processors: 3, store: try await postgres.createDatabase("t_\(UInt32.random(in: 0...UInt32.max))"))
        let three = threeRun.dump
        XCTAssertGreaterThanOrEqual(threeRun.appliedBy.filter { $0 > 0 }.count, 2,
                                    "the three shared the work: records applied by each, \(threeRun.appliedBy)")
        let killed = try await run(phases, processors: 3, store: try await postgres.createDatabase("t_\(UInt32.random(in: 0...UInt32.max))"),
                                   disruption: Self.killOne).dump

        // Sanity: every table the stream touches has rows.
        for table in ["apps", "devices", "registration_status", "pending_notifications", "acks", "deliveries", "tracking_events"] {
            XCTAssertTrue(reference.hasPrefix("\(table) ") || reference.contains("\n\(table) "), "the dump has \(table) rows")
        }
        XCTAssertEqual(reference.split(separator: "\n").filter { $0.hasPrefix("registration_status ") }.count,
                       phases[.registration]!.filter { $0.type == CommandType.deviceRegistrationRequested.rawValue }.count,
                       "one status per registration")
        Self.assertSameDump(one, reference, "1 processor on PostgreSQL vs 1 on SQLite")
        Self.assertSameDump(three, one, "3 processors vs 1")
        Self.assertSameDump(killed, one, "3 processors, one SIGKILLed, vs 1")
    }

    /// The disruption of a run, applied once a fifth of its phase is applied.
    private struct Disruption: Sendable {
        var phase: MixedStream.Phase
        var action: @Sendable (ProcessorFleet) async throws -> Void
    }

    /// Produces the stream phase by phase into a fresh broker, each phase once the previous one is
    /// applied, with `processors` processors on `store`; returns the store's dump and the
    /// processors' logs.
    private func run(_ phases: [MixedStream.Phase: [EncodedCommand]], processors: Int, store: String,
                     disruption: Disruption? = nil) async throws -> (dump: String, logs: String, appliedBy: [Double]) {
        let fleet = try await ProcessorFleet.start(processors: processors, store: store,
                                                   environment: disruption == nil ? [:] : ["PUSHLINE_MAX_BATCH": "100"])
        fleets.append(fleet)
        if processors > 1 { try await assertEachHoldsLeasePartitions(fleet, partitions: 12) }
        for phase in MixedStream.Phase.allCases {
            let commands = phases[phase]!
            let before = try await fleet.applied()
            try await MixedStream.produce(commands, brokers: fleet.broker.bootstrapServers)
            if let disruption, phase == disruption.phase {
                try await eventually("a fifth of the \(phase) phase applied", timeout: .seconds(120)) {
                    try await fleet.applied() - before >= commands.count / 5
                }
                let atDisruption = try await fleet.applied() - before
                try await disruption.action(fleet)
                XCTAssertLessThan(atDisruption, commands.count, "disrupted in the middle of the phase")
            }
            try await fleet.waitAllApplied(timeout: .seconds(300))
        }
        let dump = try await fleet.store.dump()
        let logs = fleet.fullLogs()
        let appliedBy = await fleet.appliedByEach().map { $0 ?? 0 }
        await fleet.stop()
        return (dump, logs, appliedBy)
    }

    /// `pushline lag` names each processor of the group (as the broker describes it) with the
    /// shards it applies: exactly the shards each process reports lag for on its own `/metrics`,
    /// and together every shard once.
    private func assertEachHoldsLeasePartitions(_ fleet: ProcessorFleet, partitions: Int) async throws {
        struct Report: Decodable {
            struct Group: Decodable {
                struct Member: Decodable { var client: String; var shards: [Int32] }
                var assignment: String
                var processors: [Member]
            }
            var group: Group?
            var groupError: String?
        }
        var shown: [String: [Int32]] = [:], own: [String: [Int32]] = [:]
        try await eventually("pushline lag shows each processor with the shards it applies", timeout: .seconds(60)) {
            let out = try await ProcessRunner.run(ServiceProcess.binDirectory.appendingPathComponent("pushline").path, ["lag", "--json"],
                                                  environment: ["PUSHLINE_KAFKA_BROKERS": fleet.broker.bootstrapServers,
                                                                "PUSHLINE_STORE": fleet.storeLocation, "PUSHLINE_GROUP_ID": fleet.groupId,
                                                                "PUSHLINE_LOG_LEVEL": "warning"])
            guard out.status == 0 else { throw TestFailure("pushline lag failed: \(out.standardError)") }
            let report = try JSONDecoder().decode(Report.self, from: Data(out.standardOutput.utf8))
            shown = Dictionary((report.group?.processors ?? []).map { ($0.client, $0.shards) }, uniquingKeysWith: { a, _ in a })
            own = try await fleet.shardsByClient()
            return shown == own && shown.count == fleet.processors.count
        }
        XCTAssertEqual(shown.values.flatMap { $0 }.sorted(), Array(0..<Int32(partitions)), "\(shown)")
        XCTAssertTrue(shown.values.allSatisfy { !$0.isEmpty }, "each of \(fleet.processors.count) processors applies shards: \(shown)")
    }

    /// A processor holding shards is killed: the others take its shards over and carry on.
    private static let killOne = Disruption(phase: .registration) { fleet in
        guard let holder = fleet.holders().first else { throw TestFailure("no processor holds shards:\n\(fleet.logs())") }
        try await fleet.processors[holder].stop(signal: SIGKILL)
    }

    /// PostgreSQL stopped for a few seconds while the processors apply registrations.
    func testPostgresRestartedUnderLoadLosesAndDoublesNothing() async throws {
        let stream = MixedStream(seed: 11, sizes: .about(15_000), base: Self.now())
        let phases = try stream.commandsByPhase()
        let server = try await PostgresServer.start()
        do {
            let reference = try await run(phases, processors: 1, store: "sqlite:\(Self.temporaryPath("restart-sqlite"))")
            let outage = Disruption(phase: .registration) { fleet in
                try await server.pause()
                try await Task.sleep(for: .seconds(3))
                try await server.resume()
            }
            let restarted = try await run(phases, processors: 2, store: try await server.createDatabase("restart"),
                                          disruption: outage)
            XCTAssertTrue(restarted.logs.contains("store unavailable; retrying"), "the processors met the outage")
            Self.assertSameDump(restarted.dump, reference.dump, "2 processors through a PostgreSQL restart vs 1 on SQLite")
        } catch {
            try? await server.stop()
            throw error
        }
        try await server.stop()
    }

    static func assertSameDump(_ actual: String, _ expected: String, _ what: String, file: StaticString = #filePath, line: UInt = #line) {
        guard actual != expected else { return }
        let a = actual.split(separator: "\n", omittingEmptySubsequences: false)
        let e = expected.split(separator: "\n", omittingEmptySubsequences: false)
        // Every line that differs (up to twelve), so that one failure shows the whole divergence.
        let differing = (0..<max(a.count, e.count)).filter { $0 >= a.count || $0 >= e.count || a[$0] != e[$0] }
        let lines = differing.prefix(12).map { index in
            """
              line \(index + 1):
                got:      \(index < a.count ? String(a[index]) : "<end>")
                expected: \(index < e.count ? String(e[index]) : "<end>")
            """
        }
        XCTFail("\(what): dumps differ (\(a.count) vs \(e.count) lines) at \(differing.count) lines:\n" + lines.joined(separator: "\n"),
                file: file, line: line)
    }

    /// Each tag and topic of the store's devices, paged by that name (through the store's index
    /// of names), gives exactly the devices that carry it, in the same order: the index follows
    /// the devices however the store was written (live, rebuilt, restored).
    static func assertNamesIndexed(_ store: any ProjectionStore, _ what: String, file: StaticString = #filePath, line: UInt = #line) async throws {
        func pages(_ app: UUID, having: DeviceNames) async throws -> [String] {
            var tokens: [String] = [], after: String?
            while true {
                let page = try await store.devices(app: app, after: after, limit: 7, having: having)
                tokens += page.map(\.deviceToken)
                guard page.count == 7 else { return tokens }
                after = page.last!.deviceToken
            }
        }
        var checked = 0, afterApp: UUID?
        while true {
            let apps = try await store.apps(after: afterApp, limit: 100)
            for app in apps {
                var devices: [DeviceRow] = [], after: String?
                repeat {
                    let page = try await store.devices(app: app.appId, after: after, limit: 500)
                    devices += page
                    after = page.count == 500 ? page.last!.deviceToken : nil
                } while after != nil
                for tag in Set(devices.flatMap(\.tags.names)) {
                    let expected = devices.filter { $0.tags.contains(tag) }.map(\.deviceToken)
                    let paged = try await pages(app.appId, having: DeviceNames(tags: [tag]))
                    XCTAssertEqual(paged, expected, "\(what): tag \(tag)", file: file, line: line)
                    checked += 1
                }
                for topic in Set(devices.flatMap(\.topics.names)) {
                    let expected = devices.filter { $0.topics.contains(topic) }.map(\.deviceToken)
                    let paged = try await pages(app.appId, having: DeviceNames(topics: [topic]))
                    XCTAssertEqual(paged, expected, "\(what): topic \(topic)", file: file, line: line)
                    checked += 1
                }
            }
            guard apps.count == 100 else { break }
            afterApp = apps.last!.appId
        }
        XCTAssertGreaterThan(checked, 0, "\(what): the store's devices carry names", file: file, line: line)
    }

    /// The present, in whole seconds: where the streams start, so that the processors' progress
    /// marks (which carry the clock) prune none of their statuses and acks.
    static func now() -> Date {
        Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
    }

    static func temporaryPath(_ name: String) -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("pushline-\(name)-\(UUID().uuidString).sqlite").path
    }
}

/// N `pushline-processor` processes in one consumer group on a fresh broker and one store.
final class ProcessorFleet: @unchecked Sendable {
    let broker: TestBroker
    let store: any ProjectionStore
    let storeLocation: String
    let processors: [ServiceProcess]
    let ports: [Int]
    let groupId: String
    let directory: URL
    let topics = Topics(prefix: "pushline.")
    /// Whether `stop()` stops the broker too (it was started for this fleet).
    private let ownsBroker: Bool

    /// `broker`: a broker other fleets share (not stopped with this fleet); nil starts one.
    static func start(processors count: Int, store location: String, environment: [String: String] = [:],
                      partitions: Int = 12, broker shared: TestBroker? = nil) async throws -> ProcessorFleet {
        let broker: TestBroker
        if let shared { broker = shared } else { broker = try await TestBroker.start() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pushline-fleet-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let group = "pushline-fleet-" + UUID().uuidString
        let ports = (0..<count).map { _ in TestBroker.freePort() }
        let processors = ports.enumerated().map { index, port in
            ServiceProcess(name: "pushline-processor", environment: [
                "PUSHLINE_PROCESSOR_PORT": "\(port)",
                "PUSHLINE_KAFKA_BROKERS": broker.bootstrapServers,
                "PUSHLINE_STORE": location,
                "PUSHLINE_GROUP_ID": group,
                "PUSHLINE_PARTITIONS": "\(partitions)",
                "PUSHLINE_KAFKA_SESSION_TIMEOUT_MS": "6000",
                "PUSHLINE_KAFKA_MAX_POLL_INTERVAL_MS": "60000",
                "PUSHLINE_LOG_LEVEL": "info",
                // Webhook receivers in tests listen on 127.0.0.1.
                "PUSHLINE_WEBHOOK_ALLOW_PRIVATE_TARGETS": "true",
            ].merging(environment) { $1 }, logDirectory: directory.appendingPathComponent("p\(index)"))
        }
        let store = try await ProjectionStoreFactory.open(location, logger: Logger(label: "fleet"))
        let fleet = ProcessorFleet(broker: broker, store: store, storeLocation: location, processors: processors, ports: ports,
                                   groupId: group, directory: directory, ownsBroker: shared == nil)
        do {
            for (processor, port) in zip(processors, ports) {
                try FileManager.default.createDirectory(at: processor.logURL.deletingLastPathComponent(), withIntermediateDirectories: true)
                try processor.start()
                try await processor.waitHealthy("http://127.0.0.1:\(port)/health")
            }
        } catch {
            await fleet.stop()
            throw error
        }
        return fleet
    }

    private init(broker: TestBroker, store: any ProjectionStore, storeLocation: String, processors: [ServiceProcess], ports: [Int],
                 groupId: String, directory: URL, ownsBroker: Bool) {
        self.groupId = groupId
        self.ownsBroker = ownsBroker
        self.broker = broker
        self.store = store
        self.storeLocation = storeLocation
        self.processors = processors
        self.ports = ports
        self.directory = directory
    }

    /// Records applied so far, over every command topic (the sum of the stored offsets).
    func applied() async throws -> Int {
        Int(try await store.offsets(topics: topics.commandTopics).values.reduce(0, +))
    }

    /// Waits until the stored offsets reach the end of every partition of the command topics, and
    /// no app part is held beside a loop.
    func waitAllApplied(timeout: Duration) async throws {
        let ends = try await KafkaAdmin.endOffsets(topics: topics.commandTopics, bootstrapServers: broker.bootstrapServers)
        do {
            try await eventually("every command applied", timeout: timeout) {
                let stored = try await self.store.offsets(topics: self.topics.commandTopics)
                // At or past the end read before: progress marks may follow. An app part still held
                // beside a loop (after a send read in pages) has commands left to apply.
                let held = try await self.store.heldLanes(topics: self.topics.commandTopics)
                return held.isEmpty
                    && ends.allSatisfy { tp, end in end == 0 || (stored[PartitionKey(topic: tp.topic, partition: tp.partition)] ?? 0) >= end }
            }
        } catch {
            throw TestFailure("\(error)\n\(logs())")
        }
    }

    /// The shards each running processor reports lag for on its `/metrics` (those it applies),
    /// by its `client.id`, `pushline-processor-<pid>`.
    func shardsByClient() async throws -> [String: [Int32]] {
        var out: [String: [Int32]] = [:]
        for (processor, port) in zip(processors, ports) {
            guard let pid = processor.pid else { continue }
            let metrics = try await HTTPClientHelpers.get("http://127.0.0.1:\(port)/metrics").text
            var shards = Set<Int32>()
            for line in metrics.split(separator: "\n") where line.hasPrefix("pushline_processor_consumer_lag{") {
                if let start = line.range(of: "partition=\""), let end = line[start.upperBound...].firstIndex(of: "\""),
                   let partition = Int32(line[start.upperBound..<end]) { shards.insert(partition) }
            }
            out["pushline-processor-\(pid)"] = shards.sorted()
        }
        return out
    }

    /// The processors that hold shards now, by their logs.
    func holders() -> [Int] {
        processors.indices.filter { index in
            let log = (try? String(contentsOf: processors[index].logURL, encoding: .utf8)) ?? ""
            guard let took = log.range(of: "took shards", options: .backwards) else { return false }
            return log.range(of: "gave shards up", options: .backwards).map { $0.lowerBound < took.lowerBound } ?? true
        }
    }

    /// The records each processor applied since it started (its
    /// `pushline_processor_records_consumed_total`); nil for one that is not running.
    func appliedByEach() async -> [Double?] {
        var out: [Double?] = []
        for port in ports {
            out.append(try? await HTTPClientHelpers.metric("pushline_processor_records_consumed_total", of: "http://127.0.0.1:\(port)"))
        }
        return out
    }

    /// Every processor's whole log.
    func fullLogs() -> String {
        processors.map { (try? String(contentsOf: $0.logURL, encoding: .utf8)) ?? "" }.joined(separator: "\n")
    }

    func logs() -> String {
        processors.enumerated().map { "--- processor \($0.offset) ---\n\($0.element.tail())" }.joined(separator: "\n")
    }

    func stop() async {
        for processor in processors { _ = try? await processor.stop() }
        if ownsBroker { try? await broker.stop() }
        try? FileManager.default.removeItem(at: directory)
    }
}
