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
    private let store: any BatchStore
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
    /// Whether a live processor may apply records older than its store (see `ExistingLogRefused`).
    private let acceptExistingLog: Bool
    private let watch: Mutex<ProgressWatch>
    private let stalled = Mutex<[PartitionKey]>([])

    init(configuration: KafkaConsumerConfiguration, topics: [String], store: any BatchStore, outbound: any OutboundPublisher,
         verifier: any DeviceTokenVerifier, logger: Logger, replayLimits: [PartitionKey: Int64]? = nil,
         partitions: [PartitionKey]? = nil, startAfter: (@Sendable () async throws -> Void)? = nil,
         outboundWindow: Int = BatchApplier.outboundWindow(forQueue: KafkaProducerConfiguration().queueBufferingMaxMessages),
         maxDevicesPerUser: Int = ProcessorConfiguration().maxDevicesPerUser,
         trackingParkTime: Duration = .milliseconds(ProcessorConfiguration().trackingParkTtlMs),
         stallAfter: Duration = .seconds(60), acceptExistingLog: Bool = false,
         onApplied: @escaping @Sendable () -> Void) {
        self.configuration = configuration
        self.watch = Mutex(ProgressWatch(stallAfter: stallAfter))
        self.acceptExistingLog = acceptExistingLog
        self.partitions = partitions
        self.startAfter = startAfter
        self.topics = topics
        self.store = store
        self.replayLimits = replayLimits
        self.applier = BatchApplier(store: store, outbound: outbound, verifier: verifier, logger: logger, replaying: replayLimits != nil,
                                    outboundWindow: outboundWindow, maxDevicesPerUser: maxDevicesPerUser,
                                    trackingParkTime: trackingParkTime)
        self.onApplied = onApplied
        self.logger = logger
    }

    /// Whether this processor is doing its work: its loop runs, its store answers, and no
    /// partition it owns has records waiting without progress for the stall time.
    var readiness: Readiness {
        guard state.value else { return .notRunning }
        if let down = applier.storeUnavailableFor { return .storeUnavailable(for: down) }
        let stalled = stalled.withLock { $0 }
        return stalled.isEmpty ? .ready : .stalled(stalled)
    }

    func run() async throws {
        let store = self.store, book = self.book, topics = self.topics, logger = self.logger
        // A rebuild starts a partition the store has not seen at offset 0, not at the log's
        // beginning: a log that lost its first records (retention) then fails the rebuild
        // instead of building a store that lacks them.
        let unseen: Int64? = replayLimits == nil ? nil : 0
        let storeCreatedAt = replayLimits == nil && !acceptExistingLog ? try await store.createdAt() : nil
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
        state.set(true)
        defer { state.set(false) }
        defer { lag.removeAll() }
        do {
            try await cancelWhenGracefulShutdown {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask { try await self.reportLag(of: consumer) }
                    try await self.startAfter?()
                    for try await batch in consumer.batches() {
                        try await self.apply(batch, consumer: consumer, storeCreatedAt: storeCreatedAt)
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
            let positions = book.positions
            lag.report(positions: positions) { consumer.highWatermark($0.topicPartition) }
            let now = ContinuousClock.now
            let stuck = watch.withLock { $0.observe(positions: positions, highWatermark: { consumer.highWatermark($0.topicPartition) }, now: now) }
            let before = stalled.withLock { stalled in
                defer { stalled = stuck }
                return stalled
            }
            if !stuck.isEmpty, stuck != before {
                logger.error("partitions stalled: records are waiting and none was applied for the stall time", metadata: [
                    "partitions": "\(stuck.map(\.description))", "stall_after": "\(watch.withLock { $0.stallAfter })",
                ])
            }
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

    /// `storeCreatedAt`: when set, records older than the store are refused (`ExistingLogRefused`).
    private func apply(_ batch: [KafkaConsumerMessage], consumer: KafkaConsumer, storeCreatedAt: Date?) async throws {
        var records = batch.map { m in
            let headers = RecordHeaders(m.headerFields)
            return ConsumedRecord(partition: PartitionKey(topic: m.topic, partition: m.partition), offset: m.offset,
                                  type: headers.type, version: headers.version, value: m.value, requestId: headers.requestId,
                                  timestamp: m.timestamp)
        }
        if let limits = replayLimits { records.removeAll { $0.offset >= limits[$0.partition] ?? 0 } }
        while true {
            let (admitted, expected) = book.admit(records)
            guard !admitted.isEmpty else { return }
            defer { book.settle() }
            if let storeCreatedAt { try ExistingLogRefused.check(admitted, expected: expected, storeCreatedAt: storeCreatedAt) }
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

/// What the processor's `/health` reports.
enum Readiness: Equatable, Sendable {
    case ready
    /// The consumer loop is not running (starting, stopped or failed).
    case notRunning
    /// The store has failed as unavailable for this long, and the processor is waiting for it.
    case storeUnavailable(for: Duration)
    /// These owned partitions have records waiting and made no progress for the stall time.
    case stalled([PartitionKey])

    /// Why the processor is not ready, in one line; nil when it is.
    var problem: String? {
        switch self {
        case .ready: nil
        case .notRunning: "the consumer is not running"
        case .storeUnavailable(let duration): "the projection store has been unavailable for \(duration.components.seconds) s"
        case .stalled(let partitions):
            "no progress on partitions with records waiting: \(partitions.map(\.description).joined(separator: ", "))"
        }
    }
}

/// Stops a live processor that is about to apply, as new, records written before its store
/// existed: a store that has never consumed a partition, over a log that already held records
/// then, is a wrong or fresh store pointed at an old log. Applying it live would send again every
/// webhook, callback and outbound record the log implies. The way to build a store from an
/// existing log is a rebuild, which sends nothing; `PUSHLINE_ACCEPT_EXISTING_LOG=true` applies
/// it live on purpose.
///
/// Only partitions without a stored offset are checked, by the Kafka timestamp of the first
/// record admitted; records written after the store was created (ingest started before the
/// processor) are normal work. `clockSkew` allows for producers whose clocks run a little behind.
struct ExistingLogRefused: Error, CustomStringConvertible {
    static let clockSkew: TimeInterval = 5

    var partition: PartitionKey
    var offset: Int64
    var writtenAt: Date
    var storeCreatedAt: Date

    static func check(_ records: [ConsumedRecord], expected: [PartitionKey: Int64], storeCreatedAt: Date) throws {
        var checked: Set<PartitionKey> = []
        for record in records where expected[record.partition] == nil && checked.insert(record.partition).inserted {
            guard let at = record.timestamp, at.timeIntervalSince(storeCreatedAt) < -clockSkew else { continue }
            throw ExistingLogRefused(partition: record.partition, offset: record.offset, writtenAt: at, storeCreatedAt: storeCreatedAt)
        }
    }

    var description: String {
        let format = ISO8601DateFormatter()
        return "refusing to apply \(partition) from offset \(offset) live: its records were written before this projection store "
            + "was created (record at \(format.string(from: writtenAt)), store created at \(format.string(from: storeCreatedAt))), "
            + "so the store has never consumed this log, and applying it would send every webhook, callback and push it implies "
            + "again. Build the store from the log with `pushline-processor rebuild --store <store>` (sends nothing), or set "
            + "PUSHLINE_ACCEPT_EXISTING_LOG=true to apply the log live and emit its side effects."
    }
}

/// A thread-safe boolean for health reporting.
final class HealthFlag: Sendable {
    private let storage = Mutex(false)
    var value: Bool { storage.withLock { $0 } }
    func set(_ v: Bool) { storage.withLock { $0 = v } }
}
