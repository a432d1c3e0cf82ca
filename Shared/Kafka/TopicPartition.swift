/// One partition of one topic: the unit of assignment, ordering and offsets.
/// Described as `topic[partition]`, the form librdkafka's own messages use.
public struct TopicPartition: Hashable, Sendable, CustomStringConvertible {
    public var topic: String
    public var partition: Int32

    public init(topic: String, partition: Int32) {
        self.topic = topic
        self.partition = partition
    }

    public var description: String {
        "\(topic)[\(partition)]"
    }
}
