import Contracts
import Foundation
import Kafka
import Logging

/// Where a batch's outbound records go. The applier publishes them, and waits for the
/// broker's acknowledgement, BEFORE it commits the batch's state and offsets: a crash in
/// between repeats that batch's records (same message ids) on restart, and never loses one.
protocol OutboundPublisher: Sendable {
    func publish(_ messages: [OutboundMessage]) async throws
}

/// Publishes outbound records to the outbound topic, keyed by device token, with the record
/// headers `type` (`push` or `badge-update`) and `v`.
struct KafkaOutboundPublisher: OutboundPublisher {
    let producer: KafkaProducer
    let topic: String
    /// Records handed to the producer per call: bounds its local queue (librdkafka refuses
    /// records past `queue.buffering.max.messages`) while a large fan-out is under way.
    var chunkSize = 50_000

    func publish(_ messages: [OutboundMessage]) async throws {
        var start = messages.startIndex
        while start < messages.endIndex {
            let end = min(start + chunkSize, messages.endIndex)
            let records = messages[start..<end].map { m in
                KafkaProducerRecord(topic: topic, key: m.deviceToken, value: m.value, headers: [
                    KafkaHeader(name: RecordHeader.type, value: m.kind.rawValue),
                    KafkaHeader(name: RecordHeader.version, value: "1"),
                ])
            }
            _ = try await producer.send(records)
            start = end
        }
    }
}
