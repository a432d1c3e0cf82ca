import Contracts
import Foundation
import Kafka
import Logging
import Metrics
import ServiceLifecycle
import Synchronization
import WireCodec

/// The sender's consumer (docs/ARCHITECTURE.md#delivery): a member of the sender group on the
/// outbound topic that pushes every record through `Pusher`, reports each record's outcome to
/// the delivery topic, and commits a partition only up to its lowest record whose outcome is not
/// in the log yet. A sender stopped or killed leaves the next owner of its partitions to repeat
/// the records it had not finished — with the same `apns-id` — and none is lost.
///
/// Records are worked on concurrently, up to `window` at once across partitions; provider
/// requests are bounded by `Pusher`'s slots. A record that must wait — for a retry, or while
/// its app's credentials are refused — waits without a request slot, and one app may keep at
/// most `appWaiting` records waiting.
public final class SendLoop: Service, Sendable {
    private let configuration: SenderConfiguration
    private let pusher: Pusher
    private let book: CredentialsBook
    private let producer: KafkaProducer
    private let logger: Logger
    private let ledger = Mutex(PartitionLedger())
    private let window: Slots
    private let waiting = Mutex<[UUID: Int]>([:])
    private let sending = Atomic<Int>(0)
    private let stopping = Atomic<Bool>(false)
    private let health = Mutex<Health>(Health())
    private let metrics = SenderMetrics()
    private static let encoder = WireJSON.encoder()
    /// The headers of every outcome record: one type and version, no request.
    private static let resultHeaders = KafkaHeader.list(RecordHeaders(type: DeliveryResultReported.type.rawValue,
                                                                      version: DeliveryResultReported.version).fields)
    /// Set once the consumer exists; the rebalance hooks use it.
    private let consumerBox = Mutex<KafkaConsumer?>(nil)

    private struct Health {
        var running = false
        var lastFinished = 0
        var since = ContinuousClock.now
        var stalled: String?
    }

    public init(configuration: SenderConfiguration, pusher: Pusher, credentials: CredentialsBook, producer: KafkaProducer, logger: Logger) {
        self.configuration = configuration
        self.pusher = pusher
        self.book = credentials
        self.producer = producer
        self.logger = logger
        window = Slots(configuration.window)
    }

    /// Why the sender is not doing its work, or nil: its consumer is not running, or records
    /// are waiting to be read or sent and none finished for the stall time.
    public var problem: String? {
        health.withLock { $0.running ? $0.stalled : "the sender's consumer is not running" }
    }

    public func run() async throws {
        let rebalance = KafkaRebalanceHandler(onAssign: { [self] partitions in
            let consumer = try await self.waitForConsumer()
            // The group's committed offsets: where the last owner's finished records end.
            let offsets = try consumer.committedOffsets(partitions)
            ledger.withLock { ledger in
                for partition in partitions { ledger.assign(partition, from: offsets[partition]) }
            }
            logger.info("sender partitions assigned", metadata: ["partitions": "\(partitions.count)", "committed": "\(offsets.count)"])
            return offsets
        }, onRevoke: { [self] partitions in
            let offsets = ledger.withLock { ledger in
                partitions.reduce(into: [TopicPartition: Int64]()) { offsets, partition in offsets[partition] = ledger.revoke(partition) }
            }
            guard let consumer = consumerBox.withLock({ $0 }) else { return }
            do {
                try consumer.commitAndWait(offsets)
            } catch {
                logger.warning("sender offsets not committed on revocation", metadata: ["error": "\(error)"])
            }
        })
        let consumer = try KafkaConsumer(configuration: configuration.consumerConfiguration, topics: [configuration.shared.topics.outbound],
                                         rebalance: rebalance, logger: logger)
        consumerBox.withLock { $0 = consumer }
        health.withLock { $0 = Health(running: true) }
        defer { health.withLock { $0.running = false } }

        // Stopping: reading ends at once; requests in the air get a moment to finish and be
        // reported; then the rest is cancelled, and what is unfinished (waiting records included)
        // is left to the next owner of its partition.
        let work = Task { try await self.work(consumer) }
        do {
            try await withGracefulShutdownHandler {
                try await withTaskCancellationHandler { try await work.value } onCancel: { work.cancel() }
            } onGracefulShutdown: {
                self.stopping.store(true, ordering: .relaxed)
                Task {
                    let deadline = ContinuousClock.now + .seconds(3)
                    while self.sending.load(ordering: .relaxed) > 0, ContinuousClock.now < deadline {
                        try? await Task.sleep(for: .milliseconds(20))
                    }
                    work.cancel()
                }
            }
        } catch is CancellationError {
            // Stopped as asked.
        } catch {
            await finish(consumer)
            throw error
        }
        await finish(consumer)
    }

    /// Reads records and delivers each in a task of its own, until the batches end (an error, or
    /// cancellation).
    private func work(_ consumer: KafkaConsumer) async throws {
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { await self.tick(consumer) }
            for try await batch in consumer.batches() {
                for message in batch where !stopping.load(ordering: .relaxed) {
                    guard let generation = ledger.withLock({ $0.begin(message.topicPartition, offset: message.offset) }) else { continue }
                    // Not acquired: cancelled; the record stays unfinished for the next owner.
                    guard await window.acquire() else { break }
                    group.addTask {
                        await self.deliver(message, generation: generation)
                        self.window.release()
                    }
                }
            }
            group.cancelAll()
        }
    }

    private func finish(_ consumer: KafkaConsumer) async {
        let offsets = ledger.withLock { $0.committable() }
        do {
            try consumer.commitAndWait(offsets)
        } catch {
            logger.warning("sender offsets not committed on shutdown", metadata: ["error": "\(error)"])
        }
        await consumer.close()
    }

    private func waitForConsumer() async throws -> KafkaConsumer {
        // A group can assign partitions before the consumer's initializer has returned.
        while true {
            if let consumer = consumerBox.withLock({ $0 }) { return consumer }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Once a second: commits what finished, updates the gauges, judges progress and closes
    /// idle connections.
    private func tick(_ consumer: KafkaConsumer) async {
        let stallAfter = Duration.milliseconds(configuration.stallTimeoutMs)
        while (try? await Task.sleep(for: .seconds(1))) != nil {
            await pusher.closeIdleLanes(idle: .milliseconds(configuration.idleConnectionMs))
            let (offsets, finished, unfinished, positions) = ledger.withLock { ledger in
                let offsets = ledger.committable()
                ledger.committed(offsets)
                return (offsets, ledger.finished, ledger.unfinished, ledger.positions)
            }
            consumer.commit(offsets)
            let inFlight = sending.load(ordering: .relaxed)
            let behind = positions.contains { partition, next in
                guard let high = consumer.highWatermark(partition) else { return false }
                return high > (next ?? 0)
            }
            metrics.partitions.record(positions.count)
            metrics.unfinished.record(unfinished)
            metrics.sending.record(inFlight)
            metrics.waiting.record(waiting.withLock { $0.values.reduce(0, +) })
            metrics.paused.record(book.pausedCount)
            metrics.connections.record(pusher.laneCount)
            let now = ContinuousClock.now
            health.withLock { health in
                if finished != health.lastFinished || !(behind || inFlight > 0) {
                    health.lastFinished = finished
                    health.since = now
                    health.stalled = nil
                } else if now - health.since >= stallAfter {
                    health.stalled = "no push finished for \(Int((now - health.since).components.seconds)) s while records wait to be sent"
                }
            }
        }
    }

    // MARK: One record

    private struct Report {
        var outcome: DeliveryOutcome
        var reason: String?
        var status: Int?
        var invalidSince: Date?
    }

    /// Pushes one record until it has an outcome, reports it, and finishes the record. Returns
    /// early, leaving it unfinished, when the partition was given up or the sender stops.
    private func deliver(_ message: KafkaConsumerMessage, generation: UInt64) async {
        let partition = message.topicPartition
        guard let record = try? OutboundPush.read(message.value) else {
            // Not a record Pushline's processor writes: nothing to push or to report on.
            metrics.skipped(.badRecord)
            logger.warning("outbound record skipped: it does not decode",
                           metadata: ["partition": "\(partition)", "offset": "\(message.offset)"])
            ledger.withLock { $0.finish(partition, offset: message.offset, generation: generation) }
            return
        }
        var attempts = 0
        var waits = false
        defer {
            if waits {
                waiting.withLock { waiting in
                    let left = waiting[record.mobileAppId, default: 1] - 1
                    waiting[record.mobileAppId] = left > 0 ? left : nil
                }
            }
        }
        /// Counts the record among its app's waiting ones; false when the app has no room.
        func mayWait() -> Bool {
            if waits { return true }
            waits = waiting.withLock { waiting in
                guard waiting[record.mobileAppId, default: 0] < configuration.appWaiting else { return false }
                waiting[record.mobileAppId, default: 0] += 1
                return true
            }
            return waits
        }
        let report: Report? = await {
            let provider: PushProvider = record.platform == .ios ? .apns : .fcm
            // The send's own expiry, else the sender's default counted from the record's time.
            let expiresAt = record.expiry ?? (message.timestamp ?? Date()).addingTimeInterval(TimeInterval(configuration.expiryMs) / 1000)
            var random = SystemRandomNumberGenerator()
            var last: Report?
            while ledger.withLock({ $0.owns(partition, generation: generation) }), !Task.isCancelled {
                // Never handed over after its expiry: counted as expired, with the last answer's reason.
                if Date() >= expiresAt {
                    return Report(outcome: .expired, reason: last?.reason, status: last?.status)
                }
                let credentials: PushCredentials?
                do {
                    credentials = try await book.credentials(of: record.mobileAppId)
                } catch {
                    logger.warning("the store did not answer for credentials", metadata: ["app": "\(record.mobileAppId)", "error": "\(error)"])
                    guard (try? await Task.sleep(for: .seconds(1))) != nil else { return nil }
                    continue
                }
                guard let credentials, let version = credentials.version(of: provider) else {
                    metrics.skipped(.noCredentials)
                    return Report(outcome: .failed, reason: "NoCredentials: the app has no \(provider.rawValue) credentials")
                }
                let (paused, ended) = book.pauseReason(record.mobileAppId, provider, version: version)
                if ended { logger.notice("sending resumed: credentials replaced", metadata: ["app": "\(record.mobileAppId)", "provider": "\(provider)"]) }
                if let paused {
                    guard mayWait() else { return Report(outcome: .failed, reason: "CredentialsRejected: \(paused)") }
                    guard (try? await Task.sleep(for: .milliseconds(max(500, configuration.credentialsCacheMs)))) != nil else { return nil }
                    continue
                }
                sending.add(1, ordering: .relaxed)
                let attempt = await pusher.attempt(record, credentials: credentials, expiresAt: expiresAt)
                sending.subtract(1, ordering: .relaxed)
                attempts += 1
                metrics.attempted(record.platform, attempt)
                switch attempt {
                case .noCredentials(let provider):
                    return Report(outcome: .failed, reason: "NoCredentials: the app has no \(provider.rawValue) credentials")
                case .badRecord(let why):
                    return Report(outcome: .failed, reason: "BadRecord: \(why)")
                case .outcome(.delivered):
                    return Report(outcome: .delivered, status: 200)
                case .outcome(.unregistered(let reason, let since)):
                    return Report(outcome: .unregistered, reason: reason, invalidSince: since)
                case .outcome(.failed(let status, let reason)):
                    return Report(outcome: .failed, reason: reason, status: status)
                case .outcome(.credentialsRejected(let reason)):
                    if book.pause(record.mobileAppId, provider, version: version, reason: reason) {
                        logger.error("sending paused: the provider refused the app's credentials; replace them to resume",
                                     metadata: ["app": "\(record.mobileAppId)", "provider": "\(provider)", "reason": "\(reason)"])
                    }
                case .outcome(.retry(let reason, let retryAfter)):
                    last = Report(outcome: .failed, reason: reason)
                    let delay = configuration.retryPolicy.delay(afterAttempt: attempts, retryAfter: retryAfter, using: &random)
                    guard Date().addingTimeInterval(delay) < expiresAt else {
                        return Report(outcome: .expired, reason: reason)
                    }
                    guard mayWait() else { return Report(outcome: .failed, reason: "\(reason): too many of the app's pushes wait for a retry") }
                    guard (try? await Task.sleep(for: .milliseconds(Int64(delay * 1000)))) != nil else { return nil }
                }
            }
            return nil
        }()
        guard let report else { return }
        let result = DeliveryResultReported(mobileAppId: record.mobileAppId, deviceToken: record.deviceToken, platform: record.platform,
                                            deliveryId: record.deliveryId, messageId: record.messageId, outcome: report.outcome,
                                            reason: report.reason, status: report.status, attempts: attempts,
                                            invalidSince: report.invalidSince, locale: record.locale)
        guard await publish(result, partition: partition, generation: generation) else { return }
        metrics.finished(record.platform, report.outcome)
        ledger.withLock { $0.finish(partition, offset: message.offset, generation: generation) }
    }

    /// Writes the outcome to the delivery topic, trying again until the broker has it; false
    /// when the partition was given up or the sender stops first.
    private func publish(_ result: DeliveryResultReported, partition: TopicPartition, generation: UInt64) async -> Bool {
        let record: KafkaProducerRecord
        do {
            // Written by hand (`HandWrittenCommand`): the encoder is not used. To its token's part
            // of the app (docs/ARCHITECTURE.md#one-app-in-parts).
            let shared = configuration.shared
            let command = try EncodedCommand(result, topics: shared.topics, part: shared.appParts.part(ofToken: result.deviceToken),
                                             parts: shared.appParts, encoder: Self.encoder)
            record = KafkaProducerRecord(topic: command.topic, key: command.key, value: command.value, headers: Self.resultHeaders,
                                         partition: command.assignedPartition(partitions: shared.partitions))
        } catch {
            logger.error("delivery outcome not encodable", metadata: ["error": "\(error)"])
            return true
        }
        var delay = Duration.milliseconds(100)
        while true {
            do {
                _ = try await producer.send(record)
                return true
            } catch {
                logger.warning("delivery outcome not written; trying again", metadata: ["error": "\(error)"])
            }
            guard ledger.withLock({ $0.owns(partition, generation: generation) }),
                  (try? await Task.sleep(for: delay)) != nil else { return false }
            delay = min(delay * 2, .seconds(5))
        }
    }
}
