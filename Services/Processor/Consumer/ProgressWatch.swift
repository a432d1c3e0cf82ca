import Projections

/// Decides which owned partitions have stopped making progress: records are waiting in the log
/// (the high watermark is past the stored next offset) and the stored offset has not moved for
/// `stallAfter`. A value that takes observations and answers, so it is tested with made-up
/// instants; the consumer feeds it once a second.
///
/// A partition is watched from the moment it is first observed (assignment): a processor that
/// just took a partition over is given `stallAfter` before it counts as stalled. A partition
/// that is caught up, or whose high watermark is not known yet, is never stalled. An app part
/// held beside the loop is watched alike, by its rows (`HeldApp.key(on:)`) against its lanes' high
/// watermarks.
struct ProgressWatch {
    let stallAfter: Duration
    private var watched: [PartitionKey: (next: Int64, since: ContinuousClock.Instant, behind: Bool)] = [:]

    init(stallAfter: Duration) {
        self.stallAfter = stallAfter
    }

    /// Records the stored next offsets of the owned partitions at `now` and returns the stalled
    /// ones, in key order. Partitions no longer owned are forgotten. `moving`: partitions that
    /// made progress since the last observation without their offset moving (the rows of a held
    /// app part whose send reads pages and publishes windows).
    mutating func observe(positions: [PartitionKey: Int64], highWatermark: (PartitionKey) -> Int64?,
                          moving: Set<PartitionKey> = [], now: ContinuousClock.Instant) -> [PartitionKey] {
        watched = watched.filter { positions[$0.key] != nil }
        var stalled: [PartitionKey] = []
        for (partition, next) in positions {
            let behind = highWatermark(partition).map { $0 > next } ?? false
            guard let seen = watched[partition], seen.next == next, seen.behind, behind, !moving.contains(partition) else {
                // New, moved on, nothing waiting, records just arrived, or moving: the clock starts again.
                watched[partition] = (next, now, behind)
                continue
            }
            if now - seen.since >= stallAfter { stalled.append(partition) }
        }
        return stalled.sorted { ($0.topic, $0.partition) < ($1.topic, $1.partition) }
    }
}
