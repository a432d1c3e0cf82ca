import ArgumentParser
import Foundation
import Ingest
import IngestServer
import Logging
import Metrics
import NIOCore
import NIOPosix
import Prometheus
import Settings

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

    /// Swift Concurrency's jobs run on the event loops that serve the connections: a request's
    /// handler then resumes where its bytes arrived, instead of hopping to the global pool and back
    /// (docs/BENCHMARKS.md, "Ingest"). Nothing in ingest blocks a thread it does not own: store reads
    /// and the producer's blocking calls run on threads of their own.
    static func main() async {
        NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
        await main(nil)
    }

    func run() async throws {
        let configuration = try IngestConfiguration.fromEnvironment(
            ProcessInfo.processInfo.environment,
            overrides: [IngestConfiguration.Variable.port: port.map(String.init), SharedSettings.Variable.brokers: brokers,
                        SharedSettings.Variable.store: store, SharedSettings.Variable.logLevel: logLevel])
        configuration.shared.bootstrapLogging()
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        try await IngestApp.run(configuration: configuration, metrics: registry, logger: Logger(label: "pushline.ingest"))
    }
}
