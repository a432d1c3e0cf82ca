import AsyncHTTPClient
import Contracts
import Foundation
import Handlers
import Hummingbird
import Kafka
import Logging
import Metrics
import NIOCore
import Operations
import Prometheus
import Processor
import Projections
import ProjectionStores
import ServiceLifecycle

/// Builds and runs the processor: topics, projection store, consumer loop, outbox dispatcher
/// and the health/metrics HTTP server, under one ServiceGroup that shuts down gracefully on
/// SIGTERM/SIGINT (the in-flight batch is finished, the group is left cleanly).
public enum ProcessorApp {
    public static func run(configuration: ProcessorConfiguration, metrics: PrometheusCollectorRegistry,
                           verifier: any DeviceTokenVerifier = DecisionRules.defaultVerifier, logger: Logger) async throws {
        try await configuration.shared.createMissingTopics()
        let store = try await ProjectionStoreFactory.open(configuration.shared.store, logger: logger)

        let producer = try KafkaProducer(configuration: configuration.shared.producerConfiguration(clientId: "pushline-processor"),
                                         logger: logger)

        var httpConfig = HTTPClient.Configuration()
        httpConfig.redirectConfiguration = .disallow
        httpConfig.timeout = .init(connect: .seconds(2), read: .milliseconds(Int64(configuration.webhookTimeoutMs)))
        let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: httpConfig)

        var dispatcherConfig = WebhookDispatcher.Configuration()
        dispatcherConfig.concurrency = configuration.webhookConcurrency
        dispatcherConfig.perAppConcurrency = configuration.webhookAppConcurrency
        dispatcherConfig.requestTimeout = .milliseconds(configuration.webhookTimeoutMs)
        dispatcherConfig.auditTopic = configuration.shared.topics.webhooks
        dispatcherConfig.targetPolicy = WebhookTargetPolicy(allowPrivateTargets: configuration.webhookAllowPrivateTargets)
        dispatcherConfig.secrets = configuration.secrets
        let dispatcher = WebhookDispatcher(configuration: dispatcherConfig, store: store, http: http, producer: producer, logger: logger)

        // The changelog has a producer of its own: its entries (up to 512 KiB a record) never
        // queue ahead of the outbound records and webhook audit records on one connection.
        let changelogProducer = try KafkaProducer(
            configuration: configuration.shared.producerConfiguration(clientId: "pushline-processor-changelog"), logger: logger)
        let changelog = ChangelogPublisher(store: store, producer: changelogProducer, topic: configuration.shared.topics.changelog,
                                           logger: logger)
        let consumer = CommandConsumer.live(configuration: configuration, store: store, producer: producer, verifier: verifier,
                                            logger: logger, onApplied: {
                                                dispatcher.wake()
                                                changelog.wake()
                                            })

        let router = Router()
        // Readiness: 503 while the consumer is not running, its store is unavailable, or an owned
        // partition has records waiting and made no progress for the stall time.
        HealthAndMetricsRoutes(registry: metrics) {
            consumer.readiness.problem.map { HealthAndMetricsRoutes.HealthProblem(reason: $0) }
        }.addRoutes(to: router)
        let app = Application(router: router, configuration: .init(address: .hostname(configuration.host, port: configuration.port),
                                                                   serverName: "pushline-processor"),
                              logger: logger)

        let group = ServiceGroup(configuration: .init(
            // Shut down in reverse order: the HTTP server, the dispatcher and the consumer finish
            // first, then the changelog publisher publishes what the last batches committed, then
            // the clients they used — webhook HTTP, producer, store — are closed.
            services: [
                .init(service: ProjectionStoreService(store)),
                .init(service: producer),
                .init(service: changelogProducer),
                .init(service: HTTPClientService(client: http)),
                .init(service: changelog),
                .init(service: consumer, successTerminationBehavior: .gracefullyShutdownGroup, failureTerminationBehavior: .gracefullyShutdownGroup),
                .init(service: dispatcher),
                .init(service: app),
            ],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger
        ))
        try await group.run()
    }
}

/// Keeps the webhook HTTP client until the service group shuts down, then shuts it down.
private struct HTTPClientService: Service {
    let client: HTTPClient

    func run() async throws {
        try? await gracefulShutdown()
        try await client.shutdown()
    }
}
