import Contracts
import Logging

/// The settings every Pushline executable shares — the broker, the topics, the store, logging —
/// read by one function, so that ingest, the processor and the `pushline` CLI cannot come to
/// disagree on, say, the topic names (docs/CONFIGURATION.md).
public struct SharedSettings: Sendable, Equatable {
    /// Kafka bootstrap servers.
    public var brokers = "127.0.0.1:9092"
    /// Topic names; only the prefix is configurable, and the empty prefix is a prefix.
    public var topics = Topics()
    /// Partitions of each topic created on start when missing.
    public var partitions = 12
    /// The projection store: `sqlite:PATH` or a `postgres://` URL.
    public var store = "sqlite:./var/pushline.sqlite"
    /// librdkafka properties passed through verbatim (TLS/SASL).
    public var kafkaProperties: [String: String] = [:]
    /// The level below which log lines are dropped.
    public var logLevel: Logger.Level = .info
    /// How long an `Idempotency-Key` names its first send, in the log's time: ingest answers with
    /// it and processors and rebuilds decide with it, so they must agree.
    public var idempotencyWindowHours = IdempotencyKeys.defaultWindowHours
    /// The parts every app of the log is split into (docs/ARCHITECTURE.md#one-app-in-parts):
    /// ingest and the sender write each command to its parts, processors and rebuilds decide by
    /// them, so all must agree.
    public var appParts = AppParts.one

    public init() {}

    /// `idempotencyWindowHours` as a duration.
    public var idempotencyWindow: Duration { .seconds(idempotencyWindowHours * 3600) }

    /// The environment variables of these settings.
    public enum Variable {
        public static let brokers = "PUSHLINE_KAFKA_BROKERS"
        public static let topicPrefix = "PUSHLINE_TOPIC_PREFIX"
        public static let partitions = "PUSHLINE_PARTITIONS"
        public static let store = "PUSHLINE_STORE"
        public static let kafkaProperties = "PUSHLINE_KAFKA_PROPERTIES"
        public static let logLevel = "PUSHLINE_LOG_LEVEL"
        public static let idempotencyWindowHours = "PUSHLINE_IDEMPOTENCY_WINDOW_HOURS"
        public static let appParts = "PUSHLINE_APP_PARTS"
    }

    /// Reads the shared settings; `defaultLogLevel` is the level of an executable whose
    /// `PUSHLINE_LOG_LEVEL` is unset (the CLI is quieter than the services).
    public init(_ reader: SettingsReader, defaultLogLevel: Logger.Level = .info) throws {
        brokers = reader.string(Variable.brokers, default: brokers)
        topics = Topics(prefix: reader.string(Variable.topicPrefix, default: topics.prefix, emptyIsValue: true))
        partitions = try reader.int(Variable.partitions, default: partitions, range: 1...10_000)
        store = reader.string(Variable.store, default: store)
        kafkaProperties = try reader.properties(Variable.kafkaProperties)
        let level = reader.string(Variable.logLevel, default: defaultLogLevel.rawValue)
        guard let parsed = Logger.Level(rawValue: level.lowercased()) else {
            throw ConfigurationError("\(Variable.logLevel)=\(level) is not one of "
                                     + Logger.Level.allCases.map(\.rawValue).joined(separator: ", "))
        }
        logLevel = parsed
        idempotencyWindowHours = try reader.int(Variable.idempotencyWindowHours, default: idempotencyWindowHours, range: 1...8_760)
        appParts = AppParts(try reader.int(Variable.appParts, default: appParts.count, range: 1...64))
    }

    /// Sends every log line of the process to standard error, at `logLevel` and above. Call it
    /// once, first thing in `main`.
    public func bootstrapLogging() {
        let level = logLevel
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
    }
}
