import Contracts
import Kafka
import Synchronization

/// Publishes commands with the idempotent acks=all Kafka producer and returns only after the
/// broker acknowledged every one of them. A failure or a delivery past the producer's delivery
/// timeout becomes `PublishUnavailable` (→ 503 + Retry-After), never a 2xx.
public final class KafkaCommandPublisher: CommandPublisher {
    private let producer: KafkaProducer
    /// The command topics' partition count: a command of an app's part other than 0 goes to its
    /// part's partition (`EncodedCommand.partition`), the others where their key leads.
    private let partitions: Int
    private let readiness = Mutex<Readiness>(Readiness())

    /// The last broker check, and the one running now that every caller waits for.
    private struct Readiness {
        var ok = false
        var checked: ContinuousClock.Instant?
        var running: Task<Bool, Never>?
    }

    /// How the broker is checked: the producer's own check unless a test counts them.
    private let reachability: @Sendable () async -> Bool

    public init(producer: KafkaProducer, partitions: Int) {
        self.producer = producer
        self.partitions = partitions
        self.reachability = { await producer.isBrokerReachable(timeout: .seconds(1)) }
    }

    init(producer: KafkaProducer, partitions: Int = 12, reachability: @escaping @Sendable () async -> Bool) {
        self.producer = producer
        self.partitions = partitions
        self.reachability = reachability
    }

    public func publish(_ commands: [EncodedCommand], requestId: String) async throws -> [KafkaDeliveryReport] {
        // The commands of a request share their headers (one type and version, one request id):
        // made once, the list is shared by every record.
        var headers: (type: String, version: Int, list: [KafkaHeader])?
        let records = commands.map { c in
            if headers?.type != c.type || headers?.version != c.version {
                let fields = RecordHeaders(type: c.type, version: c.version, requestId: requestId).fields
                headers = (c.type, c.version, KafkaHeader.list(fields))
            }
            return KafkaProducerRecord(topic: c.topic, key: c.key, value: c.value, headers: headers!.list,
                                       partition: c.assignedPartition(partitions: partitions))
        }
        do {
            let reports = try await producer.send(records)
            readiness.withLock { $0.ok = true; $0.checked = ContinuousClock.now }
            return reports
        } catch let error as KafkaError where error.isRecordTooLarge {
            throw RecordTooLarge(reason: error.description)
        } catch let error as KafkaError {
            throw PublishUnavailable(reason: error.description)
        }
    }

    /// Cached for a second, and single-flight: however many health probes arrive at once, one
    /// broker check (a thread of its own, `isBrokerReachable`) runs at a time and every probe
    /// waiting meanwhile shares its answer, so a burst of probes cannot start a thread each.
    public func isReady() async -> Bool {
        let reachability = self.reachability
        let check: Task<Bool, Never>? = readiness.withLock { state in
            if let checked = state.checked, ContinuousClock.now - checked < .seconds(1) { return nil }
            if let running = state.running { return running }
            let running = Task { await reachability() }
            state.running = running
            return running
        }
        guard let check else { return readiness.withLock { $0.ok } }
        let ok = await check.value
        readiness.withLock { state in
            if state.running == check {
                state.running = nil
                state.ok = ok
                state.checked = ContinuousClock.now
            }
        }
        return ok
    }
}
