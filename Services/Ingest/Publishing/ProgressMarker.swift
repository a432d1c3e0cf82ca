import Contracts
import Foundation
import Kafka
import Logging
import Metrics
import ServiceLifecycle
import Synchronization

/// Keeps every command partition's event time close behind the newest command this ingest wrote.
///
/// The processor applies a command only once every command partition has shown that nothing
/// earlier can still come there (docs/ARCHITECTURE.md#state-is-a-function-of-the-log). A
/// partition that receives nothing would hold every command back; so every `lead`, each
/// partition that is behind this ingest's newest command and got no command for a `lead` gets a
/// progress mark stating a time `lead` past that command (partitions that do get commands move
/// on by themselves). Written with the same producer as the commands, the marks never race them
/// for a partition. While nothing is written, nothing is marked.
public final class ProgressMarker: Service, Sendable {
    private let producer: KafkaProducer
    private let lead: Duration
    private let partitionsOf: @Sendable () async throws -> [TopicPartition]
    private let logger: Logger
    private let counter = Counter(label: "pushline_ingest_progress_marks_total")

    private struct State {
        /// The newest command's `at`, in milliseconds since 1970.
        var newest: Int64 = .min
        /// Each partition's known time: the latest `at` of its commands, or its last mark's.
        var known: [TopicPartition: Int64] = [:]
        /// When each partition last got a command.
        var written: [TopicPartition: ContinuousClock.Instant] = [:]
        var partitions: [TopicPartition]?
    }

    private let state = Mutex(State())

    /// `partitionsOf`: every partition of the command topics (asked once, when first needed).
    public init(producer: KafkaProducer, lead: Duration, logger: Logger,
                partitionsOf: @escaping @Sendable () async throws -> [TopicPartition]) {
        self.producer = producer
        self.lead = lead
        self.logger = logger
        self.partitionsOf = partitionsOf
    }

    /// Notes where the broker acknowledged `commands` (their reports, in order).
    func published(_ commands: [EncodedCommand], _ reports: [KafkaDeliveryReport]) {
        let now = ContinuousClock.now
        state.withLock { state in
            for (command, report) in zip(commands, reports) {
                let at = EventTime.milliseconds(command.at)
                let partition = TopicPartition(topic: report.topic, partition: report.partition)
                state.newest = max(state.newest, at)
                state.known[partition] = max(state.known[partition] ?? .min, at)
                state.written[partition] = now
            }
        }
    }

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                try? await Task.sleep(for: self.lead)
                await self.markRound()
            }
        }
    }

    /// Marks every partition behind the newest command; errors are logged and the round retried
    /// at the next tick.
    func markRound() async {
        let (newest, partitions) = state.withLock { ($0.newest, $0.partitions) }
        guard newest > .min else { return }
        let all: [TopicPartition]
        if let partitions {
            all = partitions
        } else {
            do {
                all = try await partitionsOf()
                state.withLock { $0.partitions = all }
            } catch {
                logger.warning("command partitions not known yet; progress marks wait", metadata: ["error": "\(error)"])
                return
            }
        }
        let time = newest + Int64(lead.inMilliseconds)
        let quietSince = ContinuousClock.now - lead
        let behind = state.withLock { state in
            all.filter { (state.known[$0] ?? .min) < newest && (state.written[$0].map { $0 <= quietSince } ?? true) }
        }
        guard !behind.isEmpty else { return }
        let value = ProgressMark.value(at: EventTime.date(time))
        let records = behind.map {
            KafkaProducerRecord(topic: $0.topic, key: nil, value: value, headers: ProgressMark.headers.fields, partition: $0.partition)
        }
        do {
            _ = try await producer.send(records)
            counter.increment(by: records.count)
            state.withLock { state in for partition in behind { state.known[partition] = max(state.known[partition] ?? .min, time) } }
        } catch {
            logger.warning("progress marks not appended; trying again", metadata: ["error": "\(error)", "partitions": "\(behind.count)"])
        }
    }
}
