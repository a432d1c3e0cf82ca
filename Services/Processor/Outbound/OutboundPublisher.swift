import Contracts
import Foundation
import Handlers
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
    /// A large fan-out is handed to the producer in this many parts at once, so that preparing
    /// and enqueuing records runs on several threads while earlier records are on the wire.
    var parallelism = 4
    /// Below this many records one call does it.
    var parallelThreshold = 10_000

    func publish(_ messages: [OutboundMessage]) async throws {
        guard messages.count >= parallelThreshold, parallelism > 1 else {
            try await send(messages[...])
            return
        }
        let size = (messages.count + parallelism - 1) / parallelism
        try await withThrowingTaskGroup(of: Void.self) { group in
            for start in stride(from: messages.startIndex, to: messages.endIndex, by: size) {
                let part = messages[start..<min(start + size, messages.endIndex)]
                group.addTask { try await send(part) }
            }
            try await group.waitForAll()
        }
    }

    /// Each record rendered into the producer's reused buffer as librdkafka takes it: no value
    /// or delivery report per record is kept.
    private func send(_ messages: ArraySlice<OutboundMessage>) async throws {
        let base = messages.startIndex
        try await producer.send(count: messages.count, topic: topic) { index, record in
            let message = messages[base + index]
            record.key = message.deviceToken
            record.headers = message.kind == .push ? Self.pushHeaders : Self.badgeUpdateHeaders
            message.writeValue(appendingTo: &record.value)
        }
    }

    private static let pushHeaders = KafkaHeader.list(RecordHeaders(type: OutboundMessage.Kind.push.rawValue).fields)
    private static let badgeUpdateHeaders = KafkaHeader.list(RecordHeaders(type: OutboundMessage.Kind.badgeUpdate.rawValue).fields)
}
