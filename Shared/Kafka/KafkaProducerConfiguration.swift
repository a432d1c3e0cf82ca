/// Settings of a `KafkaProducer`, each mapped to one librdkafka property.
///
/// The producer always adds `enable.idempotence=true` and `acks=all` after everything
/// here, so no setting can weaken its delivery guarantee. `properties` is applied after
/// the typed fields and may override them. Durations go to librdkafka in whole milliseconds.
public struct KafkaProducerConfiguration: Sendable {
    /// `bootstrap.servers`: comma-separated `host:port` list.
    public var bootstrapServers: String = "127.0.0.1:9092"
    /// `client.id`: names this client in broker logs and metrics.
    public var clientId: String = "pushline"
    /// `linger.ms`: how long a record may wait for others to share its batch.
    public var linger: Duration = .milliseconds(2)
    /// `batch.num.messages`: the most records in one batch.
    public var batchNumMessages: Int = 10_000
    /// `message.timeout.ms` (whole milliseconds): a send fails with a `KafkaError` (`_MSG_TIMED_OUT`) if the
    /// record is not acknowledged within this time, retries included (librdkafka notices it
    /// up to a reconnect backoff later, which is bounded by this time too).
    public var deliveryTimeout: Duration = .seconds(5)
    /// `queue.buffering.max.messages`: records waiting locally before sends fail with
    /// `_QUEUE_FULL` (retriable) instead of blocking.
    public var queueBufferingMaxMessages: Int = 1_000_000
    /// `compression.codec`.
    public var compression: Compression = .none
    /// Passed to librdkafka verbatim, applied last (TLS/SASL: security.protocol, ssl.*, sasl.*).
    public var properties: [String: String] = [:]

    public init() {}

    public init(
        bootstrapServers: String = "127.0.0.1:9092",
        clientId: String = "pushline",
        linger: Duration = .milliseconds(2),
        batchNumMessages: Int = 10_000,
        deliveryTimeout: Duration = .seconds(5),
        queueBufferingMaxMessages: Int = 1_000_000,
        compression: Compression = .none,
        properties: [String: String] = [:]
    ) {
        self.bootstrapServers = bootstrapServers
        self.clientId = clientId
        self.linger = linger
        self.batchNumMessages = batchNumMessages
        self.deliveryTimeout = deliveryTimeout
        self.queueBufferingMaxMessages = queueBufferingMaxMessages
        self.compression = compression
        self.properties = properties
    }

    /// `reconnect.backoff.max.ms`, derived from `deliveryTimeout` (100 ms … 10 s; `properties`
    /// may override it). librdkafka fails a record for its delivery timeout only when the
    /// thread of the record's broker wakes, and while that broker is unreachable the thread
    /// sleeps through the reconnect backoff, up to librdkafka's default of 10 s. A bound no
    /// longer than the delivery timeout makes a send without a broker fail close to
    /// `deliveryTimeout` instead of up to 10 s after it.
    var reconnectBackoffMax: Duration { min(max(deliveryTimeout, .milliseconds(100)), .seconds(10)) }

    /// The librdkafka properties in the order they are applied.
    var librdkafkaProperties: [(String, String)] {
        [
            ("bootstrap.servers", bootstrapServers),
            ("client.id", clientId),
            ("linger.ms", String(linger.timeoutMilliseconds)),
            ("batch.num.messages", String(batchNumMessages)),
            ("message.timeout.ms", String(deliveryTimeout.timeoutMilliseconds)),
            ("reconnect.backoff.max.ms", String(reconnectBackoffMax.timeoutMilliseconds)),
            ("queue.buffering.max.messages", String(queueBufferingMaxMessages)),
            ("compression.codec", compression.rawValue),
        ]
            + properties.sorted { $0.key < $1.key }
            + [("enable.idempotence", "true"), ("acks", "all")]
    }
}

extension KafkaProducerConfiguration {
    /// The codecs librdkafka compresses batches with (`compression.codec`).
    public enum Compression: String, Sendable, CaseIterable {
        case none, gzip, snappy, lz4, zstd
    }
}
