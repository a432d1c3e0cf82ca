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
    /// Records applied, by the loop and by the holds' queues beside it.
    private let consumed = Counter(label: "pushline_processor_records_consumed_total")
    /// Whether a send read in pages runs beside the loop, holding only its app part back
    /// (`Holds`); otherwise it is applied in its batch, and everything waits for it.
    private let streamsBeside: Bool
    private let holds = Mutex(Holds())

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

    /// Takes `keys` into the book and returns where each starts: at its stored offset, or
    /// before it, at the row of an app part held there (`Holds`).
    private func claim(_ keys: [PartitionKey]) async throws -> [TopicPartition: Int64] {
        let stored = try await store.offsets(topics: topics)
        let times = try await store.eventTimes(topics: topics)
        let held = try await heldLanes(of: keys)
        book.assign(keys, stored: stored)
        order.withLock { order in
            for k in keys { order.claim(k, next: stored[k] ?? unseenStart ?? 0, time: times[k] ?? 0, held: held) }
        }
        adoptHolds(held)
        logger.info("partitions assigned", metadata: ["partitions": "\(keys.map(\.description))"])
        var start: [TopicPartition: Int64] = [:]
        for k in keys {
            guard let o = stored[k] ?? unseenStart else { continue }
            start[k.topicPartition] = held.filter { $0.lane == k }.map(\.next).reduce(o, min)
        }
        return start
    }

    /// The rows of the app parts held on `keys`. Only a live processor holds app parts; a rebuild
    /// into a store that has such rows (restored from a serving store's changelog) stops.
    private func heldLanes(of keys: [PartitionKey]) async throws -> [HeldLane] {
        let wanted = Set(keys)
        let held = try await store.heldLanes(topics: topics).filter { wanted.contains($0.lane) }
        if !streamsBeside, let first = held.first { throw HeldLanesInRebuild(lane: first) }
        return held
    }

    /// Lets `partitions` go (the lease is gone): nothing of them is admitted or ordered any more,
    /// and the next claim starts afresh from the store (`finishHolds` has let their holds go).
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
        // What the order holds already (this processor's own marks and firings, taken in when
        // they were appended, read back now) is not decoded again.
        let next = order.withLock { order in
            Dictionary(uniqueKeysWithValues: Set(records.map(\.partition)).compactMap { partition in order.next(partition).map { (partition, $0) } })
        }
        let decoded = await applier.decode(records.filter { record in next[record.partition].map { record.offset >= $0 } ?? false })
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
        var applied = try await settleHolds(consumer: consumer)
        let applier = self.applier, beside = streamsBeside
        while true {
            let released = order.withLock { $0.release(limit: maxBatch) { beside && applier.streams($0) } }
            if !released.isEmpty, try await apply(released, consumer: consumer, check: check) { applied = true }
            if released.count == maxBatch || !released.started.isEmpty { continue }
            appendMarks(consumer: consumer)
            return applied
        }
    }

    /// Takes records this processor appended (its progress marks, `DueSends`' firings) into the
    /// order at once where they land right after their lane's last record
    /// (`EventOrder.appended`); returns how many it took. The caller wakes the consumer to
    /// release what they free, without waiting for a fetch to bring them back.
    func takeAppended(_ records: [ConsumedRecord]) async -> Int {
        let decoded = await applier.decode(records)
        return order.withLock { order in decoded.filter { order.appended($0) }.count }
    }

    /// Asks for the progress marks the order wants, on partitions read to their end that
    /// delivered nothing for `ProgressMarks.quiet` (a live processor only), so that a record
    /// waits for the partitions it did not go to about one produce round trip, not for their next
    /// command. They are appended in the background, one round at a time, so that a producer that
    /// cannot deliver (a broker restarting) never holds the loop. A mark that lands right after its
    /// lane's last record is taken into the lane at once, as it will be read back
    /// (`EventOrder.appended`), and the consumer is woken (`KafkaConsumer.wake`) to release
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
                _ = await self.takeAppended(try await marks.append(wanted))
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

    /// Applies released records: those the book admits in one store transaction, with their
    /// offsets, and commits them to the group. The records of held app parts go to their holds'
    /// queues once the partitions' offsets are past them and the rows of a hold begun here are
    /// stored (`Holds`).
    private func apply(_ released: EventOrder.Released, consumer: KafkaConsumer,
                       check: ([DecodedRecord], [PartitionKey: Int64]) throws -> Void) async throws -> Bool {
        var released = released
        while true {
            let owned = book.owned
            released.diverted.removeAll { !owned.contains($0.partition) }
            // A hold begins only in a shard still owned whole.
            if released.started.contains(where: { !owned.contains($0.lane) }) { released.started = [] }
            let (admitted, expected) = book.admit(released.records)
            guard !admitted.isEmpty || !released.diverted.isEmpty else { return false }
            try PartMismatch.check(admitted + released.diverted, parts: applier.appParts)
            try MessageKeyMissing.check(admitted + released.diverted, keys: applier.messageIdKeys)
            try check(admitted, expected)
            try check(released.diverted, book.stored(released.diverted.map(\.partition)))
            do {
                // A batch once started is finished even when shutdown cancels the loop: its outbound
                // records may be out already, and stopping before its commit would send them again
                // on restart. (An unstructured task does not inherit the cancellation.)
                let applier = self.applier
                if !admitted.isEmpty {
                    let committed = try await Task { try await applier.apply(admitted, expected: expected) }.value
                    book.update(committed)
                    consumer.commit(Dictionary(uniqueKeysWithValues: committed.map { ($0.key.topicPartition, $0.value) }))
                    consumed.increment(by: admitted.count)
                }
                if !released.diverted.isEmpty { try await pass(released.diverted, starting: released.started, consumer: consumer) }
                return true
            } catch ProjectionStoreError.offsetConflict(let partitions) {
                // Another processor applied these partitions meanwhile: believe the store, read on
                // from where it says, and apply the rest of the batch. Their shards are claimed
                // again whole, with the app parts held there (a hold begun here among them, if
                // its rows were not stored).
                let shards = try await reclaim(shardsOf: partitions, consumer: consumer)
                let startedShard = released.started.first.map { l in order.withLock { $0.shard(of: l.lane) } }
                if let startedShard, shards.contains(startedShard) { released.started = [] }
                let inShards = { (r: DecodedRecord) in shards.contains(self.order.withLock { $0.shard(of: r.partition) }) }
                released.records.removeAll(where: inShards)
                released.diverted.removeAll(where: inShards)
            }
        }
    }

    /// Moves the partitions' offsets past `diverted`, records of held app parts, storing the rows
    /// of the hold `started` begins in the same transaction, and hands the records to their holds.
    /// The order matters on a crash: a record whose partition's offset is past it is applied
    /// again only through its app part's row, which must be stored by then.
    private func pass(_ diverted: [DecodedRecord], starting started: [HeldLane], consumer: KafkaConsumer) async throws {
        var past: [PartitionKey: (next: Int64, time: Int64)] = [:]
        for record in diverted { past[record.partition] = (record.offset + 1, record.eventTime) }
        let stored = book.stored(Array(past.keys))
        var updates = started.map { OffsetUpdate(partition: $0.held.key(on: $0.lane), expected: nil, next: $0.next, eventTime: $0.eventTime) }
        for (partition, position) in past where position.next > stored[partition] ?? .min {
            updates.append(OffsetUpdate(partition: partition, expected: stored[partition], next: position.next, eventTime: position.time))
        }
        if !updates.isEmpty {
            let store = self.store
            try await Task { try await store.commit(mutations: [], offsets: updates) }.value
            let moved = Dictionary(uniqueKeysWithValues: updates.filter { HeldLane.parse($0.partition) == nil }.map { ($0.partition, $0.next) })
            book.update(moved)
            consumer.commit(Dictionary(uniqueKeysWithValues: moved.map { ($0.key.topicPartition, $0.value) }))
        }
        if !started.isEmpty {
            logger.info("a send read in pages holds its app part: its later commands are applied beside the loop", metadata: [
                "app_part": "\(started[0].held)", "lanes": "\(started.map { "\($0.lane)@\($0.next)" })",
            ])
        }
        enqueue(diverted, starting: started, consumer: consumer)
    }

    /// Believes the store's offsets, and its rows of held app parts, for the lanes of the shards
    /// of `partitions`, which another processor moved: the book, the order, the holds and the
    /// consumer go on from there. Returns the shards.
    fileprivate func reclaim(shardsOf partitions: [PartitionKey], consumer: KafkaConsumer) async throws -> Set<Int32> {
        let shards = order.withLock { order in Set(partitions.map { order.shard(of: $0) }) }
        logger.warning("offset conflict; re-reading stored offsets", metadata: ["partitions": "\(partitions.map(\.description))"])
        await finishHolds(in: shards)
        let owned = book.owned
        let lanes = order.withLock { order in owned.filter { shards.contains(order.shard(of: $0)) } }
        let stored = try await store.offsets(topics: topics)
        let times = try await store.eventTimes(topics: topics)
        let held = try await heldLanes(of: Array(lanes))
        var moved: [PartitionKey: Int64] = [:]
        for p in lanes { moved[p] = stored[p] ?? 0 }
        book.update(moved)
        order.withLock { order in
            for shard in shards { order.dropHolds(of: shard) }
            for (p, o) in moved where order.claimed.contains(p) { order.claim(p, next: o, time: times[p] ?? 0, held: held) }
        }
        adoptHolds(held)
        for (p, o) in moved where book.owned.contains(p) {
            try? consumer.seek(p.topicPartition, to: held.filter { $0.lane == p }.map(\.next).reduce(o, min))
        }
        return shards
    }
}

/// A rebuild found rows of app parts held beside a live processor's loop: only a live processor
/// applies their commands.
struct HeldLanesInRebuild: Error, CustomStringConvertible {
    var lane: HeldLane

    var description: String {
        "the store holds app part \(lane.held) beside the loop on \(lane.lane) (from offset \(lane.next)): a live processor was "
            + "applying its commands after a send read in pages. Start a processor on this store to finish them, then rebuild."
    }
}

extension ApplyLoop {
    /// The app parts held beside the loop. From a send read in pages on, its app part's records
    /// are applied in a queue of their own, in their order, while the loop goes on with the other
    /// apps' records (docs/ARCHITECTURE.md#a-send-read-in-pages-holds-only-its-app).
    ///
    /// A hold is in the store as one row per lane of its shard (`HeldLane`): the partitions'
    /// offsets move past the held records, and the rows say which of them are not applied yet.
    /// Each commit of a queue moves its rows by compare-and-set, as the offsets move. A hold whose
    /// queue is drained, once every record it must apply again after a claim is released, is let
    /// go by the loop: its rows are deleted, and its records flow with the others' again.
    ///
    /// A send runs at a time, so that its two windows in flight and the loop's own fit the
    /// producer's queue together; the other queues apply their records meanwhile.
    struct Holds {
        struct Queue {
            var shard: Int32
            /// The stored rows of the hold, by lane: what its next commit expects.
            var next: [PartitionKey: Int64]
            var pending: [DecodedRecord] = []
            var running: Task<Void, Never>?
            var runsSend = false
            /// Commits made; what the stall watch sees move (`heldProgress`).
            var steps = 0
            /// Why the last step failed; the loop settles it.
            var failure: (any Error)?
        }

        var queues: [HeldApp: Queue] = [:]
        var sendRunning = false
        /// Steps ended since the loop last looked (`settleHolds`).
        var ended = 0
    }

    /// Takes over the holds found in the store when their lanes were claimed.
    fileprivate func adoptHolds(_ rows: [HeldLane]) {
        guard !rows.isEmpty else { return }
        holds.withLock { holds in
            for row in rows {
                let shard = order.withLock { $0.shard(of: row.lane) }
                holds.queues[row.held, default: Holds.Queue(shard: shard, next: [:])].next[row.lane] = row.next
            }
        }
        logger.info("app parts held beside the loop taken over", metadata: [
            "app_parts": "\(Set(rows.map(\.held)).map(\.description).sorted())",
        ])
    }

    /// Queues `records` to their holds, after the hold `started` begins, and runs what may run.
    fileprivate func enqueue(_ records: [DecodedRecord], starting started: [HeldLane], consumer: KafkaConsumer) {
        holds.withLock { holds in
            if let first = started.first {
                let shard = order.withLock { $0.shard(of: first.lane) }
                holds.queues[first.held] = Holds.Queue(shard: shard, next: Dictionary(started.map { ($0.lane, $0.next) }) { $1 })
            }
            for record in records {
                guard let app = record.heldApp else { continue }
                holds.queues[app]?.pending.append(record)
            }
        }
        runHolds(consumer: consumer)
    }

    /// Starts a step of every queue that has records and none running: the records up to its
    /// next send in one transaction, or that send, if no other send runs.
    private func runHolds(consumer: KafkaConsumer) {
        let applier = self.applier, maxBatch = self.maxBatch
        holds.withLock { holds in
            for (app, queue) in holds.queues where queue.running == nil && queue.failure == nil && !queue.pending.isEmpty {
                let isSend = applier.streams(queue.pending[0])
                if isSend && holds.sendRunning { continue }
                let count = isSend ? 1 : min(maxBatch, queue.pending.prefix { !applier.streams($0) }.count)
                let records = Array(queue.pending.prefix(count))
                holds.queues[app]!.pending.removeFirst(count)
                holds.queues[app]!.runsSend = isSend
                if isSend { holds.sendRunning = true }
                let expected = queue.next
                // Not a child of the loop: like a batch, a step once started is finished even when
                // the loop is cancelled (`finishHolds` waits for it).
                holds.queues[app]!.running = Task {
                    let result: Result<[PartitionKey: Int64], any Error>
                    do {
                        result = .success(try await applier.apply(records, expected: expected, held: app))
                    } catch {
                        result = .failure(error)
                    }
                    self.holds.withLock { holds in
                        if isSend { holds.sendRunning = false }
                        holds.ended += 1
                        guard holds.queues[app] != nil else { return }
                        holds.queues[app]!.running = nil
                        holds.queues[app]!.runsSend = false
                        switch result {
                        case .success(let next):
                            holds.queues[app]!.next.merge(next) { $1 }
                            holds.queues[app]!.steps += 1
                        case .failure(let error):
                            holds.queues[app]!.failure = error
                        }
                    }
                    if case .success = result {
                        self.consumed.increment(by: records.count)
                        self.runHolds(consumer: consumer)
                    }
                    // The loop's next turn lets a drained hold go, or settles a failure.
                    consumer.wake()
                }
            }
        }
    }

    /// Lets go the holds whose queues are drained and that have nothing left to apply again
    /// (their rows are deleted, and their records flow with the others' again), and settles the
    /// steps that failed: a conflict (another processor took the shard) claims the shard again
    /// from the store; any other failure stops the loop, as a batch's does. Returns whether a
    /// queue applied anything since the last turn.
    fileprivate func settleHolds(consumer: KafkaConsumer) async throws -> Bool {
        let (ended, failed, drained) = holds.withLock { holds in
            defer { holds.ended = 0 }
            let failed = holds.queues.compactMap { app, queue in queue.failure.map { (app, queue.shard, $0) } }
            let drained = holds.queues.filter { $0.value.running == nil && $0.value.pending.isEmpty && $0.value.failure == nil }
            return (holds.ended, failed, drained)
        }
        for (app, shard, error) in failed {
            guard case ProjectionStoreError.offsetConflict = error else { throw error }
            logger.warning("a held app part's rows moved underneath; claiming its shard again", metadata: ["app_part": "\(app)"])
            let lanes = order.withLock { order in book.owned.filter { order.shard(of: $0) == shard } }
            _ = try await reclaim(shardsOf: Array(lanes), consumer: consumer)
        }
        for (app, queue) in drained where order.withLock({ $0.caughtUp(app) }) {
            let deletes = queue.next.map { OffsetUpdate(partition: app.key(on: $0.key), expected: $0.value, next: OffsetUpdate.deleted) }
            do {
                try await store.commit(mutations: [], offsets: deletes)
            } catch ProjectionStoreError.offsetConflict(let partitions) {
                _ = try await reclaim(shardsOf: partitions.compactMap { HeldLane.parse($0)?.lane }, consumer: consumer)
                continue
            }
            holds.withLock { $0.queues[app] = nil }
            order.withLock { $0.resume(app) }
            logger.info("a held app part is let go: its commands flow with the others' again", metadata: ["app_part": "\(app)"])
        }
        return ended > 0
    }

    /// Where each hold stands, by its rows' names (`HeldApp.key(on:)`), with the commits its
    /// queue made and whether a send of it runs: what `/health` watches beside the partitions.
    var heldProgress: [(key: PartitionKey, lane: PartitionKey, next: Int64, steps: Int, runsSend: Bool)] {
        holds.withLock { holds in
            holds.queues.flatMap { app, queue in
                queue.next.map { (app.key(on: $0.key), $0.key, $0.value, queue.steps, queue.runsSend) }
            }
        }
    }

    /// Waits for the steps that run (a step once started is finished, as a batch is) and forgets
    /// the holds of `shards` (all when nil) with their queued records: whoever claims their lanes
    /// next takes them over from the store. Called when the loop stops, gives its shards up, or
    /// claims them again.
    func finishHolds(in shards: Set<Int32>? = nil) async {
        let running = holds.withLock { holds in
            var running: [Task<Void, Never>] = []
            for (app, queue) in holds.queues where shards.map({ $0.contains(queue.shard) }) ?? true {
                if let task = queue.running { running.append(task) }
                holds.queues[app] = nil
            }
            return running
        }
        for task in running { await task.value }
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
        let records = marks.map { mark in
            KafkaProducerRecord(topic: mark.partition.topic, key: nil, value: ProgressMark.value(at: EventTime.date(mark.time)),
                                headers: ProgressMark.headers.fields, partition: mark.partition.partition)
        }
        let reports = try await producer.send(records)
        counter.increment(by: marks.count)
        let now = Date()
        return zip(records, reports).map {
            ConsumedRecord(appended: $0, at: $1, type: ProgressMark.type, version: ProgressMark.version, timestamp: now)
        }
    }
}
