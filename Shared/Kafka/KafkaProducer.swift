import Foundation
import Logging
import Synchronization

/// Idempotent acks=all producer. send returns only after the delivery report and throws KafkaError on failure.
///
/// Guarantees: `enable.idempotence=true` and `acks=all` are always set, so records of one
/// key are stored once each and in send order. A send never blocks a thread: a full local
/// queue fails that record at once with a retriable `_QUEUE_FULL` error, and an
/// unacknowledged record fails after `deliveryTimeout` (`_MSG_TIMED_OUT`). Delivery
/// reports are served by one dedicated thread, never by Swift's cooperative pool; slow
/// calls (flush, metadata, shutdown) also run on threads of their own.
///
/// A fenced producer is replaced: librdkafka never recovers a handle that raised a fatal
/// error, nor one whose broker answers `PRODUCER_FENCED` or `INVALID_PRODUCER_EPOCH` (Tansu
/// answers so to every record once librdkafka has bumped its epoch by itself after a message
/// timeout, and librdkafka bumps again, forever). The send that saw it fails; later sends go
/// through a new librdkafka producer, which gets a new producer id from the broker (sends made
/// while the old one is closed fail at once).
public final class KafkaProducer: Sendable {
    private struct State {
        var current: ProducerInstance
        var isShutDown = false
        /// A fenced `current` is being closed and replaced.
        var isReplacing = false
    }

    private let configuration: KafkaProducerConfiguration
    private let logger: Logger
    private let state: Mutex<State>
    /// A replacement in progress; `shutdown()` waits for it.
    private let replacing = DispatchGroup()
    private let shutdownFlushTimeout: Duration

    public init(configuration: KafkaProducerConfiguration, logger: Logger) throws {
        self.configuration = configuration
        self.logger = logger
        state = Mutex(State(current: try ProducerInstance(configuration: configuration, logger: logger)))
        // Enough for every record still queued to be delivered or to time out.
        shutdownFlushTimeout = configuration.deliveryTimeout + .milliseconds(500)
    }

    private var current: ProducerInstance { state.withLock { $0.current } }

    public func send(_ record: KafkaProducerRecord) async throws -> KafkaDeliveryReport {
        let instance = current
        do {
            return try await instance.send([record])[0]
        } catch let error as KafkaError {
            replaceIfFenced(instance, after: error)
            throw error
        }
    }

    /// Enqueues all records at once (librdkafka batches them via linger); returns when every delivery
    /// report arrived, in record order; throws the first failure's KafkaError after all reports are in.
    ///
    /// "First" is in record order. A record librdkafka refuses to enqueue (e.g. a full
    /// queue) counts as failed at once; the other records are still sent.
    public func send(_ records: [KafkaProducerRecord]) async throws -> [KafkaDeliveryReport] {
        guard !records.isEmpty else { return [] }
        let instance = current
        do {
            return try await instance.send(records)
        } catch let error as KafkaError {
            replaceIfFenced(instance, after: error)
            throw error
        }
    }

    /// Sends `count` records of `topic`, each written by `write(index, &buffer)` into one reused
    /// buffer that librdkafka copies before the next is written: for large fan-outs, which then
    /// need neither a record value nor a delivery report per record in memory. Returns when every
    /// record is acknowledged; throws the first failure after all reports are in (a refused
    /// record counts as failed at once, the others are still sent).
    public func send(count: Int, topic: String, _ write: (Int, inout KafkaRecordBuffer) -> Void) async throws {
        guard count > 0 else { return }
        let instance = current
        do {
            try await instance.send(count: count, topic: topic, write: write)
        } catch let error as KafkaError {
            replaceIfFenced(instance, after: error)
            throw error
        }
    }

    /// A metadata request with this timeout, run off Swift's cooperative thread pool.
    public func isBrokerReachable(timeout: Duration) async -> Bool {
        await current.isBrokerReachable(timeout: timeout)
    }

    /// Waits until every record handed to the producer so far has its delivery report,
    /// or `timeout` passed.
    public func flush(timeout: Duration) async {
        await current.flush(timeout: timeout)
    }

    /// Flushes (bounded) and destroys the handle; idempotent.
    ///
    /// New sends fail with `_DESTROY` from the moment it starts. Records still waiting
    /// after `deliveryTimeout` are purged, so every pending send returns.
    public func shutdown() async {
        let instance = state.withLock { state in
            state.isShutDown = true
            return state.current
        }
        let timeout = shutdownFlushTimeout
        let replacing = replacing
        await BlockingPool.run {
            instance.close(flushTimeout: timeout)
            replacing.wait()
        }
    }

    /// Puts a new librdkafka producer in place of `failed` when `error` shows that `failed`
    /// cannot send any more, unless another send did so first.
    ///
    /// `failed` is closed first (its remaining sends fail, and the flush waits until the broker
    /// answered its requests), and only then is the new one made: Tansu's durable storage keeps
    /// producer ids in one document that it rewrites without conflict detection on localbucket,
    /// and a new producer id registered while the old producer's requests were still being
    /// answered was seen to be lost (every record then failed with UNKNOWN_PRODUCER_ID). Sends
    /// meanwhile fail at once, like those of a producer being shut down.
    private func replaceIfFenced(_ failed: ProducerInstance, after error: KafkaError) {
        guard error.meansProducerFenced || failed.hasFatalError || failed.isClosed else { return }
        let starts = state.withLock { state in
            guard !state.isShutDown, !state.isReplacing, state.current === failed else { return false }
            state.isReplacing = true
            // Entered under the lock, so that a shutdown that follows waits for this replacement.
            replacing.enter()
            return true
        }
        guard starts else { return }
        logger.warning("the Kafka producer is fenced; replacing it", metadata: ["error": "\(error)"])
        DedicatedThread.start(name: "kafka-producer-replace") { [self] in
            failed.close(flushTimeout: shutdownFlushTimeout)
            var fresh: ProducerInstance?
            do {
                fresh = try ProducerInstance(configuration: configuration, logger: logger)
            } catch {
                // The next failed send tries again (the closed instance counts as failed).
                logger.error("no new Kafka producer could be made", metadata: ["error": "\(error)"])
            }
            let unused = state.withLock { state -> ProducerInstance? in
                state.isReplacing = false
                guard let fresh, !state.isShutDown else { return fresh }
                state.current = fresh
                return nil
            }
            unused?.close(flushTimeout: .zero)
            replacing.leave()
        }
    }
}

extension KafkaError {
    /// The broker refuses this idempotent producer's id or epoch: librdkafka cannot recover
    /// the handle by itself.
    var meansProducerFenced: Bool {
        [.producerFenced, .invalidProducerEpoch, .fenced].contains(code)
    }
}
