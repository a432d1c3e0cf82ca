import CRdKafka
import Foundation
import Logging
import Synchronization

/// Idempotent acks=all producer. send returns only after the delivery report and throws KafkaError on failure.
///
/// Guarantees: `enable.idempotence=true` and `acks=all` are always set, so records of one
/// key are stored once each and in send order. A send never blocks a thread: a full local
/// queue fails that record at once with a retriable `_QUEUE_FULL` error, and an
/// unacknowledged record fails after `deliveryTimeoutMs` (`_MSG_TIMED_OUT`). Delivery
/// reports are served by one dedicated thread, never by Swift's cooperative pool; slow
/// calls (flush, metadata, shutdown) also run on threads of their own.
///
/// A fenced producer is replaced: librdkafka never recovers a handle that raised a fatal
/// error, nor one whose broker answers `PRODUCER_FENCED` or `INVALID_PRODUCER_EPOCH` (Tansu
/// answers so to every record once librdkafka has bumped its epoch by itself after a message
/// timeout, and librdkafka bumps again, forever). The send that saw it fails; later sends go
/// through a new librdkafka producer, which gets a new producer id from the broker.
public final class KafkaProducer: Sendable {
    private struct State {
        var current: ProducerInstance
        var isShutDown = false
    }

    private let configuration: KafkaProducerConfiguration
    private let logger: Logger
    private let state: Mutex<State>
    /// Replaced instances still closing; `shutdown()` waits for them.
    private let retiring = DispatchGroup()
    private let shutdownFlushTimeout: Duration

    public init(configuration: KafkaProducerConfiguration, logger: Logger) throws {
        self.configuration = configuration
        self.logger = logger
        state = Mutex(State(current: try ProducerInstance(configuration: configuration, logger: logger)))
        // Enough for every record still queued to be delivered or to time out.
        shutdownFlushTimeout = .milliseconds(configuration.deliveryTimeoutMs + 500)
    }

    private var current: ProducerInstance { state.withLock { $0.current } }

    public func send(_ record: KafkaProducerRecord) async throws -> KafkaDeliveryReport {
        let instance = current
        do {
            return try await instance.send(record)
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
    /// after `deliveryTimeoutMs` are purged, so every pending send returns.
    public func shutdown() async {
        let instance = state.withLock { state in
            state.isShutDown = true
            return state.current
        }
        let timeout = shutdownFlushTimeout
        let retiring = retiring
        await DedicatedThread.run(name: "kafka-producer-shutdown") {
            instance.close(flushTimeout: timeout)
            retiring.wait()
        }
    }

    /// Puts a new librdkafka producer in place of `failed` when `error` shows that `failed`
    /// cannot send any more, unless another send did so first; `failed` is closed on a
    /// thread of its own (its remaining sends fail).
    private func replaceIfFenced(_ failed: ProducerInstance, after error: KafkaError) {
        guard error.meansProducerFenced || failed.hasFatalError else { return }
        guard state.withLock({ !$0.isShutDown && $0.current === failed }) else { return }
        let fresh: ProducerInstance
        do {
            fresh = try ProducerInstance(configuration: configuration, logger: logger)
        } catch {
            logger.error("the Kafka producer is fenced and no new one could be made", metadata: ["error": "\(error)"])
            return
        }
        let replaced = state.withLock { state in
            guard !state.isShutDown, state.current === failed else { return false }
            state.current = fresh
            return true
        }
        let retired = replaced ? failed : fresh
        if replaced {
            logger.warning("the Kafka producer is fenced; sending through a new one", metadata: ["error": "\(error)"])
        }
        let timeout = shutdownFlushTimeout
        let retiring = retiring
        retiring.enter()
        DedicatedThread.start(name: "kafka-producer-retire") {
            retired.close(flushTimeout: timeout)
            retiring.leave()
        }
    }
}

extension KafkaError {
    /// The broker refuses this idempotent producer's id or epoch: librdkafka cannot recover
    /// the handle by itself.
    var meansProducerFenced: Bool {
        [RD_KAFKA_RESP_ERR_PRODUCER_FENCED, RD_KAFKA_RESP_ERR_INVALID_PRODUCER_EPOCH, RD_KAFKA_RESP_ERR__FENCED]
            .contains { $0.rawValue == code }
    }
}
