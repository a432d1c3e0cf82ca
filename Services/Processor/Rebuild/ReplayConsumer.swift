import Foundation
import Handlers
import Kafka
import Logging
import Projections

/// A rebuild's consumer: applies the command topics' partitions, in event order, from the new
/// store's offsets up to the log ends the rebuild started with (`limits`), through the same
/// `ApplyLoop` as a live processor but with a replaying applier — outbox jobs are written as
/// `replayed`, outbound records discarded — so a rebuild sends nothing.
final class ReplayConsumer: Sendable {
    private let configuration: KafkaConsumerConfiguration
    private let loop: ApplyLoop
    private let limits: [PartitionKey: Int64]
    private let partitions: [PartitionKey]
    private let lease: ProcessorLease?
    private let closesAtLimits: Bool

    /// - Parameters:
    ///   - limits: Records at or past a partition's limit are not applied (none of a partition
    ///     without one).
    ///   - partitions: Every command partition.
    ///   - leaseTopic: With one, rebuilds into the same store (`--join`) share the work: each
    ///     applies the shards it holds in the configuration's group (`ProcessorLease`); nil: a lone
    ///     rebuild, which applies every partition.
    ///   - closesAtLimits: The limits are where a serving store stands, so a partition at its
    ///     limit holds nothing back: every record the serving store applied is applied. Without
    ///     it (the limits are the log's ends), records that the live processors could not decide
    ///     yet either — they wait for progress marks — are left for them.
    init(configuration: KafkaConsumerConfiguration, topics: [String], store: any BatchStore, outbound: any OutboundPublisher,
         verifier: any DeviceTokenVerifier, logger: Logger, limits: [PartitionKey: Int64], partitions: [PartitionKey],
         leaseTopic: String?, closesAtLimits: Bool, rules: DecisionRules) {
        self.configuration = configuration
        self.limits = limits
        self.partitions = partitions
        self.lease = leaseTopic.map { ProcessorLease(configuration: configuration, topic: $0, logger: logger) }
        self.closesAtLimits = closesAtLimits
        let applier = BatchApplier(store: store, outbound: outbound, verifier: verifier, logger: logger, replaying: true,
                                   rules: rules)
        loop = ApplyLoop(store: store, topics: topics, applier: applier, unseenStart: 0, maxBatch: configuration.maxBatchSize,
                         marks: nil, logger: logger)
    }

    /// Applies batches until every partition reached its limit and nothing more can be applied,
    /// and returns the records left waiting. With a lease, runs until cancelled (the rebuild
    /// watches the store, which another member may be the one to fill).
    @discardableResult
    func run() async throws -> Int {
        guard let lease else { return try await replay(partitions) }
        try await lease.run { share in
            let (shared, counts) = try await self.loop.partitions(of: share, self.configuration)
            let held = Set(shared)
            _ = try await self.replay(self.partitions.filter(held.contains), misplaced: counts)
        }
        return 0
    }

    /// `misplaced`: the partition counts of the topics, when `partitions` are some shards of
    /// them, whose commands must then be in their apps' shards (`MisplacedCommand`).
    private func replay(_ partitions: [PartitionKey], misplaced: [String: Int]? = nil) async throws -> Int {
        let consumer = try await loop.makeConsumer(configuration, partitions: partitions)
        defer { loop.release(partitions) }
        do {
            var waiting = 0
            if try await !settle(consumer, partitions) {
                for try await batch in consumer.batches() {
                    _ = try await loop.apply(batch, consumer: consumer, limits: limits) { admitted, _ in
                        if let misplaced { try MisplacedCommand.check(admitted, partitions: misplaced, parts: self.loop.appParts) }
                    }
                    if try await settle(consumer, partitions) { break }
                }
            }
            waiting = loop.order.withLock { $0.buffered }
            await consumer.close()
            return waiting
        } catch is CancellationError {
            // The rebuild saw its limits reached and stopped it.
        } catch {
            await consumer.close()
            throw error
        }
        await consumer.close()
        return 0
    }

    /// Closes the partitions that reached their limits (when the limits are a serving store's) and
    /// applies what that frees; true when a lone rebuild has nothing more to read.
    private func settle(_ consumer: KafkaConsumer, _ partitions: [PartitionKey]) async throws -> Bool {
        let reached = loop.order.withLock { order in
            order.claimed.filter { (order.next($0) ?? 0) >= limits[$0] ?? 0 }
        }
        if closesAtLimits {
            let closing = loop.order.withLock { order in
                reached.filter { order.close($0) }
            }
            if !closing.isEmpty { _ = try await loop.apply([], consumer: consumer, limits: limits) }
        }
        return reached.count == partitions.count
    }
}
