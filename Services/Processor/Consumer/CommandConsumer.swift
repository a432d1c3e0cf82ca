import Contracts
import Foundation
import Kafka
import Logging
import Metrics
import Projections
import ServiceLifecycle
import Synchronization

/// The processor's consumer loop: joins the consumer group on the command topics, seeks each
/// newly assigned partition to the offset stored in the projection store, and applies every
/// batch in one store transaction. Webhook sending is left to the outbox dispatcher, so slow
/// receivers never slow consumption.
final class CommandConsumer: Service, Sendable {
    private let configuration: KafkaConsumerConfiguration
    private let topics: [String]
    private let store: any ProjectionStore
    private let applier: BatchApplier
    private let book = OffsetBook()
    private let lag = ConsumerLagGauges()
    private let onApplied: @Sendable () -> Void
    /// A rebuild's targets: records at or past a partition's limit are not applied (none of a
    /// partition without one). Nil for a live processor.
    private let replayLimits: [PartitionKey: Int64]?
    /// Partitions read without a consumer group (a lone rebuild); nil joins the group.
    private let partitions: [PartitionKey]?
    /// Awaited before the first batch is applied (fetching has begun by then).
    private let startAfter: (@Sendable () async throws -> Void)?
    private let logger: Logger
    private let state = HealthFlag()
    /// The group member while `run` is in its loop.
    private let member = Mutex<KafkaConsumer?>(nil)

    init(configuration: KafkaConsumerConfiguration, topics: [String], store: any ProjectionStore, outbound: any OutboundPublisher,
         verifier: any DeviceTokenVerifier, logger: Logger, replayLimits: [PartitionKey: Int64]? = nil,
         partitions: [PartitionKey]? = nil, startAfter: (@Sendable () async throws -> Void)? = nil,
         onApplied: @escaping @Sendable () -> Void) {
        self.configuration = configuration
        self.partitions = partitions
        self.startAfter = startAfter
        self.topics = topics
        self.store = store
        self.replayLimits = replayLimits
        self.applier = BatchApplier(store: store, outbound: outbound, verifier: verifier, logger: logger, replaying: replayLimits != nil)
        self.onApplied = onApplied
        self.logger = logger
    }

    /// True while the consumer loop runs.
    var isRunning: Bool { state.value }

    /// True when partitions are assigned and every one of them is applied up to the high
    /// watermark of its last fetch: nothing is waiting in the topics for this member.
    var isCaughtUp: Bool {
        guard let consumer = member.withLock({ $0 }) else { return false }
        let positions = book.positions
        guard !positions.isEmpty else { return false }
        return positions.allSatisfy { partition, next in
            guard let end = consumer.highWatermark(partition.topicPartition) else { return false }
            return next >= end
        }
    }

    func run() async throws {
        let store = self.store, book = self.book, topics = self.topics, logger = self.logger
        // A rebuild starts a partition the store has not seen at offset 0, not at the log's
        // beginning: a log that lost its first records (retention) then fails the rebuild
        // instead of building a store that lacks them.
        let unseen: Int64? = replayLimits == nil ? nil : 0
        // Takes `keys` into the book and returns where each starts: at its stored offset.
        @Sendable func claim(_ keys: [PartitionKey]) async throws -> [TopicPartition: Int64] {
            let stored = try await store.offsets(topics: topics)
            book.assign(keys, stored: stored)
            logger.info("partitions assigned", metadata: ["partitions": "\(keys.map(\.description))"])
            var start: [TopicPartition: Int64] = [:]
            for k in keys { if let o = stored[k] ?? unseen { start[k.topicPartition] = o } }
            return start
        }
        let consumer: KafkaConsumer
        if let partitions {
            consumer = try KafkaConsumer(configuration: configuration, partitions: partitions.map(\.topicPartition),
                                         startingAt: try await claim(partitions), logger: logger)
        } else {
            consumer = try KafkaConsumer(configuration: configuration, topics: topics, rebalance: rebalance(claim), logger: logger)
        }
        member.withLock { $0 = consumer }
        state.set(true)
        defer {
            state.set(false)
            member.withLock { $0 = nil }
        }
        defer { lag.removeAll() }
        do {
            try await cancelWhenGracefulShutdown {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask { try await self.reportLag(of: consumer) }
                    try await self.startAfter?()
                    for try await batch in consumer.batches() {
                        try await self.apply(batch, consumer: consumer)
                    }
                    group.cancelAll()
                }
            }
        } catch is CancellationError {
            // graceful shutdown
        } catch {
            logger.critical("consumer loop stopped", metadata: ["error": "\(error)"])
            await consumer.close()
            throw error
        }
        await consumer.close()
    }

    /// Updates the consumer lag gauges every second until cancelled, so that a processor that
    /// is idle or stuck (e.g. its store is down) still shows its lag.
    private func reportLag(of consumer: KafkaConsumer) async throws {
        while true {
            lag.report(positions: book.positions) { consumer.highWatermark($0.topicPartition) }
            try await Task.sleep(for: .seconds(1))
        }
    }

    /// The group's hooks: assigned partitions are claimed (`claim`), revoked ones are let go once
    /// the batch in flight is done with them.
    private func rebalance(_ claim: @escaping @Sendable ([PartitionKey]) async throws -> [TopicPartition: Int64]) -> KafkaRebalanceHandler {
        let book = self.book, logger = self.logger
        return KafkaRebalanceHandler(
            onAssign: { partitions in try await claim(partitions.map(PartitionKey.init)) },
            onRevoke: { partitions in
                // Nothing admitted from now on holds these partitions; the batch in flight, if
                // any, is finished before they go, so their next owner starts from its commit.
                book.revoke(partitions.map(PartitionKey.init))
                if !(await book.waitUntilSettled(limit: .seconds(30))) {
                    // Its commit, should it come, is refused or refuses the next owner's: the
                    // stored offsets decide (offsetConflict), never both.
                    logger.warning("in-flight batch still running at revocation; its offsets decide", metadata: [
                        "partitions": "\(partitions.map(\.description))",
                    ])
                }
                logger.info("partitions revoked", metadata: ["partitions": "\(partitions.map(\.description))"])
            }
        )
    }

    private func apply(_ batch: [KafkaConsumerMessage], consumer: KafkaConsumer) async throws {
        var records = batch.map { m in
            var type: String?, version: Int?, requestId: String?
            for h in m.headers {
                switch h.name {
                case RecordHeader.type: type = h.value
                case RecordHeader.version: version = Int(h.value)
                case RecordHeader.requestId: requestId = h.value
                default: break
                }
            }
            return ConsumedRecord(partition: PartitionKey(topic: m.topic, partition: m.partition), offset: m.offset,
                                  type: type, version: version, value: m.value, requestId: requestId)
        }
        if let limits = replayLimits { records.removeAll { $0.offset >= limits[$0.partition] ?? 0 } }
        while true {
            let (admitted, expected) = book.admit(records)
            guard !admitted.isEmpty else { return }
            defer { book.settle() }
            do {
                // A batch once started is finished even when shutdown cancels the loop: its outbound
                // records may be out already, and stopping before its commit would send them again
                // on restart. (An unstructured task does not inherit the cancellation.)
                let applier = self.applier
                let committed = try await Task { try await applier.apply(admitted, expected: expected) }.value
                book.update(committed)
                consumer.commit(Dictionary(uniqueKeysWithValues: committed.map { ($0.key.topicPartition, $0.value) }))
                Counter(label: "pushline_processor_records_consumed_total").increment(by: admitted.count)
                onApplied()
                return
            } catch ProjectionStoreError.offsetConflict(let partitions) {
                // Another processor applied these partitions meanwhile: believe the store, read on
                // from where it says, and apply the rest of the batch.
                logger.warning("offset conflict; re-reading stored offsets", metadata: ["partitions": "\(partitions.map(\.description))"])
                let stored = try await store.offsets(topics: topics)
                var moved: [PartitionKey: Int64] = [:]
                for p in partitions { moved[p] = stored[p] ?? 0 }
                book.update(moved)
                for (p, o) in moved where book.owned.contains(p) { try? consumer.seek(p.topicPartition, to: o) }
                records.removeAll { partitions.contains($0.partition) }
            }
        }
    }
}

/// A thread-safe boolean for health reporting.
final class HealthFlag: Sendable {
    private let storage = Mutex(false)
    var value: Bool { storage.withLock { $0 } }
    func set(_ v: Bool) { storage.withLock { $0 = v } }
}
