import Contracts
import Kafka
import Synchronization

/// Publishes commands with the idempotent acks=all Kafka producer and returns only after the
/// broker acknowledged every one of them. A failure or a delivery past the producer's delivery
/// timeout becomes `PublishUnavailable` (→ 503 + Retry-After), never a 2xx.
public final class KafkaCommandPublisher: CommandPublisher {
    private let producer: KafkaProducer
    private let readiness = Mutex<(ok: Bool, checked: ContinuousClock.Instant?)>((false, nil))

    public init(producer: KafkaProducer) {
        self.producer = producer
    }

    public func publish(_ commands: [EncodedCommand], requestId: String) async throws {
        let records = commands.map { c in
            KafkaProducerRecord(topic: c.topic, key: c.key, value: c.value, headers: [
                KafkaHeader(name: RecordHeader.type, value: c.type),
                KafkaHeader(name: RecordHeader.version, value: String(c.version)),
                KafkaHeader(name: RecordHeader.requestId, value: requestId),
            ])
        }
        do {
            _ = try await producer.send(records)
            readiness.withLock { $0 = (true, ContinuousClock.now) }
        } catch let error as KafkaError {
            throw PublishUnavailable(reason: error.description)
        }
    }

    /// Cached for a second so that frequent health probes cost one metadata request per second.
    public func isReady() async -> Bool {
        let cached = readiness.withLock { $0 }
        if let checked = cached.checked, ContinuousClock.now - checked < .seconds(1) { return cached.ok }
        let ok = await producer.isBrokerReachable(timeout: .seconds(1))
        readiness.withLock { $0 = (ok, ContinuousClock.now) }
        return ok
    }
}
