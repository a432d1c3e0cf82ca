import Kafka

extension SharedSettings {
    /// Creates the topics these settings name that do not exist yet, with `partitions` each:
    /// producing to a missing topic would auto-create it with the broker's default count.
    public func createMissingTopics() async throws {
        try await KafkaAdmin.createTopics(topics.all(commandPartitions: partitions, outputPartitions: partitions),
                                          bootstrapServers: brokers, properties: kafkaProperties)
    }

    /// A producer of these brokers and properties, named `clientId` in the broker's logs.
    public func producerConfiguration(clientId: String) -> KafkaProducerConfiguration {
        var configuration = KafkaProducerConfiguration()
        configuration.bootstrapServers = brokers
        configuration.clientId = clientId
        configuration.properties = kafkaProperties
        return configuration
    }

    /// A consumer of these brokers and properties in group `groupId`.
    public func consumerConfiguration(groupId: String, clientId: String) -> KafkaConsumerConfiguration {
        var configuration = KafkaConsumerConfiguration(groupId: groupId)
        configuration.bootstrapServers = brokers
        configuration.clientId = clientId
        configuration.properties = kafkaProperties
        return configuration
    }
}

/// How a group member of Pushline's consumes: its session and poll timeouts and the fetch wait
/// (`PUSHLINE_KAFKA_SESSION_TIMEOUT_MS`, `PUSHLINE_KAFKA_MAX_POLL_INTERVAL_MS`,
/// `PUSHLINE_KAFKA_FETCH_WAIT_MS`), read one way by the processor and the sender.
public struct ConsumerTimings: Sendable, Equatable {
    public var sessionTimeoutMs = 10_000
    public var maxPollIntervalMs = 300_000
    /// `fetch.wait.max.ms` (see `KafkaConsumerConfiguration.fetchWaitMax`).
    public var fetchWaitMaxMs = Int(KafkaConsumerConfiguration(groupId: "").fetchWaitMax.inMilliseconds)

    public init() {}

    public init(_ reader: SettingsReader) throws {
        sessionTimeoutMs = try reader.int("PUSHLINE_KAFKA_SESSION_TIMEOUT_MS", default: sessionTimeoutMs, range: 1_000...3_600_000)
        maxPollIntervalMs = try reader.int("PUSHLINE_KAFKA_MAX_POLL_INTERVAL_MS", default: maxPollIntervalMs, range: 1_000...86_400_000)
        fetchWaitMaxMs = try reader.int("PUSHLINE_KAFKA_FETCH_WAIT_MS", default: fetchWaitMaxMs, range: 1...60_000)
    }

    /// Sets these timings on `configuration`.
    public func apply(to configuration: inout KafkaConsumerConfiguration) {
        configuration.sessionTimeout = .milliseconds(sessionTimeoutMs)
        configuration.maxPollInterval = .milliseconds(maxPollIntervalMs)
        configuration.fetchWaitMax = .milliseconds(fetchWaitMaxMs)
    }
}
