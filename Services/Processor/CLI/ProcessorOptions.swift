import ArgumentParser
import Foundation
import Logging

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

    /// The environment's configuration with these flags applied, and logging set up (to
    /// standard error, at `--log-level`, else PUSHLINE_LOG_LEVEL, else `defaultLevel`).
    public func bootstrap(label: String = "pushline.processor", defaultLevel: Logger.Level = .info) throws -> (ProcessorConfiguration, Logger) {
        var configuration = try ProcessorConfiguration.fromEnvironment()
        if let brokers { configuration.brokers = brokers }
        if let store { configuration.store = store }
        let level = logLevel ?? ProcessInfo.processInfo.environment["PUSHLINE_LOG_LEVEL"] ?? defaultLevel.rawValue
        guard let parsedLevel = Logger.Level(rawValue: level) else { throw ValidationError("unknown log level \(level)") }
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = parsedLevel
            return handler
        }
        return (configuration, Logger(label: label))
    }
}
