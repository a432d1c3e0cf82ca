import Foundation
import Kafka
import Logging
import Projections
import ProjectionStores

/// How far the projection store is behind the command topics, partition by partition: what
/// `pushline lag` shows.
///
/// The store keeps, per partition, the offset of the next record to apply (`OffsetUpdate.next`,
/// written in the same transaction as the state), and the broker's end offset (high watermark)
/// is the offset the next record will get. So the records still to apply are `end − applied`:
/// 0 when caught up, and `end` for a partition nothing was applied from yet (no stored offset
/// counts as 0, the start of a command log, which is never truncated).
public struct PartitionLag: Sendable, Equatable, Codable {
    public var topic: String
    public var partition: Int32
    /// The broker's end offset (high watermark); nil when the broker does not know the partition.
    public var endOffset: Int64?
    /// The offset of the next record the store will apply; nil when it has applied none.
    public var appliedOffset: Int64?
    /// Records in the log the store has not applied: `endOffset − (appliedOffset ?? 0)`. Negative
    /// when the store is ahead of the log (the broker lost records; the processor refuses to run
    /// then); nil when the end offset is unknown.
    public var lag: Int64?

    public init(topic: String, partition: Int32, endOffset: Int64?, appliedOffset: Int64?) {
        self.topic = topic
        self.partition = partition
        self.endOffset = endOffset
        self.appliedOffset = appliedOffset
        self.lag = endOffset.map { $0 - (appliedOffset ?? 0) }
    }
}

public enum ConsumerLag {
    /// One row per partition known to the broker or to the store, ordered as `topics`, then by
    /// partition.
    public static func rows(topics: [String], endOffsets: [TopicPartition: Int64], applied: [PartitionKey: Int64]) -> [PartitionLag] {
        var partitions = Set(endOffsets.keys.map { PartitionKey($0) })
        partitions.formUnion(applied.keys)
        let order = Dictionary(topics.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
        return partitions
            .filter { order[$0.topic] != nil }
            .sorted { (order[$0.topic]!, $0.partition) < (order[$1.topic]!, $1.partition) }
            .map { PartitionLag(topic: $0.topic, partition: $0.partition, endOffset: endOffsets[$0.topicPartition], appliedOffset: applied[$0]) }
    }

    /// Asks the broker for the end offsets of the command topics and the store for its applied
    /// offsets. Creates no topic, no store and writes nothing.
    public static func measure(configuration: ProcessorConfiguration, logger: Logger) async throws -> [PartitionLag] {
        let topics = configuration.shared.topics.commandTopics
        // Opening a SQLite store creates it: a mistyped path must not leave an empty store behind.
        if let path = ProjectionStoreFactory.sqlitePath(configuration.shared.store), !FileManager.default.fileExists(atPath: path) {
            throw ProjectionStoreError.invalidConfiguration("there is no SQLite store at \(path)")
        }
        let applied = try await ProjectionStoreFactory.withStore(configuration.shared.store, logger: logger) { store in
            try await store.offsets(topics: topics)
        }
        let ends = try await KafkaAdmin.endOffsets(topics: topics, bootstrapServers: configuration.shared.brokers,
                                                   properties: configuration.shared.kafkaProperties)
        return rows(topics: topics, endOffsets: ends, applied: applied)
    }
}

/// The lag of one shard: partition `shard` of every command topic
/// (docs/ARCHITECTURE.md#scale-out), which one processor applies.
public struct ShardLag: Sendable, Equatable, Codable {
    public var shard: Int32
    /// Records not applied yet over the shard's partitions (a negative partition lag counts 0).
    public var lag: Int64
    /// The stored offsets summed: records applied so far.
    public var applied: Int64

    public init(shard: Int32, lag: Int64, applied: Int64) {
        self.shard = shard
        self.lag = lag
        self.applied = applied
    }
}

extension ConsumerLag {
    /// The partitions' lag summed by shard, in shard order.
    public static func shards(_ rows: [PartitionLag]) -> [ShardLag] {
        var byShard: [Int32: ShardLag] = [:]
        for row in rows {
            byShard[row.partition, default: ShardLag(shard: row.partition, lag: 0, applied: 0)].lag += max(0, row.lag ?? 0)
            byShard[row.partition]!.applied += row.appliedOffset ?? 0
        }
        return byShard.values.sorted { $0.shard < $1.shard }
    }
}

/// One member of the processor group and the shards its lease partitions give it (`ShardShare`):
/// the work one processor does now, as the group's coordinator describes it.
public struct ProcessorShare: Sendable, Equatable, Codable {
    /// The member id the coordinator gave it.
    public var member: String
    /// Its `client.id` (`pushline-processor-<pid>`); when the coordinator does not say, the
    /// member id without the unique suffix the coordinator added to the client id.
    public var client: String
    /// The address the coordinator saw it connect from; empty when it does not say.
    public var host: String
    /// The lease partitions it holds.
    public var leasePartitions: [Int32]
    /// The shards those give it, of the ones asked about; none: it stands by.
    public var shards: [Int32]
}

/// The processor group as `pushline lag` shows it.
public struct ProcessorGroup: Sendable, Equatable, Codable {
    public var group: String
    /// The coordinator's name for the group's state (`Stable`, `PreparingRebalance`, `Empty`, …).
    public var state: String
    /// Whether the lease partitions are the ones the coordinator `reported` for each member, or
    /// `derived` from the members, as the range assignment of the group's leader gives them (a
    /// coordinator that reports no assignment, such as Tansu's).
    public var assignment: String
    public var processors: [ProcessorShare]
}

extension ConsumerLag {
    /// Who applies which of `shards` now: the members of the processor group
    /// (`PUSHLINE_GROUP_ID`) and the lease partitions each holds, from one DescribeGroups request,
    /// and the lease topic's partition count from the broker's metadata.
    public static func group(configuration: ProcessorConfiguration, shards: [Int32]) async throws -> ProcessorGroup {
        let topic = configuration.shared.topics.processorLease
        let description = try await KafkaAdmin.describeGroup(configuration.groupId, bootstrapServers: configuration.shared.brokers,
                                                             properties: configuration.shared.kafkaProperties)
        let leasePartitions = try await KafkaAdmin.partitions(of: [topic], bootstrapServers: configuration.shared.brokers,
                                                              properties: configuration.shared.kafkaProperties).count
        return group(description, leaseTopic: topic, leasePartitions: leasePartitions, shards: shards)
    }

    /// `description`'s members with the shards of their `leaseTopic` partitions. When no member
    /// has an assignment in the description while it has members, their lease partitions are
    /// derived (`rangeAssignment`).
    public static func group(_ description: KafkaGroupDescription, leaseTopic: String, leasePartitions: Int,
                             shards: [Int32]) -> ProcessorGroup {
        let reported = description.members.contains { !$0.assignment.isEmpty }
        let derived = reported ? [:] : rangeAssignment(members: description.members.map(\.memberId), partitions: leasePartitions)
        return ProcessorGroup(group: description.groupId, state: description.state, assignment: reported ? "reported" : "derived",
                              processors: description.members.map { member in
            let held = reported ? member.assignment.filter { $0.topic == leaseTopic }.map(\.partition) : derived[member.memberId] ?? []
            let share = ShardShare(held: Set(held), leasePartitions: leasePartitions)
            return ProcessorShare(member: member.memberId, client: member.clientId.isEmpty ? clientId(ofMember: member.memberId) : member.clientId,
                                  host: member.host, leasePartitions: held, shards: held.isEmpty ? [] : shards.filter { share.owns(shard: $0) })
        })
    }

    /// The partitions of one topic the range assignor (librdkafka's and Kafka's default, which the
    /// processors use) gives each member: members in member id order, each a run of
    /// `partitions / members`, the first `partitions % members` one more.
    static func rangeAssignment(members: [String], partitions: Int) -> [String: [Int32]] {
        guard !members.isEmpty else { return [:] }
        let sorted = members.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        let (each, extra) = partitions.quotientAndRemainder(dividingBy: sorted.count)
        var out: [String: [Int32]] = [:]
        for (index, member) in sorted.enumerated() {
            let start = each * index + min(index, extra)
            out[member] = (start..<start + each + (index < extra ? 1 : 0)).map(Int32.init)
        }
        return out
    }

    /// The client id in a member id the coordinator made (`<client.id>-<UUID>`), or the member
    /// id as it is.
    static func clientId(ofMember member: String) -> String {
        guard member.count > 37, let dash = member.index(member.endIndex, offsetBy: -37, limitedBy: member.startIndex),
              member[dash] == "-", UUID(uuidString: String(member[member.index(after: dash)...])) != nil else { return member }
        return String(member[..<dash])
    }
}
