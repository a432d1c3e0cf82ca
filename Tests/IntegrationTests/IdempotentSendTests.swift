import Contracts
import Foundation
import Logging
import Projections
import SQLiteProjections
import Synchronization
import TestSupport
import WireCodec
import XCTest

/// Sends with an `Idempotency-Key` retried as clients retry (docs/API.md#idempotency-keys): through
/// two ingest instances, across a broker outage and a processor killed mid-stream. Every device
/// gets each keyed delivery exactly once, a key's other body reaches no one, every answer names
/// the key's delivery id, and a rebuild of the log gives the same store. The seed is random and
/// printed; `PUSHLINE_TEST_SEED=<seed>` runs one history again.
final class IdempotentSendTests: XCTestCase {
    /// One key's sends: the body every retry repeats byte for byte, and its target.
    private struct Keyed: Sendable {
        var key: String
        var users: [String]
        var body: Data
        /// A body of the same key that must never be sent (to `conflictUser`).
        var conflicting: Data?
    }

    private static let conflictUser = "u-6"

    /// What the clients were answered.
    private final class Answers: Sendable {
        /// Key → the delivery ids answered to its body.
        let ids = Mutex<[String: [String]]>([:])
        /// Key → the answer to its other body.
        let conflicts = Mutex<[String: Int]>([:])
        /// Keys whose client is done.
        let finished = Atomic<Int>(0)
        /// What stopped a client.
        let failure = Mutex<String?>(nil)

        /// The clients' progress; throws what stopped one.
        func done() throws -> Int {
            if let failure = failure.withLock({ $0 }) { throw TestFailure(failure) }
            return finished.load(ordering: .relaxed)
        }

        /// Which ingest each try goes to.
        final class Picks: Sendable {
            private let random: Mutex<SplitMix64>
            init(_ random: SplitMix64) { self.random = Mutex(random) }
            func next() -> Int { random.withLock { $0.next(2) } }
        }
    }

    func testKeyedSendsRetriedThroughTwoIngestsAnOutageAndAProcessorKillReachEachDeviceOnce() async throws {
        let seed = ProcessInfo.processInfo.environment["PUSHLINE_TEST_SEED"].flatMap { UInt64($0) } ?? UInt64.random(in: 1...UInt64(UInt32.max))
        print("IdempotentSendTests seed: \(seed) (PUSHLINE_TEST_SEED=\(seed) repeats this history)")
        // The durable broker, so that it can be stopped and started again under the services; the
        // settings of BrokerOutageTests keep it responsive (see there).
        let stack = try await PushlineStack.start(processorEnvironment: ["PUSHLINE_KAFKA_PROPERTIES": "fetch.wait.max.ms=500"],
                                                  ingestEnvironment: ["PUSHLINE_PRODUCE_TIMEOUT_MS": "1000"], durableBroker: true)
        let secondPort = TestBroker.freePort()
        let second = stack.makeIngest(port: secondPort)
        do {
            try await run(stack: stack, second: second, secondURL: "http://127.0.0.1:\(secondPort)", seed: seed)
        } catch {
            _ = try? await second.stop()
            await stack.stop()
            throw error
        }
        _ = try? await second.stop()
        await stack.stop()
    }

    private func run(stack: PushlineStack, second: ServiceProcess, secondURL: String, seed: UInt64) async throws {
        let app = try await stack.createApp()
        let tokens = try await stack.registerDevices(8, app: app)  // user u-<n> has tokens[n]
        try second.start()
        try await second.waitHealthy("\(secondURL)/health")
        let ingests = [stack.ingestURL, secondURL]

        var random = SplitMix64(seed: seed)
        let keys: [Keyed] = (0..<24).map { n in
            let users = (0..<(1 + random.next(3))).map { _ in "u-\(random.next(6))" }
            let body = try! JSONSerialization.data(withJSONObject: ["userIds": users, "title": "send \(n)"], options: .sortedKeys)
            let conflicting = n % 4 == 0
                ? try! JSONSerialization.data(withJSONObject: ["userIds": [Self.conflictUser], "title": "another \(n)"], options: .sortedKeys)
                : nil
            return Keyed(key: "order-\(seed)-\(n)", users: users, body: body, conflicting: conflicting)
        }
        let answers = Answers()

        /// Posts `body` with `key` until an answer other than 503 comes, through a random ingest each try.
        @Sendable func post(_ body: Data, key: String, pick: @Sendable () -> Int) async throws -> HTTPClientHelpers.Answer {
            while true {
                let answer = try await HTTPClientHelpers.request(.POST, "\(ingests[pick()])/v1/apps/\(app.mobileAppId)/notifications",
                                                                 body: body, headers: ["Authorization": "Bearer \(app.apiToken)",
                                                                                       "Idempotency-Key": key])
                guard answer.status == 503 else { return answer }
                try await Task.sleep(for: .milliseconds(200))
            }
        }

        @Sendable func sendAll() async throws {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (n, keyed) in keys.enumerated() {
                    if n >= 6 { try await group.next() }
                    group.addTask {
                        var random = SplitMix64(seed: seed &+ UInt64(n) &* 7919)
                        let picks = Answers.Picks(SplitMix64(seed: random.next()))
                        let pick: @Sendable () -> Int = { picks.next() }
                        for attempt in 0..<(2 + random.next(3)) {
                            let answer = try await post(keyed.body, key: keyed.key, pick: pick)
                            guard answer.status == 202 else {
                                throw TestFailure("attempt \(attempt) of \(keyed.key) answered \(answer.status): \(answer.text)")
                            }
                            let id = try answer.decode(NotificationAPI.SendAccepted.self).deliveryId
                            answers.ids.withLock { $0[keyed.key, default: []].append(id) }
                            if attempt == 0, let conflicting = keyed.conflicting {
                                let status = try await post(conflicting, key: keyed.key, pick: pick).status
                                answers.conflicts.withLock { $0[keyed.key] = status }
                            }
                            try await Task.sleep(for: .milliseconds(Int64(random.next(300))))
                        }
                        answers.finished.add(1, ordering: .relaxed)
                    }
                }
                try await group.waitForAll()
            }
        }
        let clients = Task {
            do {
                try await sendAll()
            } catch {
                answers.failure.withLock { $0 = "\(error)" }
                throw error
            }
        }
        // Faults while the clients retry: the broker stopped and started on its log, then the
        // processor killed and started again on its store.
        try await eventually("a third of the keys sent", timeout: .seconds(120)) { try answers.done() >= 8 }
        try await stack.broker.stopKeepingLog()
        try await Task.sleep(for: .seconds(2))
        try await stack.broker.startAgain()
        try await eventually("two thirds of the keys sent", timeout: .seconds(120)) { try answers.done() >= 16 }
        try await stack.restartProcessor(signal: SIGKILL)
        try await clients.value

        // A send accepted after every other is applied after them (event order), so once it is
        // applied, so is everything before it.
        let last = try await stack.send(["userIds": ["u-7"], "title": "last"], app: app)
        try await eventually("the last send applied", timeout: .seconds(120)) {
            try await stack.sqlite("SELECT sent FROM deliveries WHERE delivery_id = '\(last.lowercasedString)'") == ["1"]
        }

        let statuses = answers.conflicts.withLock { $0 }
        XCTAssertEqual(statuses.count, keys.filter { $0.conflicting != nil }.count)
        XCTAssertTrue(statuses.values.allSatisfy { $0 == 202 || $0 == 422 },
                      "seed \(seed): another body is 202 before the first is applied, 422 after: \(statuses)")
        let answered = answers.ids.withLock { $0 }
        let records = try await stack.outboundRecords().map(\.record)
        let conflictToken = tokens[6]
        for keyed in keys {
            let id = IdempotencyKeys.deliveryId(app: app.mobileAppId, key: keyed.key)
            XCTAssertEqual(Set(answered[keyed.key] ?? []), [id.lowercasedString], "seed \(seed): every answer to \(keyed.key) names its id")
            let reached = records.filter { $0.deliveryId == id }.map(\.deviceToken)
            let expected = Set(keyed.users).map { tokens[Int($0.dropFirst(2))!] }
            XCTAssertEqual(reached.sorted(), expected.sorted(), "seed \(seed): \(keyed.key) reaches each of its devices once")
            XCTAssertFalse(reached.contains(conflictToken), "seed \(seed): \(keyed.key)'s other body reaches no one")
            let stats = try await stack.stats(id, app: app)
            XCTAssertEqual(stats?.idempotencyKey, keyed.key)
            XCTAssertEqual(stats?.sent, expected.count)
            if statuses[keyed.key] == 202 {
                // Written after the first was acknowledged, so applied after it: counted, not sent.
                XCTAssertGreaterThanOrEqual(stats?.conflicts ?? 0, 1, "seed \(seed): \(keyed.key)'s other body is a conflict")
            }
        }

        // The same log decided again gives the same store.
        let live = try await stack.openStore()
        let liveDump = try await live.dump()
        await live.close()
        let path = stack.directory.appendingPathComponent("rebuilt.sqlite").path
        let output = try await stack.rebuild(store: "sqlite:\(path)", arguments: [])
        let rebuilt = try SQLiteProjectionStore(path: path, logger: Logger(label: "test"))
        ScaleOutTests.assertSameDump(try await rebuilt.dump(), liveDump, "seed \(seed): rebuilt vs live\n\(output)")
        await rebuilt.close()
    }
}
