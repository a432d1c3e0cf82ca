/// Notices a log that vanished under the consumer (Tansu with memory storage starts every
/// partition empty after a restart; docs/ARCHITECTURE.md#wrong-store-or-vanished-log).
///
/// Tansu does not answer OffsetOutOfRange when asked to read beyond a partition's end; it
/// just returns nothing, so a consumer would wait forever on a log that no longer holds
/// the records its state was built from. Instead, every partition gets a *claim*: an
/// offset that must not lie beyond the partition's end (its high watermark) in the log
/// the state was built from. Claims come from the start offsets `onAssign` returns, from
/// `seek`, and from every message read (offset + 1). The high watermark is the one the
/// last fetch response carried (`rd_kafka_get_watermark_offsets`), which librdkafka keeps
/// even when the response holds no records; ListOffsets is not used (it is wrong on Tansu).
///
/// A high watermark can be stale: the handle may have fetched the partition during an
/// earlier assignment. So a claim made when the known high watermark was H is judged only
/// once the high watermark differs from H, or once a later check found it valid.
struct LogEndCheck {
    enum Origin {
        case storedOffset
        case readPosition
    }

    private struct Claim {
        var offset: Int64
        var origin: Origin
        /// The high watermark known when the claim was made and not yet seen to move.
        var unconfirmedHighWatermark: Int64?
    }

    private var claims: [TopicPartition: Claim] = [:]

    /// A start or seek offset: the application's store says the log reached it.
    mutating func claimStored(_ offset: Int64, for partition: TopicPartition, knownHighWatermark: Int64?) {
        claims[partition] = Claim(offset: offset, origin: .storedOffset, unconfirmedHighWatermark: knownHighWatermark)
    }

    /// A message was read, so the log reached `offset + 1`; messages come from fresh
    /// fetch responses, so no stale high watermark is involved.
    mutating func claimRead(_ offset: Int64, for partition: TopicPartition) {
        if let claim = claims[partition], claim.offset >= offset + 1 { return }
        claims[partition] = Claim(offset: offset + 1, origin: .readPosition, unconfirmedHighWatermark: nil)
    }

    mutating func forget(_ partitions: some Sequence<TopicPartition>) {
        for partition in partitions { claims[partition] = nil }
    }

    var partitions: [TopicPartition] { Array(claims.keys) }

    /// Judges every claim against the current high watermarks; returns the error for
    /// the first claim beyond its partition's end.
    mutating func check(highWatermarks: [TopicPartition: Int64]) -> KafkaError? {
        for (partition, highWatermark) in highWatermarks {
            guard var claim = claims[partition] else { continue }
            if claim.offset <= highWatermark {
                claim.unconfirmedHighWatermark = nil
                claims[partition] = claim
                continue
            }
            if claim.unconfirmedHighWatermark == highWatermark { continue }
            return Self.vanished(partition, offset: claim.offset, end: highWatermark, origin: claim.origin)
        }
        return nil
    }

    static func vanished(_ partition: TopicPartition, offset: Int64, end: Int64, origin: Origin) -> KafkaError {
        let what = origin == .storedOffset ? "stored offset" : "read position"
        var error = KafkaError(
            .offsetOutOfRange,
            message: "the \(what) \(offset) is beyond the end \(end) of \(partition): "
                + "the log this state was built from no longer exists"
        )
        error.isRetriable = false
        return error
    }
}
