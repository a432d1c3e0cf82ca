import Hummingbird
import Kafka
import Logging
import Operations
import Projections
import ProjectionStores
import Prometheus
import Sender
import ServiceLifecycle
import Settings

/// Builds and runs the sender: topics, projection store (read for the apps' credentials),
/// producer of outcomes, pusher, send loop and the health/metrics HTTP server, under one
/// ServiceGroup that shuts down gracefully on SIGTERM/SIGINT.
public enum SenderApp {
    public static func run(configuration: SenderConfiguration, metrics: PrometheusCollectorRegistry, logger: Logger) async throws {
        let shared = configuration.shared
        try await shared.createMissingTopics()
        let store = try await ProjectionStoreFactory.open(shared.store, logger: logger)
        var producerConfiguration = shared.producerConfiguration(clientId: "pushline-sender")
        // Outcomes wait for nobody: they linger longer than ingest's commands
        // (`SenderConfiguration.lingerMs`; docs/BENCHMARKS.md, "Sender").
        producerConfiguration.linger = .milliseconds(configuration.lingerMs)
        let producer = try KafkaProducer(configuration: producerConfiguration, logger: logger)
        let pusher = try Pusher(keyring: configuration.keyring!, endpoints: configuration.endpoints, caFile: configuration.caFile,
                                timeout: .milliseconds(configuration.requestTimeoutMs), concurrency: configuration.concurrency,
                                appConcurrency: configuration.appConcurrency)
        let book = CredentialsBook(maxAge: .milliseconds(configuration.credentialsCacheMs)) { app in
            try await store.app(app)?.pushCredentials
        }
        let loop = SendLoop(configuration: configuration, pusher: pusher, credentials: book, producer: producer, logger: logger)

        let router = Router()
        HealthAndMetricsRoutes(registry: metrics) {
            loop.problem.map { HealthAndMetricsRoutes.HealthProblem(reason: $0) }
        }.addRoutes(to: router)
        let app = Application(router: router, configuration: .init(address: .hostname(configuration.host, port: configuration.port),
                                                                   serverName: "pushline-sender"),
                              logger: logger)
        logger.info("starting", metadata: ["brokers": "\(shared.brokers)", "store": "\(shared.storeForLogs)",
                                           "group": "\(configuration.groupId)", "port": "\(configuration.port)",
                                           "apns": "\(configuration.endpoints.apnsOverride ?? "Apple's hosts")",
                                           "fcm": "\(configuration.endpoints.fcm)"])
        // Shut down in reverse order: the HTTP server, then the loop (its last outcomes written
        // and offsets committed), then the HTTP clients, the producer and the store.
        try await ServiceGroup(configuration: .init(
            services: [
                .init(service: ProjectionStoreService(store)),
                .init(service: producer),
                .init(service: PusherService(pusher: pusher)),
                .init(service: loop, successTerminationBehavior: .gracefullyShutdownGroup, failureTerminationBehavior: .gracefullyShutdownGroup),
                .init(service: app),
            ],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger
        )).run()
    }
}

/// Keeps the pusher's HTTP clients until the service group shuts down.
private struct PusherService: Service {
    let pusher: Pusher

    func run() async throws {
        try? await gracefulShutdown()
        await pusher.shutdown()
    }
}
