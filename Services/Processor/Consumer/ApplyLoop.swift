import Contracts
import Foundation
import Kafka
import Logging
import Metrics
import Projections
import Synchronization

/// The part of consuming that the live processor (`CommandConsumer`) and a rebuild
/// (`ReplayConsumer`) share: each assigned partition is claimed at the offset (and event time)
/// stored in the projection store, consumed records are put in event order (`EventOrder`),
/// released batches are admitted through the `OffsetBook` and applied in one store transaction
/// with their offsets, and on an offset conflict the store is believed.
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
    let order: Mutex<EventOrder>
    /// Records applied in one transaction at most.
    private let maxBatch: Int
    /// Appends the progress marks that free records waiting on partitions with nothing new;
    /// nil for a rebuild, which writes nothing to the log.
    private let marks: ProgressMarks?
    /// When each partition last delivered a record: a partition that did lately is about to
    /// deliver more and is waited for rather than marked.
    private let lastArrival = Mutex<[PartitionKey: ContinuousClock.Instant]>([:])

    init(store: any BatchStore, topics: [String], applier: BatchApplier, unseenStart: Int64?, maxBatch: Int,
         marks: ProgressMarks?, logger: Logger) {
        self.store = store
        self.topics = topics
        self.applier = applier
        self.unseenStart = unseenStart
        self.maxBatch = max(1, maxBatch)
        self.marks = marks
        self.order = Mutex(EventOrder(topics: topics))
        self.logger = logger
    }

    /// A consumer of `partitions`, read without a group, each from where the store says.
    func makeConsumer(_ configuration: KafkaConsumerConfiguration, partitions: [PartitionKey]) async throws -> KafkaConsumer {
        try KafkaConsumer(configuration: configuration, partitions: partitions.map(\.topicPartition),
                          startingAt: try await claim(partitions), logger: logger)
    }

    /// Takes `keys` into the book and returns where each starts: at its stored offset.
    private func claim(_ keys: [PartitionKey]) async throws -> [TopicPartition: Int64] {
        let stored = try await store.offsets(topics: topics)
        let times = try await store.eventTimes(topics: topics)
        book.assign(keys, stored: stored)
        order.withLock { order in
            for k in keys { order.claim(k, next: stored[k] ?? unseenStart ?? 0, time: times[k] ?? 0) }
        }
        logger.info("partitions assigned", metadata: ["partitions": "\(keys.map(\.description))"])
        var start: [TopicPartition: Int64] = [:]
        for k in keys { if let o = stored[k] ?? unseenStart { start[k.topicPartition] = o } }
        return start
    }

    /// Lets `partitions` go (the lease is gone): nothing of them is admitted or ordered any more,
    /// and the next claim starts afresh from the store.
    func release(_ partitions: [PartitionKey]) {
        book.revoke(partitions)
        order.withLock { order in for p in partitions { order.drop(p) } }
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

    /// Decodes a consumed batch into the event order, applies whatever that releases, in
    /// transactions of at most `maxBatch` records, and asks for the progress marks that free what
    /// still waits. `check` sees each admitted batch with the offsets it is expected to move
    /// from, and may refuse it by throwing. Returns whether anything was applied.
    func apply(_ batch: [KafkaConsumerMessage], consumer: KafkaConsumer, limits: [PartitionKey: Int64]? = nil,
               check: ([DecodedRecord], [PartitionKey: Int64]) throws -> Void = { _, _ in }) async throws -> Bool {
        var records = Self.records(batch)
        if let limits { records.removeAll { $0.offset >= limits[$0.partition] ?? 0 } }
        let decodeStart = ContinuousClock.now
        let decoded = await applier.decode(records)
        let waiting = order.withLock { order in
            order.add(decoded)
            return order.buffered
        }
        logger.debug("records decoded", metadata: [
            "records": "\(records.count)", "decode_ms": "\((ContinuousClock.now - decodeStart).inMilliseconds)", "waiting": "\(waiting)",
        ])
        if marks != nil {
            let now = ContinuousClock.now
            lastArrival.withLock { last in for record in records { last[record.partition] = now } }
        }
        var applied = false
        while true {
            let released = order.withLock { $0.release(limit: maxBatch) }
            if !released.isEmpty, try await apply(released, consumer: consumer, check: check) { applied = true }
            if released.count == maxBatch { continue }
            appendMarks(consumer: consumer)
            return applied
        }
    }

    /// Asks for the progress marks the order wants, on partitions read to their end that
    /// delivered nothing for `ProgressMarks.quiet` (a live processor only), so that a record
    /// waits for the partitions it did not go to about one produce round trip, not for their next
    /// command. They are appended in the background, one round at a time, so that a producer that
    /// cannot deliver (a broker restarting) never holds the loop. A mark that lands right after its
    /// lane's last record frees the lane at once, and the consumer is woken (`KafkaConsumer.wake`)
    /// to release what waited, without waiting for a fetch to bring the mark back. Called after
    /// every batch (a woken turn included) and every second.
    ///
    /// Ingest marks the partitions it leaves behind too (`ProgressMarker`); a partition that
    /// receives records is not marked here while it does.
    func appendMarks(consumer: KafkaConsumer) {
        guard let marks, marks.beginRound() else { return }
        let now = EventTime.milliseconds(Date().addingTimeInterval(marks.lead.inSeconds))
        let quietSince = ContinuousClock.now - ProgressMarks.quiet
        let arrivals = lastArrival.withLock { $0 }
        let wanted = order.withLock { order in
            order.marksNeeded(now: now) { partition, next in
                guard let end = consumer.highWatermark(partition.topicPartition), next >= end else { return false }
                return arrivals[partition].map { $0 <= quietSince } ?? true
            }
        }
        guard !wanted.isEmpty else {
            marks.endRound()
            return
        }
        Task {
            defer { marks.endRound() }
            do {
                let appended = try await marks.append(wanted)
                let freed = self.order.withLock { order in
                    zip(wanted, appended).reduce(false) { freed, pair in
                        order.markAppended(pair.0.partition, offset: pair.1.offset, time: pair.0.time) || freed
                    }
                }
                if freed { consumer.wake() }
            } catch {
                self.order.withLock { order in for mark in wanted { order.markFailed(mark.partition) } }
                self.logger.warning("progress marks not appended; asking again", metadata: ["error": "\(error)"])
            }
        }
    }

    /// Applies released records the book admits, in one store transaction, and commits their
    /// offsets to the group.
    private func apply(_ records: [DecodedRecord], consumer: KafkaConsumer,
                       check: ([DecodedRecord], [PartitionKey: Int64]) throws -> Void) async throws -> Bool {
        var records = records
        while true {
            let (admitted, expected) = book.admit(records)
            guard !admitted.isEmpty else { return false }
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
                let times = try await store.eventTimes(topics: topics)
                var moved: [PartitionKey: Int64] = [:]
                for p in partitions { moved[p] = stored[p] ?? 0 }
                book.update(moved)
                order.withLock { order in
                    for (p, o) in moved where order.claimed.contains(p) { order.claim(p, next: o, time: times[p] ?? 0) }
                }
                for (p, o) in moved where book.owned.contains(p) { try? consumer.seek(p.topicPartition, to: o) }
                records.removeAll { partitions.contains($0.partition) }
            }
        }
    }
}

/// Appends progress marks with the live processor's producer, one round at a time.
final class ProgressMarks: Sendable {
    let producer: KafkaProducer
    /// How far past the clock a mark states its partition's time (`PUSHLINE_PROGRESS_MARK_LEAD_MS`).
    let lead: Duration
    /// How long a partition must have delivered nothing before the processor marks it: one that
    /// did lately is about to deliver more, and a mark would only add a stored object.
    static let quiet = Duration.milliseconds(100)
    private let counter = Counter(label: "pushline_processor_progress_marks_total")
    private let inFlight = Mutex(false)

    /// Takes the one round in flight; false while another round is on its way.
    func beginRound() -> Bool {
        inFlight.withLock { busy in
            defer { busy = true }
            return !busy
        }
    }

    func endRound() {
        inFlight.withLock { $0 = false }
    }

    init(producer: KafkaProducer, lead: Duration) {
        self.producer = producer
        self.lead = lead
    }

    /// Appends one mark per partition and returns where each landed, in order.
    func append(_ marks: [(partition: PartitionKey, time: Int64)]) async throws -> [(partition: PartitionKey, offset: Int64)] {
        let records = marks.map {
            KafkaProducerRecord(topic: $0.partition.topic, key: nil, value: ProgressMark.value(at: EventTime.date($0.time)),
                                headers: ProgressMark.headers.fields, partition: $0.partition.partition)
        }
        let reports = try await producer.send(records)
        counter.increment(by: marks.count)
        return zip(marks, reports).map { ($0.partition, $1.offset) }
    }
}
