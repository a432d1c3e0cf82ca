import Contracts
import Foundation
import Kafka
import Logging
import Projections
import ProjectionStores
import Synchronization
import TestSupport
import WireCodec
import XCTest
@testable import Handlers
@testable import Processor

/// Holds every publish of records until it is opened, and keeps what was published.
private final class GatedOutbound: OutboundPublisher {
    private struct State {
        var open = false
        var waiting: [CheckedContinuation<Void, Never>] = []
        var messages: [OutboundMessage] = []
    }

    private let state = Mutex(State())
    var messages: [OutboundMessage] { state.withLock { $0.messages } }
    var waiting: Int { state.withLock { $0.waiting.count } }

    func publish(_ messages: [OutboundMessage]) async throws {
        guard !messages.isEmpty else { return }
        await withCheckedContinuation { (go: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state in
                if !state.open { state.waiting.append(go) }
                return state.open
            }
            if now { go.resume() }
        }
        state.withLock { $0.messages += messages }
    }

    func open() {
        let waiting = state.withLock { state in
            state.open = true
            defer { state.waiting = [] }
            return state.waiting
        }
        for go in waiting { go.resume() }
    }
}

/// A send to an audience is published beside the live loop (`ApplyLoop.Holds`): while it is
/// sent, only its app part waits, and another app's commands in the same partitions are applied;
/// a processor that stops meanwhile leaves the hold to the next, which applies the app's
/// commands once. Against a real broker and a real SQLite store, with every command topic in one
/// partition, as the stack `make run` starts has them.
final class StreamBesideTests: ApplierTestCase {
    private let org = UUID(), tokenHash = ApiTokens.hash("t")

    func testWhileABroadcastIsSentOnlyItsAppWaitsAndTheNextProcessorTakesTheHoldOver() async throws {
        try await TestBroker.with { try await run($0) }
    }

    private func encoded<C: Command>(_ command: C, at time: Date) throws -> EncodedCommand {
        try EncodedCommand(command, topics: topics, id: UUID(), at: time, encoder: WireJSON.encoder())
    }

    /// Produces `commands`, then a progress mark at `marksAt` in each partition `marked` of every command topic.
    private func produce(_ commands: [(EncodedCommand, partition: Int32)], marksAt: Date, marked: [Int32] = [0],
                         brokers: String) async throws {
        var configuration = KafkaProducerConfiguration()
        configuration.bootstrapServers = brokers
        let producer = try KafkaProducer(configuration: configuration, logger: Logger(label: "test"))
        var records = commands.map { c, partition in
            KafkaProducerRecord(topic: c.topic, key: c.key, value: c.value, headers: RecordHeaders(type: c.type, version: c.version).fields,
                                partition: partition)
        }
        // Every lane shows it holds nothing earlier than `marksAt`, as a live processor's marks would.
        for topic in topics.commandTopics {
            for partition in marked {
                records.append(KafkaProducerRecord(topic: topic, key: nil, value: ProgressMark.value(at: marksAt),
                                                   headers: ProgressMark.headers.fields, partition: partition))
            }
        }
        do {
            for record in records { _ = try await producer.send([record]) }
        } catch {
            await producer.shutdown()
            throw error
        }
        await producer.shutdown()
    }

    private func registration(_ app: UUID, token: String) -> DeviceRegistrationRequested {
        DeviceRegistrationRequested(registrationRequestId: UUID(), orgId: org, mobileAppId: app, userId: "u", platform: .ios,
                                    deviceToken: token, apiTokenHash: tokenHash, trackStatus: false, callback: nil, tags: ["vip"])
    }

    /// Polls `store` until `app` holds `token`; false after a minute.
    private func waitForDevice(_ store: any BatchStore, app: UUID, token: String) async throws -> Bool {
        for _ in 0..<600 {
            if try await store.devices(app: app, after: nil, limit: 100).contains(where: { $0.deviceToken == token }) { return true }
            try await Task.sleep(for: .milliseconds(100))
        }
        return false
    }

    private func run(_ broker: TestBroker) async throws {
        try await KafkaAdmin.createTopics(topics.commandTopics.map { ($0, 1) }, bootstrapServers: broker.bootstrapServers)
        let path = "sqlite:" + directory.appendingPathComponent("beside.sqlite").path
        let store = try await ProjectionStoreFactory.open(path, logger: Logger(label: "test"))
        let log = Logger(label: "test")
        let outbound = GatedOutbound()
        let applier = BatchApplier(store: store, outbound: outbound, verifier: TokenFormatVerifier(), logger: log,
                                   devicePageSize: 2)
        let loop = ApplyLoop(store: store, topics: topics.commandTopics, applier: applier, unseenStart: 0, maxBatch: 500,
                             marks: nil, streamsBeside: true, logger: log)

        // Apps A and B in the one shard: five devices of A, a broadcast to them, then one more device.
        let a = UUID(), b = UUID()
        let tokens = (0..<5).map { String(format: "%064x", $0) }, late = String(repeating: "e", count: 64)
        let send = NotificationRequested(deliveryId: UUID(), mobileAppId: a, target: NotificationTarget(audience: "tag:vip"),
                                         content: NotificationContent(title: "Goal"), managed: false, businessId: nil, tracking: true,
                                         kind: .alert)
        var first: [(EncodedCommand, partition: Int32)] = [
            (try encoded(AppCreated(orgId: org, mobileAppId: a, name: "a", tokenId: UUID(), tokenHash: tokenHash), at: at), 0),
            (try encoded(AppCreated(orgId: org, mobileAppId: b, name: "b", tokenId: UUID(), tokenHash: tokenHash), at: at), 0),
        ]
        for token in tokens { first.append((try encoded(registration(a, token: token), at: at.addingTimeInterval(1)), 0)) }
        first.append((try encoded(send, at: at.addingTimeInterval(2)), 0))
        first.append((try encoded(registration(a, token: late), at: at.addingTimeInterval(3)), 0))
        try await produce(first, marksAt: at.addingTimeInterval(4), brokers: broker.bootstrapServers)

        let partitions = topics.commandTopics.map { PartitionKey(topic: $0, partition: 0) }
        let configuration = KafkaConsumerConfiguration(bootstrapServers: broker.bootstrapServers, groupId: "beside")
        let consumer = try await loop.makeConsumer(configuration, partitions: partitions)
        let running = Task { for try await batch in consumer.batches() { _ = try await loop.apply(batch, consumer: consumer) } }

        // The broadcast is being published (held at the gate), and B's registration arrives after it.
        var published = false
        for _ in 0..<600 where !published {
            published = outbound.waiting > 0
            if !published { try await Task.sleep(for: .milliseconds(100)) }
        }
        XCTAssertTrue(published, "the broadcast started")
        let bToken = String(repeating: "b", count: 64)
        try await produce([(try encoded(registration(b, token: bToken), at: at.addingTimeInterval(5)), 0)],
                          marksAt: at.addingTimeInterval(6), brokers: broker.bootstrapServers)

        let applied = try await waitForDevice(store, app: b, token: bToken)
        XCTAssertTrue(applied, "another app's registration in the same partitions was applied while the broadcast was being sent")
        let aDevices = try await store.devices(app: a, after: nil, limit: 100).map(\.deviceToken)
        XCTAssertFalse(aDevices.contains(late), "the broadcasting app's later command waits for it")
        let notification = PartitionKey(topic: topics.notification, partition: 0)
        let registrationLane = PartitionKey(topic: topics.registration, partition: 0)
        let offsets = try await store.offsets(topics: topics.commandTopics)
        XCTAssertGreaterThan(offsets[notification] ?? 0, 0, "the partitions' offsets are past the send")
        XCTAssertGreaterThanOrEqual(offsets[registrationLane] ?? 0, 8, "and past A's later registration (5) and B's (7)")
        let held = HeldApp(app: a, part: 0)
        let rows = try await store.heldLanes(topics: topics.commandTopics)
        XCTAssertEqual(Set(rows.map(\.lane)), Set(partitions), "A is held on every lane of its shard")
        XCTAssertEqual(rows.first { $0.lane == notification }?.next, 0, "from its send")
        XCTAssertEqual(rows.first { $0.lane == registrationLane }?.next, 5, "and its later registration")
        XCTAssertTrue(rows.allSatisfy { $0.held == held })
        XCTAssertTrue(loop.heldProgress.contains { $0.runsSend }, "its send counts as making progress while it runs (`ProgressWatch`)")
        XCTAssertGreaterThan(applier.streamSteps.withLock { $0 }, 0, "it read its first page")

        // The processor stops, as if it crashed, in the middle of the send: nothing of A's is
        // committed. The next one takes the hold over from the store.
        running.cancel()
        _ = try? await running.value
        await consumer.close()
        let stopped = try await store.offsets(topics: topics.commandTopics)
        let nextOutbound = RecordingOutbound()
        let nextStore = try await ProjectionStoreFactory.open(path, logger: log)
        let nextLoop = ApplyLoop(store: nextStore, topics: topics.commandTopics,
                                 applier: BatchApplier(store: nextStore, outbound: nextOutbound, verifier: TokenFormatVerifier(), logger: log,
                                                       devicePageSize: 2),
                                 unseenStart: 0, maxBatch: 500, marks: nil, streamsBeside: true, logger: log)
        let nextConsumer = try await nextLoop.makeConsumer(configuration, partitions: partitions)
        let next = Task { for try await batch in nextConsumer.batches() { _ = try await nextLoop.apply(batch, consumer: nextConsumer) } }

        let lateApplied = try await waitForDevice(nextStore, app: a, token: late)
        XCTAssertTrue(lateApplied, "the next processor applied A's held commands")
        for _ in 0..<600 where !(try await nextStore.heldLanes(topics: topics.commandTopics).isEmpty) {
            try await Task.sleep(for: .milliseconds(100))
        }
        let left = try await nextStore.heldLanes(topics: topics.commandTopics)
        XCTAssertEqual(left, [], "once drained, the hold is let go")
        XCTAssertEqual(nextOutbound.messages.map(\.deviceToken).sorted(), tokens,
                       "the broadcast reached the devices before it in the event order, once each")
        let delivery = try await nextStore.delivery(app: a, deliveryId: send.deliveryId)
        XCTAssertEqual(delivery?.sent, 5)
        let nextOffsets = try await nextStore.offsets(topics: topics.commandTopics)
        XCTAssertEqual(nextOffsets, stopped, "the others' records were not applied again")

        // The first processor's send, still at the gate, finds its rows gone: it commits nothing.
        outbound.open()
        for _ in 0..<100 where outbound.messages.count < tokens.count { try await Task.sleep(for: .milliseconds(50)) }
        try await Task.sleep(for: .milliseconds(300))
        let after = try await nextStore.delivery(app: a, deliveryId: send.deliveryId)
        XCTAssertEqual(after?.sent, 5, "a stale send's commit is refused by the rows' compare-and-set")

        // A's later commands flow with the others' again.
        let again = String(repeating: "f", count: 64)
        try await produce([(try encoded(registration(a, token: again), at: at.addingTimeInterval(7)), 0)],
                          marksAt: at.addingTimeInterval(8), brokers: broker.bootstrapServers)
        let againApplied = try await waitForDevice(nextStore, app: a, token: again)
        XCTAssertTrue(againApplied)
        XCTAssertEqual(nextLoop.heldProgress.count, 0)

        next.cancel()
        _ = try? await next.value
        await nextLoop.finishHolds()
        await loop.finishHolds()
        await nextConsumer.close()
    }
}
