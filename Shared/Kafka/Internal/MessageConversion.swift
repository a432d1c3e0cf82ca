import CRdKafka
import Foundation

/// Copies librdkafka messages into `KafkaConsumerMessage`s, remembering the topic name of
/// the last topic handle so a batch does not build the same string for every message.
struct MessageConversion {
    private var lastTopic: (handle: OpaquePointer, name: String)?

    mutating func convert(_ message: UnsafeMutablePointer<rd_kafka_message_t>) -> KafkaConsumerMessage {
        let raw = message.pointee
        return KafkaConsumerMessage(
            topic: topicName(raw.rkt),
            partition: raw.partition,
            offset: raw.offset,
            key: raw.key.map { String(decoding: UnsafeRawBufferPointer(start: $0, count: raw.key_len), as: UTF8.self) },
            value: raw.payload.map { Data(bytes: $0, count: raw.len) } ?? Data(),
            headers: Self.headers(of: message),
            timestamp: Self.timestamp(of: message)
        )
    }

    /// The partition an error message is about, if it names one.
    mutating func topicPartition(of message: UnsafeMutablePointer<rd_kafka_message_t>) -> TopicPartition? {
        guard message.pointee.rkt != nil else { return nil }
        return TopicPartition(topic: topicName(message.pointee.rkt), partition: message.pointee.partition)
    }

    private mutating func topicName(_ rkt: OpaquePointer?) -> String {
        guard let rkt else { return "" }
        if let lastTopic, lastTopic.handle == rkt { return lastTopic.name }
        let name = String(cString: rd_kafka_topic_name(rkt))
        lastTopic = (rkt, name)
        return name
    }

    private static func headers(of message: UnsafeMutablePointer<rd_kafka_message_t>) -> [KafkaHeader] {
        var list: OpaquePointer?
        guard rd_kafka_message_headers(message, &list) == RD_KAFKA_RESP_ERR_NO_ERROR, let list else { return [] }
        var headers: [KafkaHeader] = []
        var index = 0
        var name: UnsafePointer<CChar>?
        var value: UnsafeRawPointer?
        var size = 0
        while rd_kafka_header_get_all(list, index, &name, &value, &size) == RD_KAFKA_RESP_ERR_NO_ERROR {
            let text = value.map { String(decoding: UnsafeRawBufferPointer(start: $0, count: size), as: UTF8.self) } ?? ""
            headers.append(KafkaHeader(name: name.map { String(cString: $0) } ?? "", value: text))
            index += 1
        }
        return headers
    }

    private static func timestamp(of message: UnsafeMutablePointer<rd_kafka_message_t>) -> Date? {
        var type = RD_KAFKA_TIMESTAMP_NOT_AVAILABLE
        let milliseconds = rd_kafka_message_timestamp(message, &type)
        guard type != RD_KAFKA_TIMESTAMP_NOT_AVAILABLE, milliseconds >= 0 else { return nil }
        return Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }
}
