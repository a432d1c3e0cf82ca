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

/// A send to an audience is published beside the live loop (`ApplyLoop.Streams`): while it is
/// sent, only its shard waits; another shard's commands are applied, against a real broker
/// and a real SQLite store.
final class StreamBesideTests: ApplierTestCase {
    private let org = UUID(), tokenHash = ApiTokens.hash("t")

    func testWhileABroadcastIsSentOnlyItsShardWaits() async throws {
        try await TestBroker.with { try await run($0) }
    }

    private func encoded<C: Command>(_ command: C, at time: Date) throws -> EncodedCommand {
        try EncodedCommand(command, topics: topics, id: UUID(), at: time, encoder: WireJSON.encoder())
    }

    /// Produces `commands`, then a progress mark at `marksAt` in each partition `marked` of every command topic.
    private func produce(_ commands: [(EncodedCommand, partition: Int32)], marksAt: Date, marked: [Int32] = [0, 1],
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
        try await KafkaAdmin.createTopics(topics.commandTopics.map { ($0, 2) }, bootstrapServers: broker.bootstrapServers)
        let store = try await ProjectionStoreFactory.open("sqlite:" + directory.appendingPathComponent("beside.sqlite").path,
                                                          logger: Logger(label: "test"))
        let log = Logger(label: "test")
        let outbound = GatedOutbound()
        let applier = BatchApplier(store: store, outbound: outbound, verifier: TokenFormatVerifier(), logger: log,
                                   devicePageSize: 2)
        let loop = ApplyLoop(store: store, topics: topics.commandTopics, applier: applier, unseenStart: 0, maxBatch: 500,
                             marks: nil, streamsBeside: true, logger: log)

        // App A in shard 0: five devices, a broadcast to them, then one more device. App B in shard 1.
        let a = UUID(), b = UUID()
        let tokens = (0..<5).map { String(format: "%064x", $0) }, late = String(repeating: "e", count: 64)
        let send = NotificationRequested(deliveryId: UUID(), mobileAppId: a, target: NotificationTarget(audience: "tag:vip"),
                                         content: NotificationContent(title: "Goal"), managed: false, businessId: nil, tracking: true,
                                         kind: .alert)
        var first: [(EncodedCommand, partition: Int32)] = [
            (try encoded(AppCreated(orgId: org, mobileAppId: a, name: "a", tokenId: UUID(), tokenHash: tokenHash), at: at), 0),
            (try encoded(AppCreated(orgId: org, mobileAppId: b, name: "b", tokenId: UUID(), tokenHash: tokenHash), at: at), 1),
        ]
        for token in tokens { first.append((try encoded(registration(a, token: token), at: at.addingTimeInterval(1)), 0)) }
        first.append((try encoded(send, at: at.addingTimeInterval(2)), 0))
        first.append((try encoded(registration(a, token: late), at: at.addingTimeInterval(3)), 0))
        try await produce(first, marksAt: at.addingTimeInterval(4), brokers: broker.bootstrapServers)

        let partitions = topics.commandTopics.flatMap { topic in (Int32(0)..<2).map { PartitionKey(topic: topic, partition: $0) } }
        let consumer = try await loop.makeConsumer(KafkaConsumerConfiguration(bootstrapServers: broker.bootstrapServers, groupId: "beside"),
                                                   partitions: partitions)
        let running = Task { for try await batch in consumer.batches() { _ = try await loop.apply(batch, consumer: consumer) } }

        // The broadcast is being published (held at the gate), and B's registration arrives after it.
        var published = false
        for _ in 0..<600 where !published {
            published = outbound.waiting > 0
            if !published { try await Task.sleep(for: .milliseconds(100)) }
        }
        XCTAssertTrue(published, "the broadcast started")
        let bToken = String(repeating: "b", count: 64)
        try await produce([(try encoded(registration(b, token: bToken), at: at.addingTimeInterval(5)), 1)],
                          marksAt: at.addingTimeInterval(6), marked: [1], brokers: broker.bootstrapServers)

        let applied = try await waitForDevice(store, app: b, token: bToken)
        XCTAssertTrue(applied, "the other shard's registration was applied while the broadcast was being sent")
        let aDevices = try await store.devices(app: a, after: nil, limit: 100).map(\.deviceToken)
        XCTAssertFalse(aDevices.contains(late), "the broadcasting shard's later command waits for it")
        let notification = PartitionKey(topic: topics.notification, partition: 0)
        let sendOffset = Int64(0)
        let heldAt = try await store.offsets(topics: topics.commandTopics)[notification]
        XCTAssertTrue(heldAt == nil || heldAt == sendOffset, "the send's offset is not committed before it is sent")
        XCTAssertEqual(loop.streamingPartitions, Set(partitions.filter { $0.partition == 0 }),
                       "its shard's partitions count as making progress while it reads and publishes (`ProgressWatch`)")
        XCTAssertGreaterThan(applier.streamSteps.withLock { $0 }, 0, "it read its first page")

        outbound.open()
        let lateApplied = try await waitForDevice(store, app: a, token: late)
        XCTAssertTrue(lateApplied, "once sent, its shard goes on")
        XCTAssertEqual(outbound.messages.map(\.deviceToken).sorted(), tokens,
                       "the broadcast reached the devices before it in the event order, once each")
        let offsets = try await store.offsets(topics: topics.commandTopics)
        XCTAssertGreaterThanOrEqual(offsets[notification] ?? 0, sendOffset + 1, "the send is committed")
        XCTAssertGreaterThanOrEqual(offsets[PartitionKey(topic: topics.registration, partition: 1)] ?? 0, 2, "so is B's registration")

        XCTAssertEqual(loop.streamingPartitions, [], "no send runs any more")
        running.cancel()
        _ = try? await running.value
        await loop.finishStreams(consumer: consumer)
        await consumer.close()
    }
}
