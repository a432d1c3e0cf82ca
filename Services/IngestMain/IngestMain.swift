import ArgumentParser
import Foundation
import Ingest
import Kafka
import Logging
import Metrics
import Projections
import Prometheus

/// `pushline-ingest`: the HTTP front door. Settings come from the environment (see README);
/// flags override the most common ones.
@main
struct PushlineIngest: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pushline-ingest",
        abstract: "Validates Pushline API requests and writes them as commands to Kafka."
    )

    @Option(help: "HTTP port (PUSHLINE_INGEST_PORT, default 8080).") var port: Int?
    @Option(help: "Kafka bootstrap servers (PUSHLINE_KAFKA_BROKERS, default 127.0.0.1:9092).") var brokers: String?
    @Option(help: "Projection store to read, sqlite:<path> (PUSHLINE_STORE).") var store: String?
    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical (PUSHLINE_LOG_LEVEL).") var logLevel: String?

    func run() async throws {
        var configuration = try IngestConfiguration.fromEnvironment(ProcessInfo.processInfo.environment)
        if let port { configuration.port = port }
        if let brokers { configuration.brokers = brokers }
        if let store { configuration.store = store }
        let level = logLevel ?? ProcessInfo.processInfo.environment["PUSHLINE_LOG_LEVEL"] ?? "info"
        guard let parsedLevel = Logger.Level(rawValue: level) else { throw ValidationError("unknown log level \(level)") }
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = parsedLevel
            return handler
        }
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        let logger = Logger(label: "pushline.ingest")

        // Producing to a missing topic would auto-create it with the broker's default partitions.
        try await KafkaAdmin.createTopics(configuration.topics.all(commandPartitions: configuration.partitions,
                                                                   outputPartitions: configuration.partitions),
                                          bootstrapServers: configuration.brokers, properties: configuration.kafkaProperties)
        var producerConfig = KafkaProducerConfiguration()
        producerConfig.bootstrapServers = configuration.brokers
        producerConfig.clientId = "pushline-ingest"
        producerConfig.deliveryTimeoutMs = configuration.produceTimeoutMs
        producerConfig.lingerMs = configuration.lingerMs
        producerConfig.properties = configuration.kafkaProperties
        let producer = try KafkaProducer(configuration: producerConfig, logger: logger)
        let store = try await ProjectionStoreFactory.open(configuration.store, logger: logger)
        logger.info("starting", metadata: ["brokers": "\(configuration.brokers)", "store": "\(configuration.storeForLogs)",
                                           "port": "\(configuration.port)"])
        let app = buildApplication(configuration: configuration, publisher: KafkaCommandPublisher(producer: producer),
                                   store: store, metrics: registry, logger: logger)
        do {
            try await app.runService()
        } catch {
            await producer.shutdown()
            throw error
        }
        await producer.shutdown()
    }
}
