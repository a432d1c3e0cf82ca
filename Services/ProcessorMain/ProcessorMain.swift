import ArgumentParser
import Foundation
import Logging
import Metrics
import Processor
import Projections
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
    @Option(help: "Projection store, sqlite:<path> or postgres://user@host:port/db (PUSHLINE_STORE, default sqlite:./var/pushline.sqlite).") var store: String?
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
        abstract: "Build the projections anew from offset 0 of the command topics into a new store, then switch over to it.",
        discussion: """
            Topics are replayed in order (admin, registration, notification, tracking) through the \
            processor's own applier; a progress line (records done/total, rate, ETA) goes to standard \
            error. Outbound records and webhooks are not sent again: replayed outbox jobs are stored as \
            `replayed`.

            Switching a running stack over (the old store keeps serving reads meanwhile):
              1. pushline-processor rebuild --store NEW --previous OLD
                 (replays up to OLD's offsets; repeat it to catch up, it resumes)
              2. stop the processors that use OLD (ingest keeps accepting), then
                 pushline-processor rebuild --store NEW --previous OLD --switch
                 (replays the last records, copies OLD's outbox with its delivery progress)
              3. start the processors and ingest with PUSHLINE_STORE=NEW.
            Without --previous (the old store is lost), NEW must be empty and is replayed to the \
            topics' current end.
            """
    )

    @OptionGroup var common: CommonOptions
    @Option(help: "The store the stack serves from now; its offsets are the targets.") var previous: String?
    @Flag(name: .customLong("switch"), help: "Step 2: the processors on --previous are stopped; finish and carry its outbox over.")
    var switchOver = false
    @Flag(help: "Share the work with other rebuilds into the same store, all started with --join (one consumer group per topic).")
    var join = false
    @Flag(help: "Write no progress lines.") var quiet = false
    @Option(help: "Records applied in one store transaction at most (1...100000).") var batch = Rebuild.Options.defaultBatchSize

    func validate() throws {
        let sizes = ProcessorConfiguration.batchSizes
        guard sizes.contains(batch) else {
            throw ValidationError("--batch must be between \(sizes.lowerBound) and \(sizes.upperBound), not \(batch)")
        }
    }

    func run() async throws {
        let (configuration, logger) = try common.bootstrap()
        logger.info("rebuilding", metadata: ["brokers": "\(configuration.brokers)", "store": "\(configuration.storeForLogs)",
                                             "previous": "\(previous.map(ProjectionStoreFactory.redacted) ?? "-")", "switch": "\(switchOver)"])
        let options = Rebuild.Options(previous: previous, switchOver: switchOver, join: join, progressInterval: quiet ? nil : .seconds(1),
                                      batchSize: batch)
        let summary = try await Rebuild.run(configuration: configuration, options: options, logger: logger)
        logger.info("rebuild finished", metadata: [
            "records": "\(summary.records.values.reduce(0, +))", "outbound_not_republished": "\(summary.outboundNotRepublished)",
            "outbox_carried": "\(summary.outboxCarried)",
        ])
        if switchOver {
            print("switched: start the processors and ingest with PUSHLINE_STORE=\(configuration.storeForLogs)")
        }
    }
}
