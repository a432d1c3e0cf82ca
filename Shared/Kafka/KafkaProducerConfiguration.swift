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
    /// record is not acknowledged within this time, retries included.
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

    /// The librdkafka properties in the order they are applied.
    var librdkafkaProperties: [(String, String)] {
        [
            ("bootstrap.servers", bootstrapServers),
            ("client.id", clientId),
            ("linger.ms", String(lingerMs)),
            ("batch.num.messages", String(batchNumMessages)),
            ("message.timeout.ms", String(deliveryTimeoutMs)),
            ("queue.buffering.max.messages", String(queueBufferingMaxMessages)),
            ("compression.codec", compression),
        ]
            + properties.sorted { $0.key < $1.key }
            + [("enable.idempotence", "true"), ("acks", "all")]
    }
}
