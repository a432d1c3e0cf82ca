/// Settings of a `KafkaConsumer`, each mapped to one librdkafka property except
/// `maxBatchSize` and `batchWait`, which shape the batches this layer hands out.
///
/// The consumer sets `enable.partition.eof=false` and `auto.offset.reset=error` (a start
/// offset the broker no longer has ends the batches instead of silently skipping to
/// another position); `properties` is applied after them and may override them.
/// Last come `enable.auto.commit=false` and `enable.auto.offset.store=false`, which
/// nothing overrides: the application's store holds the truth about offsets. Durations go
/// to librdkafka in whole milliseconds.
public struct KafkaConsumerConfiguration: Sendable {
    /// `bootstrap.servers`: comma-separated `host:port` list.
    public var bootstrapServers: String = "127.0.0.1:9092"
    /// `group.id`: consumers with the same id share the partitions of their topics.
    public var groupId: String
    /// `client.id`: names this client in broker logs and metrics.
    public var clientId: String = "pushline"
    /// `session.timeout.ms`: a member not heard from for this long leaves the group.
    public var sessionTimeout: Duration = .seconds(10)
    /// `max.poll.interval.ms`: the longest a batch may be processed before the member
    /// is considered stuck and leaves the group.
    public var maxPollInterval: Duration = .seconds(300)
    /// `heartbeat.interval.ms`.
    public var heartbeatInterval: Duration = .seconds(1)
    /// `fetch.wait.max.ms`: how long the broker may take to answer a fetch. 500 ms, librdkafka's
    /// own default: Apache Kafka answers as soon as records arrive, so it costs nothing there.
    /// Tansu holds a fetch that found nothing for the whole time (a lone command waits up to
    /// this long), and on its durable S3 engine a fetch of many partitions needs this long to
    /// read them at all: with 50 ms a consumer of 48 partitions over a backlog of tens of
    /// thousands of small stored objects received nothing, ever (docs/BENCHMARKS.md, "Catch-up
    /// on the durable broker").
    public var fetchWaitMax: Duration = .milliseconds(500)
    /// The most messages in one batch.
    public var maxBatchSize: Int = 2_000
    /// The longest one poll waits for a first message. A batch is then whatever has already
    /// arrived, up to `maxBatchSize`: nothing waits for a batch to fill, so a lone command is
    /// handed out at once, and a backlog still comes in full batches.
    public var batchWait: Duration = .milliseconds(100)
    /// Passed to librdkafka verbatim, applied last (TLS/SASL: security.protocol, ssl.*, sasl.*).
    public var properties: [String: String] = [:]

    public init(groupId: String) {
        self.groupId = groupId
    }

    public init(
        bootstrapServers: String = "127.0.0.1:9092",
        groupId: String,
        clientId: String = "pushline",
        sessionTimeout: Duration = .seconds(10),
        maxPollInterval: Duration = .seconds(300),
        heartbeatInterval: Duration = .seconds(1),
        fetchWaitMax: Duration = .milliseconds(500),
        maxBatchSize: Int = 2_000,
        batchWait: Duration = .milliseconds(100),
        properties: [String: String] = [:]
    ) {
        self.bootstrapServers = bootstrapServers
        self.groupId = groupId
        self.clientId = clientId
        self.sessionTimeout = sessionTimeout
        self.maxPollInterval = maxPollInterval
        self.heartbeatInterval = heartbeatInterval
        self.fetchWaitMax = fetchWaitMax
        self.maxBatchSize = maxBatchSize
        self.batchWait = batchWait
        self.properties = properties
    }

    /// The librdkafka properties in the order they are applied.
    var librdkafkaProperties: [(String, String)] {
        [
            ("bootstrap.servers", bootstrapServers),
            ("group.id", groupId),
            ("client.id", clientId),
            ("session.timeout.ms", String(sessionTimeout.timeoutMilliseconds)),
            ("max.poll.interval.ms", String(maxPollInterval.timeoutMilliseconds)),
            ("heartbeat.interval.ms", String(heartbeatInterval.timeoutMilliseconds)),
            ("fetch.wait.max.ms", String(fetchWaitMax.timeoutMilliseconds)),
            ("enable.partition.eof", "false"),
            ("auto.offset.reset", "error"),
        ]
            + properties.sorted { $0.key < $1.key }
            + [("enable.auto.commit", "false"), ("enable.auto.offset.store", "false")]
    }
}
