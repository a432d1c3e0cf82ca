import Foundation

/// A record read from a partition, copied out of librdkafka's buffers (it owns all its
/// data and stays valid after the batch is released). Key and header values are
/// decoded as UTF-8; `timestamp` is the record's create or log-append time if the
/// broker supplied one.
public struct KafkaConsumerMessage: Sendable {
    public var topic: String
    public var partition: Int32
    public var offset: Int64
    public var key: String?
    public var value: Data
    public var headers: [KafkaHeader]
    public var timestamp: Date?

    /// The headers as name/value pairs, in record order.
    public var headerFields: [(name: String, value: String)] { headers.map { ($0.name, $0.value) } }

    public var topicPartition: TopicPartition {
        TopicPartition(topic: topic, partition: partition)
    }

    public init(
        topic: String,
        partition: Int32,
        offset: Int64,
        key: String?,
        value: Data,
        headers: [KafkaHeader] = [],
        timestamp: Date? = nil
    ) {
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.key = key
        self.value = value
        self.headers = headers
        self.timestamp = timestamp
    }
}
