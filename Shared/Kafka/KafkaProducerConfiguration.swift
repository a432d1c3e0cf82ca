/// Settings of a `KafkaProducer`, each mapped to one librdkafka property.
///
/// The producer always adds `enable.idempotence=true` and `acks=all` after everything
/// here, so no setting can weaken its delivery guarantee. `properties` is applied after
/// the typed fields and may override them.
public struct KafkaProducerConfiguration: Sendable {
    /// `bootstrap.servers`: comma-separated `host:port` list.
    public var bootstrapServers: String = "127.0.0.1:9092"
    /// `client.id`: names this client in broker logs and metrics.
    public var clientId: String = "pushline"
    /// `linger.ms`: how long a record may wait for others to share its batch.
    public var lingerMs: Int = 2
    /// `batch.num.messages`: the most records in one batch.
    public var batchNumMessages: Int = 10_000
    /// `message.timeout.ms`: a send fails with a `KafkaError` (`_MSG_TIMED_OUT`) if the
    /// record is not acknowledged within this time, retries included (librdkafka notices it
    /// up to a reconnect backoff later, which is bounded by this time too).
    public var deliveryTimeoutMs: Int = 5_000
    /// `queue.buffering.max.messages`: records waiting locally before sends fail with
    /// `_QUEUE_FULL` (retriable) instead of blocking.
    public var queueBufferingMaxMessages: Int = 1_000_000
    /// `compression.codec`: none, gzip, snappy, lz4 or zstd.
    public var compression: String = "none"
    /// Passed to librdkafka verbatim, applied last (TLS/SASL: security.protocol, ssl.*, sasl.*).
    public var properties: [String: String] = [:]

    public init() {}

    public init(
        bootstrapServers: String = "127.0.0.1:9092",
        clientId: String = "pushline",
        lingerMs: Int = 2,
        batchNumMessages: Int = 10_000,
        deliveryTimeoutMs: Int = 5_000,
        queueBufferingMaxMessages: Int = 1_000_000,
        compression: String = "none",
        properties: [String: String] = [:]
    ) {
        self.bootstrapServers = bootstrapServers
        self.clientId = clientId
        self.lingerMs = lingerMs
        self.batchNumMessages = batchNumMessages
        self.deliveryTimeoutMs = deliveryTimeoutMs
        self.queueBufferingMaxMessages = queueBufferingMaxMessages
        self.compression = compression
        self.properties = properties
    }

    /// `reconnect.backoff.max.ms`, derived from `deliveryTimeoutMs` (100 ms … 10 s; `properties`
    /// may override it). librdkafka fails a record for its delivery timeout only when the
    /// thread of the record's broker wakes, and while that broker is unreachable the thread
    /// sleeps through the reconnect backoff, up to librdkafka's default of 10 s. A bound no
    /// longer than the delivery timeout makes a send without a broker fail close to
    /// `deliveryTimeoutMs` instead of up to 10 s after it.
    var reconnectBackoffMaxMs: Int { min(max(deliveryTimeoutMs, 100), 10_000) }

    /// The librdkafka properties in the order they are applied.
    var librdkafkaProperties: [(String, String)] {
        [
            ("bootstrap.servers", bootstrapServers),
            ("client.id", clientId),
            ("linger.ms", String(lingerMs)),
            ("batch.num.messages", String(batchNumMessages)),
            ("message.timeout.ms", String(deliveryTimeoutMs)),
            ("reconnect.backoff.max.ms", String(reconnectBackoffMaxMs)),
            ("queue.buffering.max.messages", String(queueBufferingMaxMessages)),
            ("compression.codec", compression),
        ]
            + properties.sorted { $0.key < $1.key }
            + [("enable.idempotence", "true"), ("acks", "all")]
    }
}
