import Foundation

/// Cluster administration Pushline needs at startup: making sure its topics exist.
public enum KafkaAdmin {
    /// Creates the missing ones; a topic that already exists is not an error.
    ///
    /// Returns only once broker metadata lists every topic, so producers and consumers
    /// started afterwards see them (Tansu may need a moment). An existing topic keeps its
    /// partition count. Throws `KafkaError` on refusal or when `timeout` passes.
    public static func createTopics(
        _ topics: [(name: String, partitions: Int)],
        replicationFactor: Int = 1,
        bootstrapServers: String,
        properties: [String: String] = [:],
        timeout: Duration = .seconds(15)
    ) async throws {
        guard !topics.isEmpty else { return }
        let request = TopicCreation(
            topics: topics.map { TopicCreation.Topic(name: $0.name, partitions: $0.partitions) },
            replicationFactor: replicationFactor,
            properties: clientProperties(bootstrapServers, properties),
            timeout: timeout
        )
        try await BlockingPool.run { Result { try request.run() } }.get()
    }
}

extension KafkaAdmin {
    /// Every partition of `topics` the broker's metadata lists (one metadata request on a
    /// temporary client, which joins no group and fetches nothing). A topic the broker does not
    /// know is left out.
    public static func partitions(
        of topics: [String],
        bootstrapServers: String,
        properties: [String: String] = [:],
        timeout: Duration = .seconds(30)
    ) async throws -> [TopicPartition] {
        let query = PartitionQuery(topics: topics, properties: clientProperties(bootstrapServers, properties), timeout: timeout)
        return try await BlockingPool.run { Result { try query.run() } }.get()
    }

    /// The end offset (high watermark: the offset the next record will get) of every partition
    /// of `topics`. A topic the broker does not know is left out.
    ///
    /// Read from fetch responses, not asked with ListOffsets: Tansu answers ListOffsets(latest)
    /// wrongly for batches of several records. A group-less consumer is assigned
    /// every partition from its beginning with the smallest fetches, and each partition's high
    /// watermark is taken from the first fetch response that names it.
    public static func endOffsets(
        topics: [String],
        bootstrapServers: String,
        properties: [String: String] = [:],
        timeout: Duration = .seconds(30)
    ) async throws -> [TopicPartition: Int64] {
        let query = EndOffsetQuery(topics: topics,
                                   properties: clientProperties(bootstrapServers, fixed: [
                                       ("fetch.wait.max.ms", "50"), ("fetch.message.max.bytes", "1024"), ("enable.auto.commit", "false"),
                                       // assign() wants a group id; nothing joins it or commits to it.
                                       ("group.id", "pushline-end-offsets"),
                                   ], properties),
                                   timeout: timeout)
        return try await BlockingPool.run { Result { try query.run() } }.get()
    }
}

extension KafkaAdmin {
    /// The members of consumer group `groupId` and the partitions each is assigned, as the group's
    /// coordinator describes them (one DescribeGroups request on a temporary client, which joins
    /// nothing). A group with no members is described with none.
    public static func describeGroup(
        _ groupId: String,
        bootstrapServers: String,
        properties: [String: String] = [:],
        timeout: Duration = .seconds(15)
    ) async throws -> KafkaGroupDescription {
        let query = GroupQuery(groupId: groupId, properties: clientProperties(bootstrapServers, properties), timeout: timeout)
        return try await BlockingPool.run { Result { try query.run() } }.get()
    }
}

extension KafkaAdmin {
    /// A temporary client's settings: the brokers, then `fixed`, then the caller's `properties`
    /// (in key order), which librdkafka lets override what comes before them.
    private static func clientProperties(_ bootstrapServers: String, fixed: [(String, String)] = [],
                                         _ properties: [String: String]) -> [(String, String)] {
        [("bootstrap.servers", bootstrapServers)] + fixed + properties.sorted { $0.key < $1.key }
    }
}

/// A consumer group as its coordinator describes it.
public struct KafkaGroupDescription: Sendable, Equatable {
    public var groupId: String
    /// The group's state as librdkafka names it: `Stable`, `PreparingRebalance`,
    /// `CompletingRebalance`, `Empty`, `Dead` or `Unknown`.
    public var state: String
    /// Sorted by client id, then member id.
    public var members: [KafkaGroupMember]

    public init(groupId: String, state: String, members: [KafkaGroupMember]) {
        self.groupId = groupId
        self.state = state
        self.members = members
    }
}

/// One member of a consumer group.
public struct KafkaGroupMember: Sendable, Equatable {
    /// The id the coordinator gave the member when it joined.
    public var memberId: String
    /// The member's `client.id`.
    public var clientId: String
    /// The address the coordinator saw the member connect from.
    public var host: String
    /// The partitions the group's leader assigned it, sorted.
    public var assignment: [TopicPartition]

    public init(memberId: String, clientId: String, host: String, assignment: [TopicPartition]) {
        self.memberId = memberId
        self.clientId = clientId
        self.host = host
        self.assignment = assignment
    }
}

/// One DescribeGroups request on a temporary producer client.
private struct GroupQuery: Sendable {
    var groupId: String
    var properties: [(String, String)]
    var timeout: Duration

    func run() throws(KafkaError) -> KafkaGroupDescription {
        try RDKafkaClient.withTemporary(.producer, properties: properties) { client throws(KafkaError) in
            try client.describeGroup(groupId, timeout: timeout)
        }
    }
}

/// Partition counts from one metadata request, then fetches until every partition's high
/// watermark is known.
private struct EndOffsetQuery: Sendable {
    var topics: [String]
    var properties: [(String, String)]
    var timeout: Duration

    func run() throws(KafkaError) -> [TopicPartition: Int64] {
        let deadline = ContinuousClock.now + timeout
        return try RDKafkaClient.withTemporary(.consumer, properties: properties) { client throws(KafkaError) in
            try read(with: client, deadline: deadline)
        }
    }

    private func read(with client: RDKafkaClient, deadline: ContinuousClock.Instant) throws(KafkaError) -> [TopicPartition: Int64] {
        let wanted = Set(topics)
        let partitions = try client.topicMetadata(timeout: deadline - ContinuousClock.now)
            .filter { wanted.contains($0.name) }
            .flatMap { topic in topic.partitions.map { TopicPartition(topic: topic.name, partition: $0) } }
        guard !partitions.isEmpty else { return [:] }
        if var error = client.assign(partitions, startingAt: [:]) {
            error.message = "assigning partitions to read end offsets: \(error.message)"
            throw error
        }
        defer { client.unassignAll() }

        var ends: [TopicPartition: Int64] = [:]
        while ends.count < partitions.count {
            // The records themselves are not wanted: serving the consumer only lets the fetches go on.
            client.serveDiscarding(timeout: .milliseconds(50))
            for partition in partitions where ends[partition] == nil {
                ends[partition] = client.highWatermark(partition)
            }
            guard ContinuousClock.now < deadline else {
                throw KafkaError(.timedOut, message: "end offsets of \(partitions.count - ends.count) partitions not known in time")
            }
        }
        return ends
    }
}

/// One metadata request on a temporary producer client.
private struct PartitionQuery: Sendable {
    var topics: [String]
    var properties: [(String, String)]
    var timeout: Duration

    func run() throws(KafkaError) -> [TopicPartition] {
        let wanted = Set(topics)
        return try RDKafkaClient.withTemporary(.producer, properties: properties) { client throws(KafkaError) in
            try client.topicMetadata(timeout: timeout)
                .filter { wanted.contains($0.name) }
                .flatMap { topic in topic.partitions.map { TopicPartition(topic: topic.name, partition: $0) } }
                .sorted { ($0.topic, $0.partition) < ($1.topic, $1.partition) }
        }
    }
}

/// One blocking CreateTopics round trip on a temporary client, then a wait for metadata.
private struct TopicCreation: Sendable {
    struct Topic: Sendable {
        var name: String
        var partitions: Int
    }

    var topics: [Topic]
    var replicationFactor: Int
    var properties: [(String, String)]
    var timeout: Duration

    func run() throws(KafkaError) {
        for topic in topics where topic.partitions < 1 {
            // librdkafka passes 0 through and Tansu then creates a topic with no
            // partitions at all, which nothing can use.
            throw KafkaError.configuration("topic \(topic.name): partition count \(topic.partitions) is not at least 1")
        }
        let deadline = ContinuousClock.now + timeout
        // The admin API needs a client handle; a producer joins no group.
        try RDKafkaClient.withTemporary(.producer, properties: properties) { client throws(KafkaError) in
            try client.createTopics(topics.map { ($0.name, $0.partitions) }, replicationFactor: replicationFactor,
                                    timeout: deadline - ContinuousClock.now)
            try waitForMetadata(with: client, deadline: deadline)
        }
    }

    /// Asks for all-topic metadata until every requested topic is listed with partitions.
    private func waitForMetadata(with client: RDKafkaClient, deadline: ContinuousClock.Instant) throws(KafkaError) {
        var missing = Set(topics.map(\.name))
        var lastAnswer = "none"
        while true {
            do {
                for topic in try client.topicMetadata(timeout: deadline - ContinuousClock.now) where !topic.partitions.isEmpty {
                    missing.remove(topic.name)
                }
                lastAnswer = "Success"
            } catch {
                lastAnswer = error.message
            }
            if missing.isEmpty { return }
            guard ContinuousClock.now < deadline else {
                throw KafkaError(.timedOut, message: "topics \(missing.sorted()) not in broker metadata in time (last metadata answer: \(lastAnswer))")
            }
            usleep(100_000)
        }
    }
}
