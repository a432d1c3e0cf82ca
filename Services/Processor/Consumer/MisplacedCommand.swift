import Contracts
import Projections

/// A command in a partition its key does not lead to: the log was written with other keys (by a
/// Pushline from before shards, or another producer), so its partitions are not shards, and
/// applying part of them beside other processors would decide its commands against state that
/// depends on their timing. One processor that holds every shard applies such a log exactly.
struct MisplacedCommand: Error, CustomStringConvertible {
    var partition: PartitionKey
    var offset: Int64
    var key: String
    var part: Int = 0
    var expected: Int32

    /// Throws for the first command of `records` whose key and part (`AppParts.partition`, with
    /// apps in `parts`) lead to another partition of a topic of `partitions[topic]` partitions.
    static func check(_ records: [DecodedRecord], partitions: [String: Int], parts: AppParts) throws {
        for record in records {
            guard case .command(let c) = record.outcome, let count = partitions[record.partition.topic] else { continue }
            let key = c.payload.recordKey
            let expected = parts.partition(key: key, part: c.part, partitions: count)
            guard expected == record.partition.partition else {
                throw MisplacedCommand(partition: record.partition, offset: record.offset, key: key, part: c.part, expected: expected)
            }
        }
    }

    var description: String {
        "the command at \(partition) offset \(offset) has the key \(key)\(part == 0 ? "" : " and part \(part)"), which leads to "
            + "partition \(expected): this log's "
            + "partitions are not shards (it was written before commands were keyed by app, or by another producer), and "
            + "applying it in shards beside other processors would not be exact. Apply it with one processor of the group "
            + "(which then holds every shard), or rebuild the store with `pushline-processor rebuild`, which reads it whole "
            + "(docs/ARCHITECTURE.md#scale-out)."
    }
}
