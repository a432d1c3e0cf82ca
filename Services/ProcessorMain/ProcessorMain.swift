import ArgumentParser
import Foundation
import Logging
import Metrics
import Processor
import Prometheus

/// `pushline-processor`: consumes the command topics and builds the projections
/// (`serve`, the default), or builds them anew from offset 0 (`rebuild`).
/// Settings come from the environment (see README); flags override the most common ones.
@main
struct PushlineProcessor: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pushline-processor",
        abstract: "Consumes Pushline's command topics, builds the projections and sends webhooks.",
        subcommands: [Serve.self, RebuildCommand.self],
        defaultSubcommand: Serve.self
    )
}

/// The flags both subcommands take.
struct CommonOptions: ParsableArguments {
    @Option(help: "Kafka bootstrap servers (PUSHLINE_KAFKA_BROKERS, default 127.0.0.1:9092).") var brokers: String?
    @Option(help: "Projection store, sqlite:<path> (PUSHLINE_STORE, default sqlite:./var/pushline.sqlite).") var store: String?
    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical (PUSHLINE_LOG_LEVEL).") var logLevel: String?

    /// The environment's configuration with these flags applied, and logging set up.
    func bootstrap() throws -> (ProcessorConfiguration, Logger) {
        var configuration = try ProcessorConfiguration.fromEnvironment()
        if let brokers { configuration.brokers = brokers }
        if let store { configuration.store = store }
        let level = logLevel ?? ProcessInfo.processInfo.environment["PUSHLINE_LOG_LEVEL"] ?? "info"
        guard let parsedLevel = Logger.Level(rawValue: level) else { throw ValidationError("unknown log level \(level)") }
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = parsedLevel
            return handler
        }
        return (configuration, Logger(label: "pushline.processor"))
    }
}

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Consume the command topics and keep the projections current (default).")

    @Option(help: "Health/metrics port (PUSHLINE_PROCESSOR_PORT, default 8081).") var port: Int?
    @OptionGroup var common: CommonOptions

    func run() async throws {
        var (configuration, logger) = try common.bootstrap()
        if let port { configuration.port = port }
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        logger.info("starting", metadata: ["brokers": "\(configuration.brokers)", "store": "\(configuration.storeForLogs)",
                                           "group": "\(configuration.groupId)", "port": "\(configuration.port)"])
        try await ProcessorApp.run(configuration: configuration, metrics: registry, logger: logger)
    }
}

struct RebuildCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rebuild",
        abstract: "Build the projections anew from offset 0 of every command topic into an empty store, then exit.",
        discussion: """
            Topics are replayed in order (admin, registration, notification, tracking), each to its end. \
            Outbound records and webhooks are not sent again. Point PUSHLINE_STORE (or --store) at a new \
            file, then start the processor on it.
            """
    )

    @OptionGroup var common: CommonOptions

    func run() async throws {
        let (configuration, logger) = try common.bootstrap()
        logger.info("rebuilding", metadata: ["brokers": "\(configuration.brokers)", "store": "\(configuration.storeForLogs)"])
        let summary = try await Rebuild.run(configuration: configuration, logger: logger)
        logger.info("rebuild finished", metadata: [
            "records": "\(summary.records.values.reduce(0, +))", "outbound_not_republished": "\(summary.outboundNotRepublished)",
        ])
    }
}
