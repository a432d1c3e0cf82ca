import ArgumentParser
import Foundation
import Logging
import Metrics
import Processor
import Prometheus

/// `pushline-processor`: consumes the command topics and builds the projections.
/// Settings come from the environment (see README); flags override the most common ones.
@main
struct PushlineProcessor: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pushline-processor",
        abstract: "Consumes Pushline's command topics, builds the projections and sends webhooks."
    )

    @Option(help: "Health/metrics port (PUSHLINE_PROCESSOR_PORT, default 8081).") var port: Int?
    @Option(help: "Kafka bootstrap servers (PUSHLINE_KAFKA_BROKERS, default 127.0.0.1:9092).") var brokers: String?
    @Option(help: "Projection store, sqlite:<path> (PUSHLINE_STORE, default sqlite:./var/pushline.sqlite).") var store: String?
    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical (PUSHLINE_LOG_LEVEL).") var logLevel: String?

    func run() async throws {
        var configuration = try ProcessorConfiguration.fromEnvironment()
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
        let logger = Logger(label: "pushline.processor")
        logger.info("starting", metadata: ["brokers": "\(configuration.brokers)", "store": "\(configuration.store)",
                                           "group": "\(configuration.groupId)", "port": "\(configuration.port)"])
        try await ProcessorApp.run(configuration: configuration, metrics: registry, logger: logger)
    }
}
