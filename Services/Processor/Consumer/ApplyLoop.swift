import Contracts
import Foundation
import Kafka
import Logging
import Metrics
import Projections

/// The part of consuming that the live processor (`CommandConsumer`) and a rebuild
/// (`ReplayConsumer`) share: each assigned partition is claimed at the offset stored in the
/// projection store, each batch is admitted through the `OffsetBook` and applied in one store
/// transaction with its offsets, and on an offset conflict the store is believed.
final class ApplyLoop: Sendable {
    let store: any BatchStore
    let topics: [String]
    let applier: BatchApplier
    let book = OffsetBook()
    let logger: Logger
    /// Where a partition the store has not seen starts: nil leaves it to the consumer's offset
    /// reset (the log's beginning); a rebuild says 0, so that a log that lost its first records
    /// (retention) fails the rebuild instead of building a store that lacks them.
    private let unseenStart: Int64?

    init(store: any BatchStore, topics: [String], applier: BatchApplier, unseenStart: Int64?, logger: Logger) {
        self.store = store
        self.topics = topics
        self.applier = applier
        self.unseenStart = unseenStart
        self.logger = logger
    }

    /// A consumer of `partitions` read without a group, or, when nil, a member of the
    /// configuration's group on `topics`; either way each partition starts where the store says.
    func makeConsumer(_ configuration: KafkaConsumerConfiguration, partitions: [PartitionKey]?) async throws -> KafkaConsumer {
        if let partitions {
            return try KafkaConsumer(configuration: configuration, partitions: partitions.map(\.topicPartition),
                                     startingAt: try await claim(partitions), logger: logger)
        }
        return try KafkaConsumer(configuration: configuration, topics: topics, rebalance: rebalance(), logger: logger)
    }

    /// Takes `keys` into the book and returns where each starts: at its stored offset.
    private func claim(_ keys: [PartitionKey]) async throws -> [TopicPartition: Int64] {
        let stored = try await store.offsets(topics: topics)
        book.assign(keys, stored: stored)
        logger.info("partitions assigned", metadata: ["partitions": "\(keys.map(\.description))"])
        var start: [TopicPartition: Int64] = [:]
        for k in keys { if let o = stored[k] ?? unseenStart { start[k.topicPartition] = o } }
        return start
    }

    /// The group's hooks: assigned partitions are claimed, revoked ones are let go once the batch
    /// in flight is done with them.
    private func rebalance() -> KafkaRebalanceHandler {
        KafkaRebalanceHandler(
            onAssign: { partitions in try await self.claim(partitions.map(PartitionKey.init)) },
            onRevoke: { partitions in
                // Nothing admitted from now on holds these partitions; the batch in flight, if
                // any, is finished before they go, so their next owner starts from its commit.
                self.book.revoke(partitions.map(PartitionKey.init))
                if !(await self.book.waitUntilSettled(limit: .seconds(30))) {
                    // Its commit, should it come, is refused or refuses the next owner's: the
                    // stored offsets decide (offsetConflict), never both.
                    self.logger.warning("in-flight batch still running at revocation; its offsets decide", metadata: [
                        "partitions": "\(partitions.map(\.description))",
                    ])
                }
                self.logger.info("partitions revoked", metadata: ["partitions": "\(partitions.map(\.description))"])
            }
        )
    }

    /// The records of a consumed batch, with what their headers say.
    static func records(_ batch: [KafkaConsumerMessage]) -> [ConsumedRecord] {
        batch.map { m in
            let headers = RecordHeaders(m.headerFields)
            return ConsumedRecord(partition: PartitionKey(topic: m.topic, partition: m.partition), offset: m.offset,
                                  type: headers.type, version: headers.version, value: m.value, requestId: headers.requestId,
                                  timestamp: m.timestamp)
        }
    }

    /// Applies the records the book admits, in one store transaction, and commits their offsets
    /// to the group. `check` sees each admitted batch with the offsets it is expected to move
    /// from, and may refuse it by throwing. Returns whether anything was applied.
    func apply(_ records: [ConsumedRecord], consumer: KafkaConsumer,
               check: ([ConsumedRecord], [PartitionKey: Int64]) throws -> Void = { _, _ in }) async throws -> Bool {
        var records = records
        while true {
            let (admitted, expected) = book.admit(records)
            guard !admitted.isEmpty else { return false }
            defer { book.settle() }
            try check(admitted, expected)
            do {
                // A batch once started is finished even when shutdown cancels the loop: its outbound
                // records may be out already, and stopping before its commit would send them again
                // on restart. (An unstructured task does not inherit the cancellation.)
                let applier = self.applier
                let committed = try await Task { try await applier.apply(admitted, expected: expected) }.value
                book.update(committed)
                consumer.commit(Dictionary(uniqueKeysWithValues: committed.map { ($0.key.topicPartition, $0.value) }))
                Counter(label: "pushline_processor_records_consumed_total").increment(by: admitted.count)
                return true
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
