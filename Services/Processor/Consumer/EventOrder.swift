import Foundation
import Contracts
import Projections

/// Puts the records of the command partitions a processor reads into one order that depends on
/// the log alone, never on when each partition happened to be fetched
/// (docs/ARCHITECTURE.md#state-is-a-function-of-the-log).
///
/// Each record has an *event time*: the largest `at` of its partition up to and including it
/// (a record whose `at` is earlier than one before it counts as that later time). Event times
/// never decrease along a partition, and the order is by event time, then topic (in the order
/// the topics were given: admin, registration, notification, tracking, delivery), partition and offset.
///
/// A record is released only when no record of any lane can come before it: every lane either
/// holds a later record already, or has shown — by a record or a `ProgressMark` — an event time
/// that puts everything it may still receive after it. A lane with nothing new holds the others
/// back; `marksNeeded` names the lanes a progress mark would free.
///
/// An app part may be *held* (`release(limit:startsHold:)`): from a send read in pages on, its
/// records are released apart (`Released.diverted`), to be applied beside the loop in their
/// order, while the other apps' records go on. Apps share no state, so each keeps the order of
/// its own records, and the others' keep theirs. A lane claimed with held app parts
/// (`claim(_:next:time:held:)`) is read again from the least of their rows, and of the records
/// below its stored offset only theirs are released again.
struct EventOrder {
    /// A record's place in the order.
    struct Key: Comparable, Sendable, CustomStringConvertible {
        var time: Int64
        var rank: Int
        var partition: Int32
        var offset: Int64

        static func < (a: Key, b: Key) -> Bool {
            (a.time, a.rank, a.partition, a.offset) < (b.time, b.rank, b.partition, b.offset)
        }

        static let last = Key(time: .max, rank: .max, partition: .max, offset: .max)

        var description: String { "\(time)/\(rank)/\(partition)/\(offset)" }
    }

    private struct Lane {
        var rank: Int
        /// The next offset expected from the consumer.
        var next: Int64
        /// The event time of the last record received (released or not).
        var time: Int64
        /// Received, not yet released, in offset order from `head`.
        var buffer: [DecodedRecord] = []
        var head = 0
        /// Nothing more comes that is not already applied elsewhere (a rebuild at its target).
        var closed = false
        /// The time of a progress mark asked for and not yet seen in the lane.
        var markedAt: Int64?
        /// The partition's stored offset and event time when it was claimed: records below it
        /// are applied, but for those of app parts held at or past their rows (`recovering`).
        var applied: Int64
        var appliedTime: Int64

        var isEmpty: Bool { head == buffer.count }

        /// Where a hold that begins now starts on this lane: its first record not released, and
        /// the lane's time before it; never below the stored offset, as the records there are
        /// applied (those still released again are another held app part's).
        var position: (next: Int64, time: Int64) {
            unreleased < applied ? (applied, appliedTime) : isEmpty ? (next, time) : (buffer[head].offset, buffer[head].timeBefore)
        }

        /// The lane's first offset not released.
        var unreleased: Int64 { isEmpty ? next : buffer[head].offset }

        /// No record the lane may still receive comes before this key.
        func bound(_ partition: PartitionKey) -> Key {
            closed ? .last : Key(time: time, rank: rank, partition: partition.partition, offset: next)
        }
    }

    private var lanes: [PartitionKey: Lane] = [:]
    private let ranks: [String: Int]
    /// The app parts held, each with its shard.
    private(set) var held: [HeldApp: Int32] = [:]
    /// The rows of the app parts found held when their lanes were claimed: on each lane, their
    /// records from there on are released again, though the partition's offset is past them.
    private var recovering: [HeldApp: [PartitionKey: Int64]] = [:]
    /// Whether the command topics have equal partition counts, so that shard *i* is partition
    /// *i* of each; otherwise every partition is shard 0 (`ShardShare.partitions(of:)`).
    var coPartitioned = true

    /// The shard `partition` belongs to.
    func shard(of partition: PartitionKey) -> Int32 { coPartitioned ? partition.partition : 0 }

    /// `topics` in the order that breaks ties between equal event times.
    init(topics: [String]) {
        ranks = Dictionary(uniqueKeysWithValues: topics.enumerated().map { ($1, $0) })
    }

    /// Starts (or restarts, after an offset conflict) `partition` at its stored next offset and
    /// the event time stored with it, and holds the app parts `held` names there (their rows on
    /// this lane): the lane then starts at the least of their rows. Whatever was received for it
    /// before is dropped.
    mutating func claim(_ partition: PartitionKey, next: Int64, time: Int64, held rows: [HeldLane] = []) {
        var lane = Lane(rank: ranks[partition.topic] ?? ranks.count, next: next, time: time, applied: next, appliedTime: time)
        for row in rows where row.lane == partition {
            held[row.held] = shard(of: partition)
            recovering[row.held, default: [:]][partition] = row.next
            if row.next < lane.next { (lane.next, lane.time) = (row.next, row.eventTime) }
        }
        lanes[partition] = lane
    }

    /// Forgets `partition` (revoked): its records are no longer released. A shard none of whose
    /// lanes is left holds no app part any more.
    mutating func drop(_ partition: PartitionKey) {
        lanes[partition] = nil
        let shard = shard(of: partition)
        if !lanes.keys.contains(where: { self.shard(of: $0) == shard }) { dropHolds(of: shard) }
    }

    /// Forgets the app parts held in `shard` (it is claimed again, or given up).
    mutating func dropHolds(of shard: Int32) {
        for (app, s) in held where s == shard {
            held[app] = nil
            recovering[app] = nil
        }
    }

    /// `partition` receives nothing more (a rebuild reached the offset the serving store stands at):
    /// it no longer holds the other lanes back.
    /// Returns whether it was open.
    mutating func close(_ partition: PartitionKey) -> Bool {
        guard let lane = lanes[partition], !lane.closed else { return false }
        lanes[partition]!.closed = true
        return true
    }

    var claimed: Set<PartitionKey> { Set(lanes.keys) }

    /// Records received and not released yet.
    var buffered: Int { lanes.values.reduce(0) { $0 + $1.buffer.count - $1.head } }

    /// The next offset expected for `partition`, nil when it is not claimed.
    func next(_ partition: PartitionKey) -> Int64? { lanes[partition]?.next }

    /// Takes consumed records (in offset order within each partition) and gives each its event
    /// time. Records of partitions not claimed, and records before a lane's next offset (fetched
    /// again after a seek), are dropped; so are records below the partition's stored offset
    /// (applied), but for those of a held app part at or past its row, which count for the
    /// lane's time all the same.
    mutating func add(_ records: [DecodedRecord]) {
        for var record in records {
            guard var lane = lanes[record.partition], record.offset >= lane.next else { continue }
            lanes[record.partition] = nil  // keeps the buffer uniquely referenced while it grows
            record.timeBefore = lane.time
            if let at = record.at { lane.time = max(lane.time, at) }
            record.eventTime = lane.time
            lane.next = record.offset + 1
            if record.offset < lane.applied,
               !(record.heldApp.flatMap { recovering[$0]?[record.partition] }.map { record.offset >= $0 } ?? false) {
                lanes[record.partition] = lane
                continue
            }
            if let marked = lane.markedAt, lane.time >= marked { lane.markedAt = nil }
            if lane.head > 0 && lane.head == lane.buffer.count {
                lane.buffer.removeAll(keepingCapacity: true)
                lane.head = 0
            }
            lane.buffer.append(record)
            lanes[record.partition] = lane
        }
    }

    /// What `release` lets go, in order.
    struct Released {
        /// The records of app parts not held.
        var records: [DecodedRecord] = []
        /// The records of held app parts, a hold's first record included: each to be applied
        /// after its app part's records before it.
        var diverted: [DecodedRecord] = []
        /// The rows of the app part whose hold the last record began, one per lane of its shard:
        /// where its records start not being applied (`HeldLane`).
        var started: [HeldLane] = []

        var count: Int { records.count + diverted.count }
        var isEmpty: Bool { count == 0 }
    }

    /// Releases up to `limit` records, in order, as far as no lane can still receive an earlier
    /// one. The records of held app parts are released apart (`Released.diverted`). A record that
    /// `startsHold` names, of an app part not held, holds its app part from it on, and is the
    /// last released: the rows of the new hold are in `Released.started`.
    mutating func release(limit: Int, startsHold: (DecodedRecord) -> Bool = { _ in false }) -> Released {
        var bound = Key.last
        var heads = Heap<Key, PartitionKey>()
        for (partition, lane) in lanes {
            if lane.isEmpty {
                bound = min(bound, lane.bound(partition))
            } else {
                heads.push(key(of: lane.buffer[lane.head], rank: lane.rank), partition)
            }
        }
        var out = Released()
        while out.count < limit, let (key, partition) = heads.top, key < bound {
            heads.pop()
            var lane = lanes.removeValue(forKey: partition)!
            let record = lane.buffer[lane.head]
            lane.head += 1
            if !held.isEmpty, let app = record.heldApp, held[app] != nil {
                out.diverted.append(record)
            } else if let app = record.heldApp, startsHold(record) {
                out.diverted.append(record)
                lanes[partition] = lane
                let shard = shard(of: partition)
                held[app] = shard
                out.started = lanes.filter { self.shard(of: $0.key) == shard }.map { other, lane in
                    let (next, time) = other == partition ? (record.offset, record.timeBefore) : lane.position
                    return HeldLane(held: app, lane: other, next: next, eventTime: time)
                }
                break
            } else {
                out.records.append(record)
            }
            if lane.isEmpty {
                bound = min(bound, lane.bound(partition))
            } else {
                heads.push(self.key(of: lane.buffer[lane.head], rank: lane.rank), partition)
            }
            lanes[partition] = lane
        }
        for (partition, lane) in lanes where lane.head > 4_096 && lane.head * 2 > lane.buffer.count {
            lanes[partition]!.buffer.removeFirst(lane.head)
            lanes[partition]!.head = 0
        }
        return out
    }

    /// Lets `app`'s records be released with the others' again.
    mutating func resume(_ app: HeldApp) {
        held[app] = nil
        recovering[app] = nil
    }

    /// Whether every record below its lanes' stored offsets that `app`, held when they were
    /// claimed, has to apply again is released: until then its hold must stay.
    func caughtUp(_ app: HeldApp) -> Bool {
        guard let shard = held[app] else { return true }
        return lanes.allSatisfy { partition, lane in self.shard(of: partition) != shard || lane.unreleased >= lane.applied }
    }

    /// The lanes that hold released-able records back while they have nothing new: each with
    /// the time a progress mark there must state to free every record waiting now (at least
    /// `now`, in milliseconds since 1970). `atEnd` says whether the consumer has read a lane to
    /// its partition's end; lanes with records still to fetch are waited for, not marked, and a
    /// lane is not marked again while its last mark is still on the way.
    mutating func marksNeeded(now: Int64, atEnd: (PartitionKey, Int64) -> Bool) -> [(partition: PartitionKey, time: Int64)] {
        var latest = Int64.min
        for (_, lane) in lanes {
            for record in lane.buffer[lane.head...].reversed() where !record.isProgressMark {
                latest = max(latest, record.eventTime)
                break
            }
        }
        guard latest > .min else { return [] }
        let time = max(now, latest + 1)
        var marks: [(partition: PartitionKey, time: Int64)] = []
        // Every lane whose time does not pass the latest waiting record holds one of them back.
        for (partition, lane) in lanes where lane.isEmpty && !lane.closed && lane.markedAt == nil
            && lane.time <= latest && atEnd(partition, lane.next) {
            lanes[partition]!.markedAt = time
            marks.append((partition, time))
        }
        return marks
    }

    /// This processor appended `record` (a progress mark asked for by `marksNeeded`, a scheduled
    /// send's firing): when nothing lies between the lane's last record and it, it is taken into
    /// the lane now, exactly as it will be read back (which is then dropped as already received),
    /// so the lane's time moves on without waiting for a fetch (the one-machine broker holds an
    /// empty fetch for its whole wait, however soon a record lands). Returns whether it was taken.
    mutating func appended(_ record: DecodedRecord) -> Bool {
        guard let lane = lanes[record.partition], record.offset == lane.next else { return false }
        add([record])
        return true
    }

    /// A mark that could not be appended may be asked for again.
    mutating func markFailed(_ partition: PartitionKey) {
        lanes[partition]?.markedAt = nil
    }

    /// A progress mark changes no state, so it need not wait for anything: at the head of its
    /// lane it goes first (its lane's time, which is what the mark is for, is already counted).
    /// Otherwise marks would wait for marks elsewhere, which would ask for marks in turn.
    private func key(of record: DecodedRecord, rank: Int) -> Key {
        Key(time: record.isProgressMark ? .min : record.eventTime, rank: rank, partition: record.partition.partition,
            offset: record.offset)
    }
}

/// A binary min-heap of keys with a value each.
struct Heap<Key: Comparable, Value> {
    private var items: [(key: Key, value: Value)] = []

    var top: (Key, Value)? { items.first.map { ($0.key, $0.value) } }
    var isEmpty: Bool { items.isEmpty }

    mutating func push(_ key: Key, _ value: Value) {
        items.append((key, value))
        var i = items.count - 1
        while i > 0 {
            let parent = (i - 1) / 2
            guard items[i].key < items[parent].key else { break }
            items.swapAt(i, parent)
            i = parent
        }
    }

    mutating func pop() {
        guard !items.isEmpty else { return }
        items.swapAt(0, items.count - 1)
        items.removeLast()
        var i = 0
        while true {
            let l = 2 * i + 1, r = l + 1
            var smallest = i
            if l < items.count && items[l].key < items[smallest].key { smallest = l }
            if r < items.count && items[r].key < items[smallest].key { smallest = r }
            guard smallest != i else { return }
            items.swapAt(i, smallest)
            i = smallest
        }
    }
}
