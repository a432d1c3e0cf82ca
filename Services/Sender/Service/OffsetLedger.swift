import Kafka
import Synchronization

/// Which records of its partitions the sender has read and not finished, and so how far each
/// partition may be committed: up to its lowest unfinished record (docs/ARCHITECTURE.md#delivery).
/// A record is finished once its outcome is in the delivery topic; a sender that stops, or loses
/// a partition, leaves the next owner to repeat only what was not finished.
///
/// A value, tested with made-up offsets; `SendLoop` keeps it under a lock.
struct PartitionLedger {
    private struct Track {
        /// Each assignment of the partition gets a new one: work begun under an earlier one stops.
        var generation: UInt64
        /// Read and not finished, in offset order (records are read in order).
        var pending: [Int64] = []
        var head = 0
        var done: Set<Int64> = []
        /// One past the last record read; nil before the first one.
        var next: Int64?
        /// What the group has stored, so that an unchanged offset is not committed again.
        var committed: Int64?
    }

    private var tracks: [TopicPartition: Track] = [:]
    private var generations: UInt64 = 0
    /// Records finished, all partitions together, since the start: health watches it move.
    private(set) var finished = 0

    /// Takes `partition`, whose records are read from `offset` (the group's committed offset;
    /// nil: from the beginning). Returns the assignment's generation.
    @discardableResult
    mutating func assign(_ partition: TopicPartition, from offset: Int64?) -> UInt64 {
        generations += 1
        tracks[partition] = Track(generation: generations, next: offset, committed: offset)
        return generations
    }

    /// Gives `partition` up; returns the offset to commit for it, if it moved.
    mutating func revoke(_ partition: TopicPartition) -> Int64? {
        defer { tracks[partition] = nil }
        return tracks[partition].flatMap { track in Self.position(track).flatMap { $0 == track.committed ? nil : $0 } }
    }

    /// Begins the record at `offset`: returns its generation, or nil for a record of a partition
    /// not owned, or one already read (fetched again after a rebalance).
    mutating func begin(_ partition: TopicPartition, offset: Int64) -> UInt64? {
        guard var track = tracks[partition] else { return nil }
        if let next = track.next, offset < next { return nil }
        track.pending.append(offset)
        track.next = offset + 1
        tracks[partition] = track
        return track.generation
    }

    /// Whether work begun under `generation` may still go on.
    func owns(_ partition: TopicPartition, generation: UInt64) -> Bool {
        tracks[partition]?.generation == generation
    }

    /// Finishes the record at `offset`, begun under `generation` (work of an earlier
    /// assignment no longer counts).
    mutating func finish(_ partition: TopicPartition, offset: Int64, generation: UInt64) {
        guard var track = tracks[partition], track.generation == generation else { return }
        track.done.insert(offset)
        while track.head < track.pending.count, track.done.remove(track.pending[track.head]) != nil {
            track.head += 1
        }
        if track.head > 1_024, track.head * 2 > track.pending.count {
            track.pending.removeFirst(track.head)
            track.head = 0
        }
        tracks[partition] = track
        finished += 1
    }

    /// The offsets to commit now: each partition's lowest unfinished record, or one past its
    /// last read when all are finished; only those that moved since the last commit.
    func committable() -> [TopicPartition: Int64] {
        var offsets: [TopicPartition: Int64] = [:]
        for (partition, track) in tracks {
            if let position = Self.position(track), position != track.committed { offsets[partition] = position }
        }
        return offsets
    }

    /// Notes offsets the group stored.
    mutating func committed(_ offsets: [TopicPartition: Int64]) {
        for (partition, offset) in offsets {
            tracks[partition]?.committed = offset
        }
    }

    /// Records read and not finished.
    var unfinished: Int {
        tracks.values.reduce(0) { $0 + $1.pending.count - $1.head }
    }

    /// The partitions owned, each with one past its last record read (nil: none read yet).
    var positions: [TopicPartition: Int64?] {
        tracks.mapValues { $0.next }
    }

    private static func position(_ track: Track) -> Int64? {
        track.head < track.pending.count ? track.pending[track.head] : track.next
    }
}
