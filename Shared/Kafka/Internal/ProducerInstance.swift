import Logging

/// One librdkafka producer with its delivery-report poller: what `KafkaProducer` sends
/// through until the client is fenced and replaced (see `KafkaProducer`).
final class ProducerInstance: Sendable {
    private let client: RDKafkaClient
    private let poller: PollerThread

    init(configuration: KafkaProducerConfiguration, logger: Logger) throws(KafkaError) {
        let client = try RDKafkaClient(.producer, properties: configuration.librdkafkaProperties,
                                       callbacks: RDKafkaClient.Callbacks(logger: logger))
        self.client = client
        poller = PollerThread(name: "kafka-producer-poll") {
            // Serves delivery reports (and log/error events) as soon as they arrive; the
            // timeout only bounds how long stopping the thread takes.
            client.pollEvents(timeout: .milliseconds(100))
        }
    }

    deinit {
        // Safety net for an instance dropped without `close`: no caller can be waiting
        // on a send any more (each holds the instance), so nothing is flushed.
        close(flushTimeout: .zero)
    }

    /// The delivery report of every record, in record order, once all are in; throws the
    /// first failure (in record order) after all are in.
    func send(_ records: [KafkaProducerRecord]) async throws -> [KafkaDeliveryReport] {
        try await withUnsafeThrowingContinuation { continuation in
            let batch = DeliveryBatch(records: records, continuation: continuation)
            client.produce(records, opaque: batch.opaque(for:)) { index, error in
                batch.complete(index, .failure(error))
            }
            batch.enqueueFinished()
        }
    }

    /// Every record written by `write` acknowledged, or the first failure once all are in.
    func send(count: Int, topic: String, write: (Int, inout KafkaRecordBuffer) -> Void) async throws {
        try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<Void, any Error>) in
            let waiter = DeliveryCount(records: count, continuation: continuation)
            var buffer = KafkaRecordBuffer()
            client.produce(count: count, topic: topic, buffer: &buffer, opaque: waiter.opaque, write: write) { error in
                waiter.failed(error)
            }
            waiter.enqueueFinished()
        }
    }

    /// True once `close` started: every later send fails.
    var isClosed: Bool { client.isClosed }

    /// True when librdkafka raised a fatal error on this client: it can send nothing any more.
    var hasFatalError: Bool { client.fatalError() != nil }

    /// A metadata request with this timeout, run off Swift's cooperative thread pool.
    func isBrokerReachable(timeout: Duration) async -> Bool {
        let client = client
        return await BlockingPool.run { client.answersMetadata(timeout: timeout) }
    }

    func flush(timeout: Duration) async {
        let client = client
        await BlockingPool.run { client.flush(timeout: timeout) }
    }

    /// Blocking: flushes for at most `flushTimeout`, fails whatever is left (so every
    /// pending send returns) and destroys the client. Only the first call does anything.
    func close(flushTimeout: Duration) {
        client.closeProducer(flushTimeout: flushTimeout, stopPolling: poller.stop)
    }
}
