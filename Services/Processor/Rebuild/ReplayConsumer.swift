import Foundation
import Kafka
import Logging
import Projections

/// A rebuild's consumer: applies a topic's partitions from the new store's offsets up to the
/// log ends the rebuild started with (`limits`), through the same `ApplyLoop` as a live processor
/// but with a replaying applier — outbox jobs are written as `replayed`, outbound records
/// discarded — so a rebuild sends nothing.
final class ReplayConsumer: Sendable {
    private let configuration: KafkaConsumerConfiguration
    private let loop: ApplyLoop
    private let limits: [PartitionKey: Int64]
    private let partitions: [PartitionKey]?
    private let startAfter: (@Sendable () async throws -> Void)?

    /// - Parameters:
    ///   - limits: Records at or past a partition's limit are not applied (none of a partition
    ///     without one).
    ///   - partitions: The partitions to read without a consumer group (a lone rebuild); nil
    ///     joins the configuration's group (rebuilds sharing the work).
    ///   - startAfter: Awaited before the first batch is applied (fetching has begun by then).
    init(configuration: KafkaConsumerConfiguration, topics: [String], store: any BatchStore, outbound: any OutboundPublisher,
         verifier: any DeviceTokenVerifier, logger: Logger, limits: [PartitionKey: Int64], partitions: [PartitionKey]?,
         startAfter: (@Sendable () async throws -> Void)?, maxDevicesPerUser: Int, trackingParkTime: Duration) {
        self.configuration = configuration
        self.limits = limits
        self.partitions = partitions
        self.startAfter = startAfter
        let applier = BatchApplier(store: store, outbound: outbound, verifier: verifier, logger: logger, replaying: true,
                                   maxDevicesPerUser: maxDevicesPerUser, trackingParkTime: trackingParkTime)
        loop = ApplyLoop(store: store, topics: topics, applier: applier, unseenStart: 0, logger: logger)
    }

    /// Applies batches until cancelled; the rebuild watches the store to know when the limits are
    /// reached (other rebuilds may apply some of the partitions).
    func run() async throws {
        let consumer = try await loop.makeConsumer(configuration, partitions: partitions)
        do {
            try await startAfter?()
            for try await batch in consumer.batches() {
                let records = ApplyLoop.records(batch).filter { $0.offset < limits[$0.partition] ?? 0 }
                _ = try await loop.apply(records, consumer: consumer)
            }
        } catch is CancellationError {
            // The rebuild saw its limits reached and stopped it.
        } catch {
            await consumer.close()
            throw error
        }
        await consumer.close()
    }
}
