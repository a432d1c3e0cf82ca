import ArgumentParser
import Logging
import Settings

/// The flags of every command that works with the processor's configuration: the processor's
/// own subcommands (`pushline-processor serve|rebuild`) and the admin CLI's `pushline lag` and
/// `pushline rebuild`. Everything else comes from the environment, read by
/// `ProcessorConfiguration.fromEnvironment`, so all of them read the same variables.
public struct ProcessorOptions: ParsableArguments {
    @Option(help: "Kafka bootstrap servers (PUSHLINE_KAFKA_BROKERS, default 127.0.0.1:9092).") public var brokers: String?
    @Option(help: "Projection store, sqlite:<path> or postgres://user@host:port/db (PUSHLINE_STORE, default sqlite:./var/pushline.sqlite).")
    public var store: String?
    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical (PUSHLINE_LOG_LEVEL).") public var logLevel: String?

    public init() {}

    /// The configuration of the environment, these flags and a command's own `flags` (by the
    /// variable each replaces), and logging set up (to standard error, at `--log-level`, else
    /// PUSHLINE_LOG_LEVEL, else `defaultLevel`).
    public func bootstrap(label: String = "pushline.processor", defaultLevel: Logger.Level = .info,
                          flags: [String: String?] = [:]) throws -> (ProcessorConfiguration, Logger) {
        let own = [SharedSettings.Variable.brokers: brokers, SharedSettings.Variable.store: store,
                   SharedSettings.Variable.logLevel: logLevel]
        let configuration = try ProcessorConfiguration.fromEnvironment(overrides: own.merging(flags) { $1 },
                                                                       defaultLogLevel: defaultLevel)
        configuration.shared.bootstrapLogging()
        return (configuration, Logger(label: label))
    }
}
