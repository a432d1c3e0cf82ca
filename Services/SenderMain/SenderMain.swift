import ArgumentParser
import Logging
import Metrics
import Prometheus
import Sender
import SenderServer
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
        configuration.shared.bootstrapLogging()
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        try await SenderApp.run(configuration: configuration, metrics: registry, logger: Logger(label: "pushline.sender"))
    }
}
