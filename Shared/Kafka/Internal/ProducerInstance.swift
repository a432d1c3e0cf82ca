import CRdKafka
import Foundation
import Logging

/// One librdkafka producer handle with its delivery-report poller: what `KafkaProducer`
/// sends through until the handle is fenced and replaced (see `KafkaProducer`).
final class ProducerInstance: Sendable {
    private let handle: UnsafeHandle
    private let handleGuard = HandleGuard()
    /// Referenced only by librdkafka (the configuration opaque); held here so it lives
    /// as long as the handle.
    private let callbacks: ClientCallbacks
    private let poller: PollerThread

    init(configuration: KafkaProducerConfiguration, logger: Logger) throws {
        callbacks = ClientCallbacks(logger: logger)
        let conf = try RDKafkaHandle.configuration(configuration.librdkafkaProperties, callbacks: callbacks)
        rd_kafka_conf_set_dr_msg_cb(conf, DeliveryReports.callback)
        let handle = UnsafeHandle(pointer: try RDKafkaHandle.make(RD_KAFKA_PRODUCER, configuration: conf))
        self.handle = handle
        poller = PollerThread(name: "kafka-producer-poll") {
            // Serves delivery reports (and log/error events) as soon as they arrive; the
            // timeout only bounds how long stopping the thread takes.
            rd_kafka_poll(handle.pointer, 100)
        }
    }

    deinit {
        // Safety net for an instance dropped without `close`: no caller can be waiting
        // on a send any more (each holds the instance), so nothing is flushed.
        close(flushTimeout: .zero)
    }

    func send(_ record: KafkaProducerRecord) async throws -> KafkaDeliveryReport {
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

    func send(_ records: [KafkaProducerRecord]) async throws -> [KafkaDeliveryReport] {
        try await withUnsafeThrowingContinuation { continuation in
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

    /// True once `close` started: every later send fails.
    var isClosed: Bool { handleGuard.isClosed }

    /// True when librdkafka raised a fatal error on this handle: it can send nothing any more.
    var hasFatalError: Bool {
        handleGuard.withHandle { rd_kafka_fatal_error(handle.pointer, nil, 0) != RD_KAFKA_RESP_ERR_NO_ERROR } ?? false
    }

    /// A metadata request with this timeout, run off Swift's cooperative thread pool.
    func isBrokerReachable(timeout: Duration) async -> Bool {
        let handle = handle
        let handleGuard = handleGuard
        return await BlockingPool.run {
            handleGuard.withHandle {
                var metadata: UnsafePointer<rd_kafka_metadata>?
                // all_topics=0 and no topic: asks only for the broker list, the cheapest answer.
                let code = rd_kafka_metadata(handle.pointer, 0, nil, &metadata, timeout.timeoutMilliseconds)
                if let metadata { rd_kafka_metadata_destroy(metadata) }
                return code == RD_KAFKA_RESP_ERR_NO_ERROR
            } ?? false
        }
    }

    func flush(timeout: Duration) async {
        let handle = handle
        let handleGuard = handleGuard
        await BlockingPool.run {
            _ = handleGuard.withHandle { rd_kafka_flush(handle.pointer, timeout.timeoutMilliseconds) }
        }
    }

    /// Blocking: flushes for at most `flushTimeout`, fails whatever is left (so every
    /// pending send returns) and destroys the handle. Only the first call does anything.
    func close(flushTimeout: Duration) {
        guard handleGuard.close() else { return }
        let rk = handle.pointer
        _ = rd_kafka_flush(rk, flushTimeout.timeoutMilliseconds)
        // Whatever is left fails with _PURGE_QUEUE/_PURGE_INFLIGHT instead of leaving
        // its sender waiting forever; the flush serves those reports.
        _ = rd_kafka_purge(rk, Int32(RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT))
        _ = rd_kafka_flush(rk, 500)
        poller.stop()
        _ = rd_kafka_poll(rk, 0)
        rd_kafka_destroy(rk)
    }
}
