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
public final class KafkaProducer: Sendable {
    private let handle: UnsafeHandle
    private let handleGuard = HandleGuard()
    /// Referenced only by librdkafka (the configuration opaque); held here so it lives
    /// as long as the handle.
    private let callbacks: ClientCallbacks
    private let poller: PollerThread
    private let shutdownFlushTimeout: Duration

    public init(configuration: KafkaProducerConfiguration, logger: Logger) throws {
        callbacks = ClientCallbacks(logger: logger)
        let conf = try RDKafkaHandle.configuration(configuration.librdkafkaProperties, callbacks: callbacks)
        rd_kafka_conf_set_dr_msg_cb(conf, DeliveryReports.callback)
        let handle = UnsafeHandle(pointer: try RDKafkaHandle.make(RD_KAFKA_PRODUCER, configuration: conf))
        self.handle = handle
        // Enough for every record still queued to be delivered or to time out.
        shutdownFlushTimeout = .milliseconds(configuration.deliveryTimeoutMs + 500)
        poller = PollerThread(name: "kafka-producer-poll") {
            // Serves delivery reports (and log/error events) as soon as they arrive; the
            // timeout only bounds how long stopping the thread takes.
            rd_kafka_poll(handle.pointer, 100)
        }
    }

    deinit {
        // Safety net for a producer dropped without `shutdown()`: no caller can be
        // waiting on a send any more (each holds the producer), so nothing is flushed.
        close(flushTimeout: .zero)
    }

    public func send(_ record: KafkaProducerRecord) async throws -> KafkaDeliveryReport {
        try await withUnsafeThrowingContinuation { continuation in
            let opaque = Unmanaged.passRetained(SingleDelivery(topic: record.topic, continuation: continuation)).toOpaque()
            let refusal: KafkaError? = handleGuard.withHandle {
                let code = RecordEnqueue.enqueue(record, on: handle.pointer, opaque: opaque)
                return code == RD_KAFKA_RESP_ERR_NO_ERROR
                    ? nil : RecordEnqueue.refusal(code, topic: record.topic, rk: handle.pointer)
            } ?? RecordEnqueue.producerShutDown(topic: record.topic)
            if let refusal {
                Unmanaged<SingleDelivery>.fromOpaque(opaque).release()
                continuation.resume(throwing: refusal)
            }
        }
    }

    /// Enqueues all records at once (librdkafka batches them via linger); returns when every delivery
    /// report arrived, in record order; throws the first failure's KafkaError after all reports are in.
    ///
    /// "First" is in record order. A record librdkafka refuses to enqueue (e.g. a full
    /// queue) counts as failed at once; the other records are still sent.
    public func send(_ records: [KafkaProducerRecord]) async throws -> [KafkaDeliveryReport] {
        guard !records.isEmpty else { return [] }
        return try await withUnsafeThrowingContinuation { continuation in
            let batch = BatchDelivery.start(records: records, continuation: continuation)
            let enqueued: Void? = handleGuard.withHandle {
                for index in records.indices {
                    let code = RecordEnqueue.enqueue(records[index], on: handle.pointer, opaque: batch.opaque(for: index))
                    if code != RD_KAFKA_RESP_ERR_NO_ERROR {
                        batch.complete(index, .failure(RecordEnqueue.refusal(code, topic: records[index].topic, rk: handle.pointer)))
                    }
                }
            }
            if enqueued == nil {
                for index in records.indices {
                    batch.complete(index, .failure(RecordEnqueue.producerShutDown(topic: records[index].topic)))
                }
            }
            batch.enqueueFinished()
        }
    }

    /// A metadata request with this timeout, run off Swift's cooperative thread pool.
    public func isBrokerReachable(timeout: Duration) async -> Bool {
        let handle = handle
        let handleGuard = handleGuard
        return await DedicatedThread.run(name: "kafka-producer-metadata") {
            handleGuard.withHandle {
                var metadata: UnsafePointer<rd_kafka_metadata>?
                // all_topics=0 and no topic: asks only for the broker list, the cheapest answer.
                let code = rd_kafka_metadata(handle.pointer, 0, nil, &metadata, Int32(timeout.milliseconds))
                if let metadata { rd_kafka_metadata_destroy(metadata) }
                return code == RD_KAFKA_RESP_ERR_NO_ERROR
            } ?? false
        }
    }

    /// Waits until every record handed to the producer so far has its delivery report,
    /// or `timeout` passed.
    public func flush(timeout: Duration) async {
        let handle = handle
        let handleGuard = handleGuard
        await DedicatedThread.run(name: "kafka-producer-flush") {
            _ = handleGuard.withHandle { rd_kafka_flush(handle.pointer, timeout.milliseconds) }
        }
    }

    /// Flushes (bounded) and destroys the handle; idempotent.
    ///
    /// New sends fail with `_DESTROY` from the moment it starts. Records still waiting
    /// after `deliveryTimeoutMs` are purged, so every pending send returns.
    public func shutdown() async {
        await DedicatedThread.run(name: "kafka-producer-shutdown") { [self] in
            close(flushTimeout: shutdownFlushTimeout)
        }
    }

    /// Blocking shutdown; only the first call does anything.
    private func close(flushTimeout: Duration) {
        guard handleGuard.close() else { return }
        let rk = handle.pointer
        _ = rd_kafka_flush(rk, flushTimeout.milliseconds)
        // Whatever is left fails with _PURGE_QUEUE/_PURGE_INFLIGHT instead of leaving
        // its sender waiting forever; the flush serves those reports.
        _ = rd_kafka_purge(rk, Int32(RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT))
        _ = rd_kafka_flush(rk, 500)
        poller.stop()
        _ = rd_kafka_poll(rk, 0)
        rd_kafka_destroy(rk)
    }
}
