import Contracts
import Foundation
import Handlers
import Kafka
import Logging
import Metrics
import Projections
import Settings
import ServiceLifecycle
import Synchronization

/// The live processor's consumer: a member of the processor group that reads the command
/// partitions of the shards it holds (`ProcessorLease`), applies them in event order through the
/// `ApplyLoop`, reports its lag, and tells `/health` whether it makes progress.
/// Webhook sending is left to the outbox dispatcher, so slow receivers never slow consumption.
public final class CommandConsumer: Service, Sendable {
    private let configuration: KafkaConsumerConfiguration
    private let loop: ApplyLoop
    private let lease: ProcessorLease
    private let lag = ConsumerLagGauges()
    private let onApplied: @Sendable () -> Void
    private let logger: Logger
    private let state = HealthFlag()
    /// Whether it may apply records older than its store (see `ExistingLogRefused`).
    private let acceptExistingLog: Bool
    private let watch: Mutex<ProgressWatch>
    private let stalled = Mutex<[PartitionKey]>([])
    /// Appends the firings of scheduled sends whose time came (a live processor only).
    private let dueSends: DueSends?

    init(configuration: KafkaConsumerConfiguration, topics: [String], leaseTopic: String, store: any BatchStore,
         outbound: any OutboundPublisher,
         verifier: any DeviceTokenVerifier, logger: Logger,
         outboundWindow: Int, rules: DecisionRules, stallAfter: Duration, acceptExistingLog: Bool, marks: ProgressMarks?,
         dueSends: DueSends? = nil, onApplied: @escaping @Sendable () -> Void) {
        self.dueSends = dueSends
        self.configuration = configuration
        self.lease = ProcessorLease(configuration: configuration, topic: leaseTopic, logger: logger)
        self.watch = Mutex(ProgressWatch(stallAfter: stallAfter))
        self.acceptExistingLog = acceptExistingLog
        let applier = BatchApplier(store: store, outbound: outbound, verifier: verifier, logger: logger,
                                   outboundWindow: outboundWindow, rules: rules)
        self.loop = ApplyLoop(store: store, topics: topics, applier: applier, unseenStart: nil,
                              maxBatch: configuration.maxBatchSize, marks: marks, streamsBeside: true, logger: logger)
        self.onApplied = onApplied
        self.logger = logger
    }

    /// The live consumer of `configuration`: the command topics in its group, outbound records
    /// published with `producer` in windows that fit its queue, `onApplied` called after each
    /// applied batch.
    public static func live(configuration: ProcessorConfiguration, store: any BatchStore, producer: KafkaProducer,
                            verifier: any DeviceTokenVerifier, logger: Logger,
                            onApplied: @escaping @Sendable () -> Void) -> CommandConsumer {
        CommandConsumer(configuration: configuration.consumerConfiguration(groupId: configuration.groupId),
                        topics: configuration.shared.topics.commandTopics, leaseTopic: configuration.shared.topics.processorLease,
                        store: store,
                        outbound: KafkaOutboundPublisher(producer: producer, topic: configuration.shared.topics.outbound),
                        verifier: verifier, logger: logger,
                        outboundWindow: BatchApplier.outboundWindow(forQueue: configuration.producerQueueMessages),
                        rules: configuration.decisionRules,
                        stallAfter: .milliseconds(configuration.stallTimeoutMs),
                        acceptExistingLog: configuration.acceptExistingLog,
                        marks: ProgressMarks(producer: producer),
                        dueSends: DueSends(producer: producer, store: store, topics: configuration.shared.topics,
                                           parts: configuration.decisionRules.appParts, logger: logger),
                        onApplied: onApplied)
    }

    /// Whether this processor is doing its work: its loop runs, its store answers, and no
    /// partition it owns has records waiting without progress for the stall time.
    public var readiness: Readiness {
        guard state.value else { return .notRunning }
        if let down = loop.applier.storeUnavailableFor { return .storeUnavailable(for: down) }
        let stalled = stalled.withLock { $0 }
        return stalled.isEmpty ? .ready : .stalled(stalled)
    }

    public func run() async throws {
        let storeCreatedAt = acceptExistingLog ? nil : try await loop.store.createdAt()
        state.set(true)
        defer { state.set(false) }
        do {
            try await cancelWhenGracefulShutdown {
                try await self.lease.run { share in try await self.applyLog(share, storeCreatedAt: storeCreatedAt) }
            }
        } catch is CancellationError {
            // graceful shutdown
        } catch {
            logger.critical("consumer loop stopped", metadata: ["error": "\(error)"])
            throw error
        }
    }

    /// Applies the command partitions of `share` until cancelled (a rebalance, or the processor
    /// stops), finishing the batch in flight first.
    private func applyLog(_ share: ShardShare, storeCreatedAt: Date?) async throws {
        // Beside other processors, every command must be in its app's shard (`counts`).
        let (partitions, counts) = try await loop.partitions(of: share, configuration)
        logger.info("applying shards", metadata: ["lease_partitions": "\(share)", "partitions": "\(partitions.count)"])
        // The applied offsets are the store's; those committed to Kafka are for tools only, under
        // a group of their own (the processor group's members hold the lease, not the partitions).
        var readerConfiguration = configuration
        readerConfiguration.groupId = configuration.groupId + ".applied"
        let consumer = try await loop.makeConsumer(readerConfiguration, partitions: partitions)
        defer {
            lag.removeAll()
            loop.release(partitions)
        }
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await self.reportLag(of: consumer) }
                if let dueSends {
                    // Holding every shard (no counts to check against), it holds every partition.
                    let notifications = partitions.filter { $0.topic == dueSends.topic }.map(\.partition)
                    let count = counts?[dueSends.topic] ?? notifications.count
                    group.addTask {
                        try await dueSends.run(owned: Set(notifications), partitions: count) { firings in
                            if await self.loop.takeAppended(firings) > 0 { consumer.wake() }
                        }
                    }
                }
                for try await batch in consumer.batches() {
                    let applied = try await self.loop.apply(batch, consumer: consumer) { admitted, expected in
                        if let storeCreatedAt {
                            try ExistingLogRefused.check(admitted, expected: expected, storeCreatedAt: storeCreatedAt)
                        }
                        if let counts { try MisplacedCommand.check(admitted, partitions: counts, parts: self.loop.appParts) }
                    }
                    if applied { self.onApplied() }
                }
                group.cancelAll()
            }
        } catch {
            await loop.finishHolds()
            await consumer.close()
            throw error
        }
        await loop.finishHolds()
        await consumer.close()
    }

    /// Updates the consumer lag gauges every second until cancelled, so that a processor that
    /// is idle or stuck (e.g. its store is down) still shows its lag.
    private func reportLag(of consumer: KafkaConsumer) async throws {
        var steps = loop.applier.streamSteps.withLock { $0 }
        var heldSteps: [PartitionKey: Int] = [:]
        while true {
            let positions = loop.book.positions
            lag.report(positions: positions) { consumer.highWatermark($0.topicPartition) }
            let now = ContinuousClock.now
            // An app part held beside the loop is watched by its rows, which its queue moves as it
            // commits. A send read in pages moves them only at its commit: while it reads pages
            // and publishes windows, its app part makes progress.
            let held = loop.heldProgress
            let stepped = loop.applier.streamSteps.withLock { $0 }
            var moving: Set<PartitionKey> = []
            var watched = positions
            var lanes: [PartitionKey: PartitionKey] = [:]
            for row in held {
                watched[row.key] = row.next
                lanes[row.key] = row.lane
                if (row.runsSend && stepped != steps) || heldSteps[row.key].map({ $0 != row.steps }) ?? false { moving.insert(row.key) }
            }
            heldSteps = Dictionary(held.map { ($0.key, $0.steps) }) { $1 }
            steps = stepped
            let stuck = watch.withLock {
                $0.observe(positions: watched, highWatermark: { consumer.highWatermark((lanes[$0] ?? $0).topicPartition) }, moving: moving,
                           now: now)
            }
            let before = stalled.withLock { stalled in
                defer { stalled = stuck }
                return stalled
            }
            loop.appendMarks(consumer: consumer)
            if !stuck.isEmpty, stuck != before {
                logger.error("partitions stalled: records are waiting and none was applied for the stall time", metadata: [
                    "partitions": "\(stuck.map(\.description))", "stall_after": "\(watch.withLock { $0.stallAfter })",
                ])
            }
            try await Task.sleep(for: .seconds(1))
        }
    }
}

/// What the processor's `/health` reports.
public enum Readiness: Equatable, Sendable {
    case ready
    /// The consumer loop is not running (starting, stopped or failed).
    case notRunning
    /// The store has failed as unavailable for this long, and the processor is waiting for it.
    case storeUnavailable(for: Duration)
    /// These owned partitions have records waiting and made no progress for the stall time.
    case stalled([PartitionKey])

    /// Why the processor is not ready, in one line; nil when it is.
    public var problem: String? {
        switch self {
        case .ready: nil
        case .notRunning: "the consumer is not running"
        case .storeUnavailable(let duration): "the projection store has been unavailable for \(duration.components.seconds) s"
        case .stalled(let partitions):
            Self.stalled(partitions)
        }
    }
}

extension Readiness {
    /// The shards (partition indexes) of stalled partitions, then the partitions.
    private static func stalled(_ partitions: [PartitionKey]) -> String {
        let shards = Set(partitions.map(\.partition)).sorted()
        return "no progress on shard\(shards.count == 1 ? "" : "s") \(shards.map(String.init).joined(separator: ", ")), "
            + "whose partitions have records waiting: \(partitions.map(\.description).joined(separator: ", "))"
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

    static func check(_ records: [DecodedRecord], expected: [PartitionKey: Int64], storeCreatedAt: Date) throws {
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
