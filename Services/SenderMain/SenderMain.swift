import ArgumentParser
import Foundation
import Hummingbird
import Kafka
import Logging
import Metrics
import Operations
import Projections
import ProjectionStores
import Prometheus
import Sender
import ServiceLifecycle
import Settings

/// `pushline-sender`: pushes the outbound records to APNs and FCM and reports each outcome to
/// the delivery topic. Settings come from the environment (see README); flags override the most
/// common ones.
@main
struct PushlineSender: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pushline-sender",
        abstract: "Delivers Pushline's outbound records to APNs and FCM and reports every outcome."
    )

    @Option(help: "Health/metrics port (PUSHLINE_SENDER_PORT, default 8082).") var port: Int?
    @Option(help: "Kafka bootstrap servers (PUSHLINE_KAFKA_BROKERS, default 127.0.0.1:9092).") var brokers: String?
    @Option(help: "Projection store to read credentials from, sqlite:<path> or postgres://… (PUSHLINE_STORE).") var store: String?
    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical (PUSHLINE_LOG_LEVEL).") var logLevel: String?

    func run() async throws {
        let configuration = try SenderConfiguration.fromEnvironment(
            overrides: ["PUSHLINE_SENDER_PORT": port.map(String.init), SharedSettings.Variable.brokers: brokers,
                        SharedSettings.Variable.store: store, SharedSettings.Variable.logLevel: logLevel])
        let shared = configuration.shared
        shared.bootstrapLogging()
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        let logger = Logger(label: "pushline.sender")

        try await shared.createMissingTopics()
        let store = try await ProjectionStoreFactory.open(shared.store, logger: logger)
        var producerConfiguration = shared.producerConfiguration(clientId: "pushline-sender")
        // Outcomes wait for nobody: lingering longer than ingest makes fewer, larger produce
        // requests (librdkafka's producer thread woke per outcome at 2 ms; the durable broker
        // writes one object per request; docs/BENCHMARKS.md, "Sender").
        producerConfiguration.linger = .milliseconds(20)
        let producer = try KafkaProducer(configuration: producerConfiguration, logger: logger)
        let pusher = try Pusher(keyring: configuration.keyring!, endpoints: configuration.endpoints, caFile: configuration.caFile,
                                timeout: .milliseconds(configuration.requestTimeoutMs), concurrency: configuration.concurrency,
                                appConcurrency: configuration.appConcurrency)
        let book = CredentialsBook(maxAge: .milliseconds(configuration.credentialsCacheMs)) { app in
            try await store.app(app)?.pushCredentials
        }
        let loop = SendLoop(configuration: configuration, pusher: pusher, credentials: book, producer: producer, logger: logger)

        let router = Router()
        HealthAndMetricsRoutes(registry: registry) {
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
