import Contracts
import Foundation
import Synchronization
import TestSupport
import WireCodec
import XCTest

/// With the broker gone, ingest never answers a false 2xx: it answers 503 + Retry-After once the
/// acknowledgement bound passes, and its health check says unavailable
/// (docs/ARCHITECTURE.md#acknowledged-means-durable).
final class BrokerOutageTests: XCTestCase {
    func testIngestAnswers503WithRetryAfterWhenTheBrokerIsDown() async throws {
        let stack = try await PushlineStack.start()
        do {
            let app = try await stack.createApp()
            let registration = DeviceRegistrationAPI.Registration(MobileAppId: app.mobileAppId.uuidString, UserId: "u",
                                                                  ApiToken: app.apiToken, ApnsDeviceToken: Tokens.apns(1))
            let url = stack.registrationURL(org: app.orgId, "devices")
            let before = try await HTTPClientHelpers.post(url, json: registration)
            XCTAssertEqual(before.status, 202)

            try await stack.processor.stop()
            try await stack.broker.stop()
            let during = try await HTTPClientHelpers.post(url, json: registration)
            XCTAssertEqual(during.status, 503, during.text)
            XCTAssertEqual(during.headers.first(name: "Retry-After"), "1")
            let health = try await HTTPClientHelpers.get("\(stack.ingestURL)/health")
            XCTAssertEqual(health.status, 503)
        } catch {
            await stack.stop()
            throw error
        }
        await stack.stop()
    }

    /// Eight clients keep registering devices while the (durable) broker is stopped and
    /// started again on the same port and log. Ingest answers only 2xx or 503 + Retry-After,
    /// never a 2xx while the broker is down, and 2xx again once it is back, without a restart;
    /// the processor survives the outage too. In the end every 2xx registration is a device and
    /// a Success status, and the store holds exactly the registrations the topic holds: a 503'd
    /// request may have landed after all (its client cannot know), an acknowledged one never lacks.
    func testBrokerStoppedUnderLoadAnswers503ThenRecoversAndEvery2xxIsApplied() async throws {
        // The durable broker keeps its log in files behind localbucket, a one-threaded S3 server,
        // and every fetch lists a partition's files there: the processor's default 50 ms fetch
        // wait kept it so busy that the processor applied a few records a second. Waiting up to
        // 500 ms per fetch applies ~20 (one-record) batches a second, which bounds this test's
        // volume: the clients pause between requests, and the phases move on after 50 answers.
        let stack = try await PushlineStack.start(processorEnvironment: ["PUSHLINE_KAFKA_PROPERTIES": "fetch.wait.max.ms=500"],
                                                  ingestEnvironment: ["PUSHLINE_PRODUCE_TIMEOUT_MS": "1000"], durableBroker: true)
        let load = RegistrationLoad()
        var workers: Task<Void, Never>?
        do {
            let app = try await stack.createApp()
            let ingestPid = stack.ingest.pid, processorPid = stack.processor.pid
            workers = load.start(clients: 8, stack: stack, app: app)

            try await eventually("50 registrations accepted before the outage") { load.count(.accepted) >= 50 }
            let stopping = ContinuousClock.now
            try await stack.broker.stopKeepingLog()
            let outageStart = ContinuousClock.now
            try await eventually("16 registrations refused while the broker is down") {
                load.count(.unavailable, startedAfter: outageStart) >= 16
            }
            let outageEnd = ContinuousClock.now
            try await stack.broker.startAgain()
            let restarted = ContinuousClock.now
            try await eventually("50 registrations accepted after the broker came back", timeout: .seconds(60)) {
                load.count(.accepted, startedAfter: restarted) >= 50
            }
            load.stop()
            await workers?.value
            workers = nil

            let outcomes = load.outcomes
            let accepted = outcomes.filter { $0.kind.isAccepted }
            let refused = outcomes.filter { if case .unavailable = $0.kind { true } else { false } }
            let unexpected = outcomes.filter {
                switch $0.kind {
                case .accepted, .unavailable: false
                case .other, .transportError: true
                }
            }
            XCTAssertEqual(unexpected.count, 0, "only 2xx and 503 are answered, and ingest stays reachable: "
                           + "\(unexpected.prefix(5).map(\.kind))\n\(stack.logs())")
            XCTAssertTrue(refused.allSatisfy { $0.kind == .unavailable(retryAfter: "1") }, "every 503 carries Retry-After: 1")
            let falseAccepts = accepted.filter { $0.started > outageStart && $0.ended < outageEnd }
            XCTAssertEqual(falseAccepts.count, 0, "2xx answered while the broker was down: \(falseAccepts.map(\.token))")

            // Nothing is produced any more but the processor's progress marks: read the topic
            // whole, then wait for the processor to store, for every partition, an offset at or
            // past the partition's end as read.
            let topic = try await registrationsInTopic(stack, app: app.mobileAppId)
            var stored: [Int: Int64] = [:]
            do {
                // A bound so that the test ends, not a timing claim. The processor applies in one order
                // over every partition, and after the restart this durable broker answers fetches
                // of a few partitions at a time, so the catch-up takes longer than the outage.
                try await eventually("the processor applied the registration topic up to its end", timeout: .seconds(240)) {
                    guard stack.processor.isRunning else { throw TestFailure("the processor exited:\n\(stack.logs())") }
                    stored = try await self.storedOffsets(stack)
                    return topic.ends.allSatisfy { partition, end in (stored[partition] ?? 0) >= end }
                }
            } catch {
                XCTFail("stored offsets \(stored.sorted { $0.key < $1.key }), topic ends \(topic.ends.sorted { $0.key < $1.key })")
                throw error
            }

            let appId = app.mobileAppId.uuidString.lowercased()
            let statuses = try await stack.sqlite("SELECT request_id, status FROM registration_status WHERE app_id = '\(appId)'")
                .reduce(into: [UUID: String]()) { map, line in
                    let parts = line.split(separator: "|", maxSplits: 1).map(String.init)
                    if parts.count == 2, let id = UUID(uuidString: parts[0]) { map[id] = parts[1] }
                }
            let devices = Set(try await stack.sqlite("SELECT device_token FROM devices WHERE app_id = '\(appId)'"))

            var missing: [String] = []
            for outcome in accepted {
                guard case .accepted(let id) = outcome.kind else { continue }
                if statuses[id] != "Success" || !devices.contains(outcome.token) {
                    missing.append("\(outcome.token) \(id): status \(statuses[id] ?? "none"), device \(devices.contains(outcome.token))")
                }
            }
            XCTAssertEqual(missing.count, 0, "2xx registrations not applied: \(missing.prefix(10))\n\(stack.logs())")
            XCTAssertEqual(statuses.count, topic.requestIds.count, "one stored status per distinct registration in the topic")
            XCTAssertEqual(Set(statuses.keys), topic.requestIds)
            XCTAssertEqual(devices, topic.tokens, "one device per distinct registration in the topic")
            XCTAssertTrue(statuses.values.allSatisfy { $0 == "Success" }, "every registration succeeded once")
            XCTAssertEqual(topic.records, topic.requestIds.count, "no registration is in the topic twice")
            XCTAssertGreaterThanOrEqual(statuses.count, accepted.count)
            let landedDespite503 = Set(refused.map(\.token)).intersection(devices).count
            XCTAssertEqual(statuses.count, accepted.count + landedDespite503,
                           "every applied registration is one a client sent (2xx, or 503 that landed anyway)")

            XCTAssertTrue(stack.processor.isRunning && stack.processor.pid == processorPid, "the processor survived the outage\n\(stack.logs())")
            XCTAssertTrue(stack.ingest.isRunning && stack.ingest.pid == ingestPid, "ingest survived the outage\n\(stack.logs())")
            let health = try await HTTPClientHelpers.get("\(stack.processorURL)/health")
            XCTAssertEqual(health.status, 200, "processor health after the outage")
            let refusedBy = (beforeStop: refused.count(where: { $0.started < stopping }),
                             stoppingOrDown: refused.count(where: { $0.started >= stopping && $0.started < restarted }),
                             afterRestart: refused.count(where: { $0.started >= restarted }))
            print("""
                broker outage under load: \(outcomes.count) requests, \(accepted.count) 2xx, \(refused.count) 503 \
                (\(refusedBy.beforeStop) started before the stop, \(refusedBy.stoppingOrDown) while stopping or down, \
                \(refusedBy.afterRestart) after the restart), \(unexpected.count) other; applied \(statuses.count) \
                (\(landedDespite503) of them answered 503); topic records \(topic.records)
                """)
        } catch {
            load.stop()
            await workers?.value
            print("answers: \(load.summary)\n\(stack.logs())")
            await stack.stop()
            throw error
        }
        await stack.stop()
    }

    /// The durable broker raises a partition's end before it stores the batch, so a broker
    /// stopped in between leaves an offset that no record ever fills: the partition's end is one
    /// past its last record. The processor, waiting for that offset on a partition nobody writes
    /// to, held every later command back until something else landed there (seen after a broker
    /// restart under load). It marks such a partition too, and what comes later is decided.
    func testAGapLeftAtAPartitionsEndByAStoppedBrokerHoldsNothingBack() async throws {
        let stack = try await PushlineStack.start(durableBroker: true)
        do {
            let app = try await stack.createApp()
            let url = stack.registrationURL(org: app.orgId, "devices")
            func register(_ n: Int) async throws -> UUID {
                let registration = DeviceRegistrationAPI.Registration(MobileAppId: app.mobileAppId.uuidString, UserId: "u",
                                                                      ApiToken: app.apiToken, ApnsDeviceToken: Tokens.apns(n))
                let answer = try await HTTPClientHelpers.post(url, json: registration,
                                                              headers: [DeviceRegistrationAPI.trackRegistrationHeader: "true"])
                XCTAssertEqual(answer.status, 202, answer.text)
                return try answer.decode(DeviceRegistrationAPI.RegistrationAccepted.self).RegistrationRequestId
            }
            let first = try await register(1)
            let before = try await stack.decidedStatuses(org: app.orgId, app: app.mobileAppId, token: app.apiToken, ids: [first])
            XCTAssertEqual(before.map(\.Status), [.Success])
            // The first command had every other partition marked, so each has an end to raise.
            try await stack.broker.stopKeepingLog()
            try stack.broker.leaveGapAtEnd(topic: stack.topics.tracking, partition: 0)
            try await stack.broker.startAgain()

            let second = try await register(2)
            let after = try await stack.decidedStatuses(org: app.orgId, app: app.mobileAppId, token: app.apiToken, ids: [second],
                                                        timeout: .seconds(120))
            XCTAssertEqual(after.map(\.Status), [.Success], "\(stack.logs())")
            XCTAssertTrue(stack.processor.isRunning)
        } catch {
            print(stack.logs())
            await stack.stop()
            throw error
        }
        await stack.stop()
    }

    // MARK: - Reading the topic and the store

    private struct TopicRegistrations {
        var records = 0
        var requestIds: Set<UUID> = []
        var tokens: Set<String> = []
        /// Partition → the offset after its last record (none for an empty partition).
        var ends: [Int: Int64] = [:]
    }

    /// Every registration command of `app` in the registration topic, read with kcat (progress marks skipped).
    private func registrationsInTopic(_ stack: PushlineStack, app: UUID) async throws -> TopicRegistrations {
        let out = try await stack.broker.kcat(["-C", "-t", stack.topics.registration, "-o", "beginning", "-e", "-q", "-f", "%p %o %s\\n"])
        var result = TopicRegistrations()
        let decoder = WireJSON.decoder()
        for line in out.split(separator: "\n") {
            let parts = line.split(separator: " ", maxSplits: 2)
            guard parts.count == 3, let partition = Int(parts[0]), let offset = Int64(parts[1]) else {
                throw TestFailure("unexpected kcat line: \(line)")
            }
            result.ends[partition] = max(result.ends[partition] ?? 0, offset + 1)
            // The processor's progress marks share the topic.
            if ProgressMark.at(in: Data(parts[2].utf8)) != nil { continue }
            let envelope = try decoder.decode(Envelope<DeviceRegistrationRequested>.self, from: Data(parts[2].utf8))
            guard envelope.payload.mobileAppId == app else { continue }
            result.records += 1
            result.requestIds.insert(envelope.payload.registrationRequestId)
            result.tokens.insert(envelope.payload.deviceToken)
        }
        return result
    }

    /// The processor's stored next offset of each partition of the registration topic.
    private func storedOffsets(_ stack: PushlineStack) async throws -> [Int: Int64] {
        let lines = try await stack.sqlite(
            "SELECT \"partition\", next_offset FROM partition_offsets WHERE topic = '\(stack.topics.registration)'")
        var offsets: [Int: Int64] = [:]
        for line in lines {
            let parts = line.split(separator: "|")
            if parts.count == 2, let p = Int(parts[0]), let o = Int64(parts[1]) { offsets[p] = o }
        }
        return offsets
    }
}

/// Clients registering one device per request, each with a new device token and status
/// tracking, until stopped; every answer is recorded with when its request started and ended.
private final class RegistrationLoad: Sendable {
    enum Kind: Sendable, Equatable {
        case accepted(UUID)
        case unavailable(retryAfter: String?)
        case other(Int, String)
        case transportError(String)

        var isAccepted: Bool { if case .accepted = self { true } else { false } }
    }

    enum Category { case accepted, unavailable }

    struct Outcome: Sendable {
        var token: String
        var started: ContinuousClock.Instant
        var ended: ContinuousClock.Instant
        var kind: Kind
    }

    private let log = Mutex<[Outcome]>([])
    private let next = Atomic<Int>(0)
    private let stopped = Atomic<Bool>(false)
    private let salt = UInt32.random(in: 0...UInt32.max)

    var outcomes: [Outcome] { log.withLock { $0 } }

    /// How many answers of each kind, for failure messages.
    var summary: String {
        var counts: [String: Int] = [:]
        for outcome in outcomes {
            let key = switch outcome.kind {
            case .accepted: "2xx"
            case .unavailable: "503"
            case .other(let status, _): "\(status)"
            case .transportError: "transport error"
            }
            counts[key, default: 0] += 1
        }
        return counts.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", ")
    }

    func count(_ category: Category, startedAfter instant: ContinuousClock.Instant? = nil) -> Int {
        log.withLock { outcomes in
            outcomes.count(where: { outcome in
                if let instant, outcome.started < instant { return false }
                switch (category, outcome.kind) {
                case (.accepted, .accepted), (.unavailable, .unavailable): return true
                default: return false
                }
            })
        }
    }

    func stop() { stopped.store(true, ordering: .relaxed) }

    /// Starts `clients` concurrent clients; the task ends when all of them stopped.
    func start(clients: Int, stack: PushlineStack, app: AdminAPI.AppCreatedAnswer) -> Task<Void, Never> {
        let url = stack.registrationURL(org: app.orgId, "devices")
        return Task {
            await withTaskGroup(of: Void.self) { group in
                for client in 0..<clients {
                    group.addTask { await self.run(client: client, url: url, app: app) }
                }
            }
        }
    }

    private func run(client: Int, url: String, app: AdminAPI.AppCreatedAnswer) async {
        while !stopped.load(ordering: .relaxed) {
            let n = next.add(1, ordering: .relaxed).newValue
            let token = Tokens.apns(n, salt: salt)
            let registration = DeviceRegistrationAPI.Registration(MobileAppId: app.mobileAppId.uuidString, UserId: "client-\(client)",
                                                                  ApiToken: app.apiToken, ApnsDeviceToken: token)
            let started = ContinuousClock.now
            let kind: Kind
            do {
                let answer = try await HTTPClientHelpers.post(url, json: registration,
                                                              headers: [DeviceRegistrationAPI.trackRegistrationHeader: "true"])
                switch answer.status {
                case 200..<300:
                    if let id = try? answer.decode(DeviceRegistrationAPI.RegistrationAccepted.self).RegistrationRequestId {
                        kind = .accepted(id)
                    } else {
                        kind = .other(answer.status, "2xx without a RegistrationRequestId: \(answer.text)")
                    }
                case 503: kind = .unavailable(retryAfter: answer.headers.first(name: "Retry-After"))
                default: kind = .other(answer.status, answer.text)
                }
            } catch {
                kind = .transportError(String(describing: error))
            }
            let outcome = Outcome(token: token, started: started, ended: .now, kind: kind)
            log.withLock { $0.append(outcome) }
            // ~30 requests a second from 8 clients: load, yet few enough records for the durable
            // broker to hand them to the processor within seconds (see the test).
            try? await Task.sleep(for: .milliseconds(250))
        }
    }
}
