import Contracts
import Foundation
import Kafka
import Logging
import Projections
import SQLiteProjections
import TestSupport
import XCTest

/// The differential test of "the store is a function of the log": a random history of every
/// kind of command (`RandomHistory`), produced in bursts into one broker while three deployments
/// apply it live — one processor on SQLite, three on PostgreSQL of which the active one is
/// killed mid-stream, and (once it is all written) one started late on a fresh store over the
/// whole backlog — then rebuilds: from the command topics, and restores from the changelog of
/// each deployment. Every store must hold the same rows.
///
/// The deployments share one log on purpose: the progress marks any of them appends are part of
/// the log the others read, as they would be in production. The seed is random and printed;
/// `PUSHLINE_TEST_SEED=<seed>` runs one history again.
final class RandomHistoryTests: XCTestCase {
    private var fleets: [ProcessorFleet] = []
    private var broker: TestBroker?
    /// The decision rules every deployment and rebuild of the history's log takes:
    /// `PUSHLINE_APP_PARTS` of the log, and times to live of statuses and acks short enough that
    /// pruning runs all through the history (its commands are 20 ms of command time apart).
    private var partsSetting: [String: String] = [:]

    override func tearDown() async throws {
        for fleet in fleets { await fleet.stop() }
        try? await broker?.stop()
    }

    func testEveryDeploymentAndARebuildOfARandomHistoryHoldTheSameRows() async throws {
        try await runHistory(durable: false)
    }

    /// The same on the durable broker `make run` starts, whose fetches return few partitions at a
    /// time and whose produce requests are slower: the partitions' records arrive in another
    /// rhythm, the state must not change.
    func testTheSameOnTheDurableBroker() async throws {
        try await runHistory(durable: true)
    }

    /// The same with every app split into three parts (docs/ARCHITECTURE.md#one-app-in-parts):
    /// each command written to the parts it concerns, so that the three processors share each app.
    func testTheSameWithAppsInParts() async throws {
        try await runHistory(durable: false, parts: AppParts(3))
    }

    /// Apps in parts on the durable broker, whose rhythm of partitions differs most.
    func testTheSameWithAppsInPartsOnTheDurableBroker() async throws {
        try await runHistory(durable: true, parts: AppParts(3))
    }

    private func runHistory(durable: Bool, parts: AppParts = .one) async throws {
        let seed = ProcessInfo.processInfo.environment["PUSHLINE_TEST_SEED"].flatMap { UInt64($0) } ?? UInt64.random(in: 1...UInt64(UInt32.max))
        print("RandomHistoryTests seed: \(seed) (PUSHLINE_TEST_SEED=\(seed) repeats this history)\(durable ? " on the durable broker" : "")"
              + (parts.count > 1 ? " with apps in \(parts)" : ""))
        let history = try RandomHistory(seed: seed, parts: parts)
        let broker = try await TestBroker.start(durable: durable)
        self.broker = broker
        let postgres = try await PostgresServer.shared()
        let partsSetting = ["PUSHLINE_APP_PARTS": "\(parts.count)", "PUSHLINE_REGISTRATION_STATUS_TTL_MS": "4000",
                            "PUSHLINE_ACK_TTL_MS": "3000"]
        self.partsSetting = partsSetting

        let one = try await ProcessorFleet.start(processors: 1, store: "sqlite:\(ScaleOutTests.temporaryPath("history-one"))",
                                                 environment: ["PUSHLINE_MAX_BATCH": "50"].merging(partsSetting) { $1 }, broker: broker)
        fleets.append(one)
        let three = try await ProcessorFleet.start(processors: 3, store: try await postgres.createDatabase("h_\(UInt32.random(in: 0...UInt32.max))"),
                                                   environment: ["PUSHLINE_MAX_BATCH": "20"].merging(partsSetting) { $1 }, broker: broker)
        fleets.append(three)

        // In bursts, so that the live deployments apply while it is written; the active processor
        // of the three is killed halfway.
        let bursts = stride(from: 0, to: history.commands.count, by: 40).map { Array(history.commands[$0..<min($0 + 40, history.commands.count)]) }
        for (index, burst) in bursts.enumerated() {
            try await MixedStream.produce(burst, brokers: broker.bootstrapServers)
            if index == bursts.count / 2 {
                try await eventually("one of the three holds shards") { !three.holders().isEmpty }
                try await three.processors[three.holders()[0]].stop(signal: SIGKILL)
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        for command in history.closing { try await MixedStream.produce(try command.records(at: Date()), brokers: broker.bootstrapServers) }
        let late = try await ProcessorFleet.start(processors: 1, store: "sqlite:\(ScaleOutTests.temporaryPath("history-late"))",
                                                  environment: ["PUSHLINE_ACCEPT_EXISTING_LOG": "true"].merging(partsSetting) { $1 },
                                                  broker: broker)
        fleets.append(late)
        try await waitUntilEveryStoreHoldsTheWholeLog(of: broker, fleets: [one, three, late], seed: seed)

        let reference = try await one.store.dump()
        // Not registration_status: with its 4 s time to live, the progress marks a slow run writes
        // while it waits move the apps' clocks far enough to prune every status before the dump
        // (equally in every store, which the comparison below checks).
        for table in ["apps", "api_tokens", "devices", "deliveries", "delivery_outcomes"] {
            XCTAssertTrue(reference.hasPrefix("\(table) ") || reference.contains("\n\(table) "), "seed \(seed): the dump has \(table) rows")
        }
        // App callbacks, one job per (delivery, user) whatever the parts (an app in parts merges its parts' shares).
        XCTAssertTrue(reference.split(separator: "\n").contains { $0.hasPrefix("outbox ") && $0.contains(#" kind="app-callback" "#) },
                      "seed \(seed): the dump has app callbacks")
        let keyedDeliveries = reference.split(separator: "\n").filter { $0.hasPrefix("deliveries ") && !$0.contains("idempotency_key=null") }
        XCTAssertFalse(keyedDeliveries.isEmpty, "seed \(seed): the dump has keyed sends")
        XCTAssertTrue(keyedDeliveries.contains { !$0.contains("duplicates=0 conflicts=0") }, "seed \(seed): some keyed send was repeated")
        // Time: local-time and scheduled sends fired (their firings in the log), users' settings.
        let deliveries = reference.split(separator: "\n").filter { $0.hasPrefix("deliveries ") }
        for (what, found) in [("a local-time send", deliveries.contains { !$0.contains("send_at_local=null") }),
                              ("a fired scheduled send", deliveries.contains { $0.contains(#"schedule="fired""#) }),
                              ("a user's settings", reference.contains("\nuser_settings "))] {
            XCTAssertTrue(found, "seed \(seed): the dump has \(what)")
        }
        for part in parts.all {
            for table in ["apps", "deliveries"] {
                XCTAssertTrue(reference.split(separator: "\n").contains { $0.hasPrefix("\(table) ") && $0.split(separator: " ").contains("part=\(part)") },
                              "seed \(seed): the dump has \(table) rows of part \(part)")
            }
        }
        ScaleOutTests.assertSameDump(try await three.store.dump(), reference, "seed \(seed): 3 processors on PostgreSQL, the active one killed, vs 1 on SQLite")
        ScaleOutTests.assertSameDump(try await late.store.dump(), reference, "seed \(seed): a processor started late over the backlog vs live")
        for (fleet, what) in [(one, "1 on SQLite"), (three, "3 on PostgreSQL"), (late, "late")] {
            try await ScaleOutTests.assertNamesIndexed(fleet.store, "seed \(seed): \(what)")
        }
        let outbound = try await outboundRecords(of: broker)
        assertSameOutbound(outbound, reference, seed: seed)

        // Rebuilt by deciding the command topics again, and restored from the changelog: each
        // deployment's own lineage (its last entries perhaps still in its outbox), and the
        // lineage that published last.
        let rebuilds: [(what: String, arguments: [String])] = [
            ("replayed from the commands", ["--from", "commands"]),
            ("replayed from the commands by two processes sharing the shards", ["--from", "commands", "--join", "--batch", "20"]),
            ("restored from the changelog of the one on SQLite", ["--previous", one.storeLocation]),
            ("restored from the changelog of the three on PostgreSQL, one killed", ["--previous", three.storeLocation]),
            ("restored from the changelog of the late one", ["--previous", late.storeLocation]),
            ("restored from the changelog's newest lineage", []),
        ]
        for (index, rebuild) in rebuilds.enumerated() {
            let rebuiltPath = ScaleOutTests.temporaryPath("history-rebuilt-\(index)")
            try await self.rebuild(into: "sqlite:\(rebuiltPath)", arguments: rebuild.arguments, broker: broker,
                                   processes: rebuild.arguments.contains("--join") ? 2 : 1)
            let rebuilt = try SQLiteProjectionStore(path: rebuiltPath, logger: Logger(label: "test"))
            ScaleOutTests.assertSameDump(try await rebuilt.dump(), reference, "seed \(seed): \(rebuild.what) vs live")
            try await ScaleOutTests.assertNamesIndexed(rebuilt, "seed \(seed): \(rebuild.what)")
            await rebuilt.close()
        }
        let afterRebuilds = try await outboundRecords(of: broker)
        XCTAssertEqual(afterRebuilds.count, outbound.count, "seed \(seed): the rebuilds published nothing")
    }

    /// Every record of the outbound topic: those of every live deployment, which share it.
    private func outboundRecords(of broker: TestBroker) async throws -> [(raw: Substring, record: OutboundRecordView)] {
        let out = try await broker.kcat(["-C", "-t", Topics(prefix: "pushline.").outbound, "-o", "beginning", "-e", "-q", "-f", "%s\\n"])
        return try out.split(separator: "\n").map { ($0, try OutboundRecordView.decode(Data($0.utf8))) }
    }

    /// The three live deployments published the same outbound records: the records of one
    /// message id (and device) are byte for byte the same whoever published them, and each
    /// delivery has as many message ids as the store counts it sent (pushes released from a
    /// hold included; dropped, capped and expired ones not).
    private func assertSameOutbound(_ records: [(raw: Substring, record: OutboundRecordView)], _ reference: String, seed: UInt64) {
        let byMessage = Dictionary(grouping: records) { "\($0.record.messageId) \($0.record.deviceToken)" }
        let differing = byMessage.filter { Set($0.value.map(\.raw)).count > 1 }
        XCTAssertTrue(differing.isEmpty, "seed \(seed): records of one message that differ: "
                      + differing.prefix(3).map { $0.value.map(\.raw).joined(separator: "\n  vs ") }.joined(separator: "\n"))
        var sent: [UUID: Int] = [:]
        for line in reference.split(separator: "\n") where line.hasPrefix("deliveries ") {
            let fields = line.split(separator: " ")
            guard let id = fields.first(where: { $0.hasPrefix("delivery_id=") }).flatMap({ UUID(uuidString: String($0.dropFirst(13).dropLast())) }),
                  let count = fields.first(where: { $0.hasPrefix("sent=") }).flatMap({ Int($0.dropFirst(5)) }) else { continue }
            sent[id, default: 0] += count
        }
        var published: [UUID: Set<String>] = [:]
        for (_, record) in records { if let delivery = record.deliveryId { published[delivery, default: []].insert(record.messageId) } }
        XCTAssertFalse(published.isEmpty, "seed \(seed): the history published pushes")
        for (delivery, count) in sent.merging(published.mapValues { _ in 0 }, uniquingKeysWith: { a, _ in a }) {
            XCTAssertEqual(published[delivery]?.count ?? 0, count, "seed \(seed): delivery \(delivery): message ids published vs sent in the store")
        }
    }

    /// Waits until every fleet's store stands at the end of every command partition, twice a
    /// second apart with no new record (progress marks are written while anything waits).
    private func waitUntilEveryStoreHoldsTheWholeLog(of broker: TestBroker, fleets: [ProcessorFleet], seed: UInt64) async throws {
        let topics = Topics(prefix: "pushline.").commandTopics
        var settled: [TopicPartition: Int64] = [:]
        do {
            try await eventually("every deployment applied the whole log (seed \(seed))", timeout: .seconds(300)) {
                let ends = try await KafkaAdmin.endOffsets(topics: topics, bootstrapServers: broker.bootstrapServers)
                for fleet in fleets {
                    let stored = try await fleet.store.offsets(topics: topics)
                    // An app part held beside a loop still has commands to apply.
                    guard try await fleet.store.heldLanes(topics: topics).isEmpty else { return false }
                    guard ends.allSatisfy({ tp, end in end == 0 || stored[PartitionKey(topic: tp.topic, partition: tp.partition)] == end }) else {
                        return false
                    }
                }
                defer { settled = ends }
                return ends == settled
            }
        } catch {
            throw TestFailure("\(error)\n" + fleets.map { $0.logs() }.joined(separator: "\n"))
        }
    }

    /// Runs `processes` rebuilds into `store` at once (with `--join`, they share its shards).
    private func rebuild(into store: String, arguments: [String], broker: TestBroker, processes: Int = 1) async throws {
        let executable = ServiceProcess.binDirectory.appendingPathComponent("pushline-processor").path
        let logs = (0..<processes).map { _ in
            FileManager.default.temporaryDirectory.appendingPathComponent("history-rebuild-\(UUID().uuidString).log").path
        }
        let pids = try logs.map { log in
            try ProcessRunner.spawn(executable, ["rebuild", "--quiet"] + arguments, environment: [
                "PUSHLINE_KAFKA_BROKERS": broker.bootstrapServers, "PUSHLINE_STORE": store, "PUSHLINE_LOG_LEVEL": "info",
            ].merging(partsSetting) { $1 }, standardOutput: log, standardError: log, append: true)
        }
        var failures: [String] = []
        for (pid, log) in zip(pids, logs) {
            let status = await ProcessRunner.waitForExit(pid)
            let output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            try? FileManager.default.removeItem(atPath: log)
            if status != 0 { failures.append("rebuild exited with \(status):\n\(output)") }
        }
        guard failures.isEmpty else { throw TestFailure(failures.joined(separator: "\n")) }
    }
}
