import Kafka
import Projections
import Synchronization

/// What this processor believes about the partitions it owns: for each, the next offset
/// stored in the projection store (absent: nothing stored yet, read from the beginning).
///
/// Records of partitions not in the book (revoked) are never applied, and records below the
/// stored next offset (already applied, e.g. prefetched before a re-seek) are dropped.
final class OffsetBook: Sendable {
    private struct State {
        var owned: Set<PartitionKey> = []
        var next: [PartitionKey: Int64] = [:]
    }

    private let state = Mutex(State())

    func assign(_ partitions: [PartitionKey], stored: [PartitionKey: Int64]) {
        state.withLock {
            for p in partitions {
                $0.owned.insert(p)
                $0.next[p] = stored[p]
            }
        }
    }

    func revoke(_ partitions: [PartitionKey]) {
        state.withLock {
            for p in partitions {
                $0.owned.remove(p)
                $0.next[p] = nil
            }
        }
    }

    /// Sets the stored next offsets after a successful commit (or after re-reading them).
    func update(_ offsets: [PartitionKey: Int64]) {
        state.withLock {
            for (p, o) in offsets where $0.owned.contains(p) { $0.next[p] = o }
        }
    }

    var owned: Set<PartitionKey> { state.withLock { $0.owned } }

    /// Every owned partition with the offset reading resumes from (0 when nothing is stored).
    var positions: [PartitionKey: Int64] {
        state.withLock { s in Dictionary(uniqueKeysWithValues: s.owned.map { ($0, s.next[$0] ?? 0) }) }
    }

    /// The stored next offsets of those of `partitions` that have one.
    func stored(_ partitions: [PartitionKey]) -> [PartitionKey: Int64] {
        state.withLock { s in
            var stored: [PartitionKey: Int64] = [:]
            for p in partitions { stored[p] = s.next[p] }
            return stored
        }
    }

    /// Keeps the records this processor owns and has not applied yet, and returns them with
    /// the stored offsets their commit must expect.
    func admit(_ records: [DecodedRecord]) -> (records: [DecodedRecord], expected: [PartitionKey: Int64]) {
        state.withLock { s in
            let kept = records.filter { r in
                s.owned.contains(r.partition) && r.offset >= (s.next[r.partition] ?? Int64.min)
            }
            var expected: [PartitionKey: Int64] = [:]
            for r in kept { expected[r.partition] = s.next[r.partition] }
            return (kept, expected)
        }
    }
}

extension PartitionKey {
    init(_ tp: TopicPartition) { self.init(topic: tp.topic, partition: tp.partition) }
    var topicPartition: TopicPartition { TopicPartition(topic: topic, partition: partition) }
}
