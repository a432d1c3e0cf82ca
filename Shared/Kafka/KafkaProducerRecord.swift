import Foundation

/// A record to append to a topic. Unless `partition` names one, the partition is chosen by
/// librdkafka's partitioner from the key (records with the same key land in the same
/// partition, in send order); a nil key spreads records over the partitions.
public struct KafkaProducerRecord: Sendable {
    public var topic: String
    public var key: String?
    public var value: Data
    public var headers: [KafkaHeader]
    /// The partition to append to; nil lets the partitioner choose by key.
    public var partition: Int32?

    public init(topic: String, key: String?, value: Data, headers: [KafkaHeader] = [], partition: Int32? = nil) {
        self.topic = topic
        self.key = key
        self.value = value
        self.headers = headers
        self.partition = partition
    }

    /// A record whose headers are given as name/value pairs, in order.
    public init(topic: String, key: String?, value: Data, headers: [(name: String, value: String)], partition: Int32? = nil) {
        self.init(topic: topic, key: key, value: value, headers: KafkaHeader.list(headers),
                  partition: partition)
    }
}

/// One record of `KafkaProducer.send(count:topic:_:)`, written in place: the value is emptied
/// (its storage kept) before each record, the key and headers stay as the last record left them.
/// The partitioner chooses the partition by key.
public struct KafkaRecordBuffer {
    public var key: String?
    public var value: [UInt8]
    public var headers: [KafkaHeader]

    init() {
        key = nil
        value = []
        value.reserveCapacity(1024)
        headers = []
    }
}
