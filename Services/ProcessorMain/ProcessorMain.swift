import ArgumentParser
import Foundation
import Logging
import Metrics
import Processor
import ProcessorServer
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

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Consume the command topics and keep the projections current (default).")

    @Option(help: "Health/metrics port (PUSHLINE_PROCESSOR_PORT, default 8081).") var port: Int?
    @OptionGroup var common: ProcessorOptions

    func run() async throws {
        let (configuration, logger) = try common.bootstrap(flags: ["PUSHLINE_PROCESSOR_PORT": port.map(String.init)])
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        // From a produce round trip to minutes behind: where the live edge's waits fall.
        factory.durationHistogramBuckets["pushline_processor_apply_delay_seconds"] =
            [50, 100, 250, 500, 750, 1000, 1500, 2000, 3000, 5000, 10000, 30000, 60000, 300_000].map { .milliseconds($0) }
        MetricsSystem.bootstrap(factory)
        logger.info("starting", metadata: ["brokers": "\(configuration.shared.brokers)", "store": "\(configuration.shared.storeForLogs)",
                                           "group": "\(configuration.groupId)", "port": "\(configuration.port)"])
        try await ProcessorApp.run(configuration: configuration, metrics: registry, logger: logger)
    }
}
