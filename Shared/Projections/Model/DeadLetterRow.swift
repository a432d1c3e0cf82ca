import Foundation

/// A command record the store refused for good: its write failed for a reason that retrying
/// cannot change (a value the database will not hold, a constraint), so the record was set
/// aside here, together with its partition's next offset, and the partition moved on.
///
/// It keeps the record's bytes, so that `pushline dead-letters reapply` can apply it again
/// once the cause is fixed, whatever the topic's retention did meanwhile.
public struct DeadLetterRow: Sendable, Equatable, Codable {
    public var partition: PartitionKey
    public var offset: Int64
    /// The record's `type` header (absent when it had none).
    public var type: String?
    /// Why the store refused it: the database's error, after the retries.
    public var reason: String
    /// The ingest request that produced the command (`request-id` header).
    public var requestId: String?
    /// The record's value, as consumed.
    public var value: Data
    /// When it was set aside (wall clock: operational information, not part of the dump).
    public var recordedAt: Date

    public init(partition: PartitionKey, offset: Int64, type: String?, reason: String, requestId: String?, value: Data,
                recordedAt: Date) {
        self.partition = partition
        self.offset = offset
        self.type = type
        self.reason = reason
        self.requestId = requestId
        self.value = value
        self.recordedAt = recordedAt
    }

    public var key: DeadLetterKey { DeadLetterKey(partition: partition, offset: offset) }

    /// The longest `reason` stored: database messages can quote whole values.
    public static let maxReasonLength = 2_000
}

/// Identifies a dead letter: the partition and offset of its record.
public struct DeadLetterKey: Hashable, Sendable, Codable, CustomStringConvertible, Comparable {
    public var partition: PartitionKey
    public var offset: Int64

    public init(partition: PartitionKey, offset: Int64) {
        self.partition = partition
        self.offset = offset
    }

    /// `topic:partition:offset`, as `pushline dead-letters` prints and reads it.
    public var description: String { "\(partition.topic):\(partition.partition):\(offset)" }

    /// Reads `topic:partition:offset` (the topic may itself contain `:`).
    public init?(_ text: String) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count >= 3, let offset = Int64(parts[parts.count - 1]), offset >= 0,
              let partition = Int32(parts[parts.count - 2]), partition >= 0
        else { return nil }
        let topic = parts[..<(parts.count - 2)].joined(separator: ":")
        guard !topic.isEmpty else { return nil }
        self.init(partition: PartitionKey(topic: topic, partition: partition), offset: offset)
    }

    /// Byte order of the topic, then partition, then offset: the order listings page in.
    public static func < (a: Self, b: Self) -> Bool {
        if a.partition.topic != b.partition.topic { return Array(a.partition.topic.utf8).lexicographicallyPrecedes(b.partition.topic.utf8) }
        if a.partition.partition != b.partition.partition { return a.partition.partition < b.partition.partition }
        return a.offset < b.offset
    }
}
