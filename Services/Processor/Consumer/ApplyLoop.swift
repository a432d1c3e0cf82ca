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
    /// When each partition last delivered a command: a partition that did lately is about to
    /// deliver more and is waited for rather than marked.
    private let lastArrival = Mutex<[PartitionKey: ContinuousClock.Instant]>([:])
    /// Each lane found short of its partition's end, with nothing to release, at the offset it
    /// waited for and since when (`appendMarks`).
    private let shortOfEnd = Mutex<[PartitionKey: (next: Int64, since: ContinuousClock.Instant)]>([:])
    /// Records read from the log (progress marks and records read again after a seek included).
    private let fetched = Counter(label: "pushline_processor_records_fetched_total")
    /// Whether a send read in pages runs beside the loop (`Streams`), holding only its shard
    /// back; otherwise it is applied in its batch, and everything waits for it.
    private let streamsBeside: Bool
    private let streams = Mutex(Streams())

    init(store: any BatchStore, topics: [String], applier: BatchApplier, unseenStart: Int64?, maxBatch: Int,
         marks: ProgressMarks?, streamsBeside: Bool = false, logger: Logger) {
        self.streamsBeside = streamsBeside
        self.store = store
        self.topics = topics
        self.applier = applier
        self.unseenStart = unseenStart
        self.maxBatch = max(1, maxBatch)
        self.marks = marks
        self.order = Mutex(EventOrder(topics: topics))
        self.logger = logger
    }

    /// The parts the log's apps are split into (`DecisionRules.appParts`).
    var appParts: AppParts { applier.appParts }

    /// The command partitions `share` applies, and the partition counts its commands are checked
    /// against when it holds only some of them (`ShardShare.checkedCounts`).
    func partitions(of share: ShardShare, _ configuration: KafkaConsumerConfiguration) async throws
        -> (partitions: [PartitionKey], checkedCounts: [String: Int]?) {
        let all = try await KafkaAdmin.partitions(of: topics, bootstrapServers: configuration.bootstrapServers,
                                                  properties: configuration.properties).map(PartitionKey.init)
        return (share.partitions(of: all), share.checkedCounts(of: all))
    }

    /// A consumer of `partitions`, read without a group, each from where the store says.
    func makeConsumer(_ configuration: KafkaConsumerConfiguration, partitions: [PartitionKey]) async throws -> KafkaConsumer {
        // A share of co-partitioned topics holds as many partitions of each; a share of topics
        // that are not holds every partition, one shard.
        let coPartitioned = Set(Dictionary(grouping: partitions, by: \.topic).values.map(\.count)).count <= 1
        order.withLock { $0.coPartitioned = coPartitioned }
        return try KafkaConsumer(configuration: configuration, partitions: partitions.map(\.topicPartition),
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
        fetched.increment(by: batch.count)
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
            // A progress mark (another processor's, or this one's read back) says nothing of what
            // comes next: only commands make a partition count as busy.
            lastArrival.withLock { last in for record in records where record.type != ProgressMark.type { last[record.partition] = now } }
        }
        var applied = try await settleStreams(consumer: consumer)
        let applier = self.applier, beside = streamsBeside
        while true {
            let released = order.withLock { $0.release(limit: maxBatch) { beside && applier.streams($0) } }
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
    /// lane's last record is taken into the lane at once, as it will be read back
    /// (`EventOrder.markAppended`), and the consumer is woken (`KafkaConsumer.wake`) to release
    /// what waited, without waiting for a fetch to bring the mark back. A partition passed over
    /// because it delivered lately is looked at again once it is quiet. Called after every batch
    /// (a woken turn included) and every second.
    func appendMarks(consumer: KafkaConsumer) {
        guard let marks else { return }
        switch marks.beginRound() {
        case .begun: break
        case .inFlight: return  // its end wakes the loop
        case .spaced(let until):
            marks.wake(consumer, at: until)
            return
        }
        // Never past the clock: a mark's time must not exceed the moment it is appended, so that
        // a command accepted after another one was acknowledged is ordered after it.
        let now = EventTime.milliseconds(Date())
        let clock = ContinuousClock.now
        let quietSince = clock - ProgressMarks.quiet
        let arrivals = lastArrival.withLock { $0 }
        var waits = shortOfEnd.withLock { $0 }
        // The earliest moment a lane passed over now may be marked: the loop looks again then.
        var lookAgainAt: ContinuousClock.Instant?
        func lookAgain(at instant: ContinuousClock.Instant) { lookAgainAt = min(lookAgainAt ?? instant, instant) }
        let wanted = order.withLock { order in
            order.marksNeeded(now: now) { partition, next in
                guard let end = consumer.highWatermark(partition.topicPartition) else { return false }
                if next < end {
                    // Usually the records are on their way. But the broker may count an offset
                    // that it never stores (`ProgressMarks.gapWait`): a lane that waited for the
                    // same offset that long is marked too. Records before the mark still come
                    // first, as the mark is read after them.
                    guard let waited = waits[partition], waited.next == next else {
                        waits[partition] = (next, clock)
                        lookAgain(at: clock + ProgressMarks.gapWait)
                        return false
                    }
                    let due = waited.since + ProgressMarks.gapWait
                    guard due <= clock else {
                        lookAgain(at: due)
                        return false
                    }
                }
                guard let arrived = arrivals[partition], arrived > quietSince else { return true }
                lookAgain(at: arrived + ProgressMarks.quiet)
                return false
            }
        }
        shortOfEnd.withLock { $0 = waits }
        // A lane passed over only because it delivered lately, or because it has waited for its
        // next offset only briefly, is looked at again then.
        if let lookAgainAt { marks.wake(consumer, at: lookAgainAt) }
        guard !wanted.isEmpty else {
            marks.endRound()
            return
        }
        Task {
            do {
                let appended = await self.applier.decode(try await marks.append(wanted))
                self.order.withLock { order in for mark in appended { _ = order.markAppended(mark) } }
                marks.endRound()
                // A turn now releases what the marks freed, and asks for the marks that records
                // which arrived meanwhile need.
                consumer.wake()
            } catch {
                self.order.withLock { order in for mark in wanted { order.markFailed(mark.partition) } }
                marks.endRound()
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
            try PartMismatch.check(admitted, parts: applier.appParts)
            try MessageKeyMissing.check(admitted, keys: applier.messageIdKeys)
            try check(admitted, expected)
            // A send read in pages (released as its shard's last) goes beside the loop once the
            // records before it are committed.
            let beside = streamsBeside ? admitted.filter(applier.streams) : []
            let batch = beside.isEmpty ? admitted : admitted.filter { !applier.streams($0) }
            do {
                // A batch once started is finished even when shutdown cancels the loop: its outbound
                // records may be out already, and stopping before its commit would send them again
                // on restart. (An unstructured task does not inherit the cancellation.)
                let applier = self.applier
                var positions = expected
                if !batch.isEmpty {
                    let committed = try await Task { try await applier.apply(batch, expected: expected) }.value
                    positions.merge(committed) { $1 }
                    book.update(committed)
                    consumer.commit(Dictionary(uniqueKeysWithValues: committed.map { ($0.key.topicPartition, $0.value) }))
                    Counter(label: "pushline_processor_records_consumed_total").increment(by: batch.count)
                }
                for record in beside { startStream(record, expected: positions[record.partition], consumer: consumer) }
                return true
            } catch ProjectionStoreError.offsetConflict(let partitions) {
                // Another processor applied these partitions meanwhile: believe the store, read on
                // from where it says, and apply the rest of the batch.
                // A shard held for a send in this batch goes back whole to the store's offsets,
                // and its send is released again with it.
                var again = Set(partitions)
                let shards = order.withLock { order in Set(partitions.map { order.shard(of: $0) }).intersection(order.held) }
                if !shards.isEmpty {
                    let owned = book.owned
                    order.withLock { order in again.formUnion(owned.filter { shards.contains(order.shard(of: $0)) }) }
                }
                try await reclaim(Array(again), consumer: consumer)
                order.withLock { order in for shard in shards { order.resume(shard) } }
                records.removeAll { again.contains($0.partition) }
            }
        }
    }

    /// Believes the store's offsets for `partitions`, which another processor moved: the book,
    /// the order and the consumer go on from there.
    fileprivate func reclaim(_ partitions: [PartitionKey], consumer: KafkaConsumer) async throws {
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
    }
}

extension ApplyLoop {
    /// The sends read in pages beside the loop (`BatchApplier.applyStream`): one at a time, so
    /// that its two windows in flight and the loop's own fit the producer's queue together. A
    /// send's shard is held in the order from its release until its commit is settled; the other
    /// shards go on meanwhile.
    struct Streams {
        /// The sends released and not started, in release order, each with the stored offset of
        /// its partition it moves from (the records before it are committed).
        var queue: [(record: DecodedRecord, expected: Int64?)] = []
        var running: Task<Void, Never>?
        /// The shard of the send that runs.
        var runningShard: Int32?
        /// What the sends that ended committed (their next offsets), or why they failed.
        var ended: [(record: DecodedRecord, result: Result<[PartitionKey: Int64], any Error>)] = []
    }

    /// Queues `record`, a send whose shard the order now holds, and starts it if none runs.
    fileprivate func startStream(_ record: DecodedRecord, expected: Int64?, consumer: KafkaConsumer) {
        streams.withLock { $0.queue.append((record, expected)) }
        runNextStream(consumer: consumer)
    }

    private func runNextStream(consumer: KafkaConsumer) {
        let applier = self.applier
        streams.withLock { streams in
            guard streams.running == nil, !streams.queue.isEmpty else { return }
            let (record, expected) = streams.queue.removeFirst()
            streams.runningShard = order.withLock { $0.shard(of: record.partition) }
            // Not a child of the loop: like a batch, a send once started is finished even when
            // the loop is cancelled (`finishStreams` waits for it).
            streams.running = Task {
                let result: Result<[PartitionKey: Int64], any Error>
                do {
                    result = .success(try await applier.applyStream(record, expected: expected))
                } catch {
                    result = .failure(error)
                }
                self.streams.withLock { streams in
                    streams.running = nil
                    streams.runningShard = nil
                    streams.ended.append((record, result))
                }
                // The loop's next turn settles it and releases its shard.
                consumer.wake()
            }
        }
    }

    /// The owned partitions of the shard whose send runs beside the loop; empty when none runs.
    var streamingPartitions: Set<PartitionKey> {
        guard let shard = streams.withLock({ $0.runningShard }) else { return [] }
        let owned = book.owned
        return order.withLock { order in owned.filter { order.shard(of: $0) == shard } }
    }

    /// Settles the sends that ended: their offsets go into the book and the group, their shards
    /// are released again, and the next send starts. A send whose offset another processor moved
    /// gives its shard back to the store's offsets; any other failure stops the loop, as a
    /// batch's does. Returns whether one was applied.
    fileprivate func settleStreams(consumer: KafkaConsumer) async throws -> Bool {
        let ended = streams.withLock { streams in
            defer { streams.ended.removeAll() }
            return streams.ended
        }
        guard !ended.isEmpty else { return false }
        var applied = false
        for (record, result) in ended {
            let shard = order.withLock { $0.shard(of: record.partition) }
            switch result {
            case .success(let committed):
                book.update(committed)
                consumer.commit(Dictionary(uniqueKeysWithValues: committed.map { ($0.key.topicPartition, $0.value) }))
                Counter(label: "pushline_processor_records_consumed_total").increment()
                applied = true
            case .failure(ProjectionStoreError.offsetConflict):
                let owned = book.owned
                let partitions = order.withLock { order in owned.filter { order.shard(of: $0) == shard } }
                try await reclaim(Array(partitions), consumer: consumer)
            case .failure(let error):
                throw error
            }
            order.withLock { $0.resume(shard) }
        }
        runNextStream(consumer: consumer)
        return applied
    }

    /// Waits for the send that runs (a send once started is finished, as a batch is) and puts
    /// its offsets in the book; the sends queued behind it are left to whoever applies their
    /// shards next. Called when the loop stops or gives its shards up.
    func finishStreams(consumer: KafkaConsumer) async {
        let running = streams.withLock { streams in
            streams.queue.removeAll()
            return streams.running
        }
        await running?.value
        let ended = streams.withLock { streams in
            defer { streams = Streams() }
            return streams.ended
        }
        for (record, result) in ended {
            switch result {
            case .success(let committed):
                book.update(committed)
                consumer.commit(Dictionary(uniqueKeysWithValues: committed.map { ($0.key.topicPartition, $0.value) }))
            case .failure(let error):
                logger.warning("a send read in pages was not committed; its shard's next owner applies it", metadata: [
                    "partition": "\(record.partition)", "offset": "\(record.offset)", "error": "\(error)",
                ])
            }
        }
    }
}

/// Appends progress marks with the live processor's producer, one round at a time.
final class ProgressMarks: Sendable {
    let producer: KafkaProducer
    /// How long a partition must have delivered nothing before the processor marks it: one that
    /// did lately is about to deliver more, and a mark would only add a stored object.
    static let quiet = Duration.milliseconds(100)
    /// How long a lane may wait for the same offset below its partition's end before it is
    /// marked like a lane read to its end. The durable broker raises a partition's end before it
    /// writes the batch, so one stopped in between counts an offset that is never stored; a
    /// lane waiting for it would otherwise hold every later command back until another record
    /// lands in that partition. A fetch brings records long before this on a working broker.
    static let gapWait = Duration.seconds(1)
    private let counter = Counter(label: "pushline_processor_progress_marks_total")
    /// The least time between the starts of two rounds: under load, marks stay a few per
    /// partition and second, and each is a stored object on the one-machine broker.
    static let spacing = Duration.milliseconds(50)
    private let rounds = Mutex<(inFlight: Bool, lastStart: ContinuousClock.Instant?)>((false, nil))

    enum Round {
        case begun
        /// Another round is on its way.
        case inFlight
        /// The last round started less than `spacing` ago: the next may start then.
        case spaced(until: ContinuousClock.Instant)
    }

    /// Takes the one round in flight, if it may start now.
    func beginRound() -> Round {
        rounds.withLock { rounds in
            let now = ContinuousClock.now
            if rounds.inFlight { return .inFlight }
            if let last = rounds.lastStart, now - last < Self.spacing { return .spaced(until: last + Self.spacing) }
            rounds = (true, now)
            return .begun
        }
    }

    func endRound() {
        rounds.withLock { $0.inFlight = false }
    }

    private let wakeScheduled = Mutex(false)

    /// Wakes `consumer` at `instant`, unless a wake is already scheduled.
    func wake(_ consumer: KafkaConsumer, at instant: ContinuousClock.Instant) {
        guard wakeScheduled.withLock({ scheduled in
            defer { scheduled = true }
            return !scheduled
        }) else { return }
        Task {
            try? await Task.sleep(until: instant)
            self.wakeScheduled.withLock { $0 = false }
            consumer.wake()
        }
    }

    init(producer: KafkaProducer) {
        self.producer = producer
    }

    /// Appends one mark per partition and returns each as the record it is in the log, in order.
    func append(_ marks: [(partition: PartitionKey, time: Int64)]) async throws -> [ConsumedRecord] {
        let values = marks.map { ProgressMark.value(at: EventTime.date($0.time)) }
        let records = zip(marks, values).map { mark, value in
            KafkaProducerRecord(topic: mark.partition.topic, key: nil, value: value, headers: ProgressMark.headers.fields,
                                partition: mark.partition.partition)
        }
        let reports = try await producer.send(records)
        counter.increment(by: marks.count)
        let now = Date()
        return zip(zip(marks, values), reports).map { mark, report in
            ConsumedRecord(partition: mark.0.partition, offset: report.offset, type: ProgressMark.type, version: ProgressMark.version,
                           value: mark.1, timestamp: now)
        }
    }
}
