import Ingest
import Kafka
import Logging
import Projections
import ProjectionStores
import Prometheus
import ServiceLifecycle
import Settings

/// Builds and runs ingest: topics, producer, projection store (only read) and the HTTP
/// application (`buildApplication`), under one ServiceGroup that shuts down gracefully on
/// SIGTERM/SIGINT.
public enum IngestApp {
    public static func run(configuration: IngestConfiguration, metrics: PrometheusCollectorRegistry, logger: Logger) async throws {
        let shared = configuration.shared
        try await shared.createMissingTopics()
        var producerConfig = shared.producerConfiguration(clientId: "pushline-ingest")
        producerConfig.deliveryTimeout = .milliseconds(configuration.produceTimeoutMs)
        producerConfig.linger = .milliseconds(configuration.lingerMs)
        let producer = try KafkaProducer(configuration: producerConfig, logger: logger)
        let store = try await ProjectionStoreFactory.open(shared.store, logger: logger)
        logger.info("starting", metadata: ["brokers": "\(shared.brokers)", "store": "\(shared.storeForLogs)",
                                           "port": "\(configuration.port)"])
        let app = buildApplication(configuration: configuration, publisher: KafkaCommandPublisher(producer: producer, partitions: shared.partitions),
                                   store: store, metrics: metrics, logger: logger)
        // Shut down in reverse order: the HTTP server finishes its requests, then the producer
        // flushes, then the store closes.
        try await ServiceGroup(configuration: .init(
            services: [ProjectionStoreService(store), producer, app],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger
        )).run()
    }
}
