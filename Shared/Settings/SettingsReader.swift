import Configuration
import Foundation

/// The one reader of Pushline's settings: every executable builds one, from its environment
/// and the flags it was started with, and every configuration value is parsed through it, so a
/// variable means the same thing to every service that reads it.
///
/// The names are the environment variables of docs/CONFIGURATION.md's table. Flags given on
/// the command line are a provider in front of the environment (a flag wins over its variable).
/// A variable set to the empty string counts as unset — the default applies — except where a
/// setting says the empty string is a value of its own (`string(_:default:emptyIsValue:)`).
public struct SettingsReader: Sendable {
    private let reader: ConfigReader

    /// - Parameters:
    ///   - environment: The variables, by name (the process's own by default).
    ///   - overrides: Values from command-line flags, by the name of the variable they replace;
    ///     nil values are flags that were not given.
    public init(environment: [String: String] = ProcessInfo.processInfo.environment,
                overrides: [String: String?] = [:]) {
        let flags = overrides.reduce(into: [AbsoluteConfigKey: ConfigValue]()) { values, entry in
            if let value = entry.value { values[AbsoluteConfigKey([entry.key])] = ConfigValue(.string(value), isSecret: true) }
        }
        reader = ConfigReader(providers: [
            InMemoryProvider(name: "command line", values: flags),
            // Every value counts as secret for swift-configuration's access log: some (the admin
            // token, passwords in `PUSHLINE_STORE` and `PUSHLINE_KAFKA_PROPERTIES`) are.
            EnvironmentVariablesProvider(environmentVariables: environment, secretsSpecifier: .all),
        ])
    }

    /// The raw value of `name`; nil when it is unset.
    public func raw(_ name: String) -> String? {
        SettingsReads.record(name, .none)
        return lookup(name)
    }

    private func lookup(_ name: String) -> String? {
        reader.string(forKey: ConfigKey([name]), isSecret: true)
    }

    /// The value of `name`, or `value` when it is unset or empty — unless `emptyIsValue`, when
    /// an empty variable is the empty string.
    public func string(_ name: String, default value: String, emptyIsValue: Bool = false) -> String {
        SettingsReads.record(name, .value(value))
        guard let raw = lookup(name), emptyIsValue || !raw.isEmpty else { return value }
        return raw
    }

    /// The value of `name`, which must be set and not empty; `why` completes the error message.
    public func required(_ name: String, _ why: String) throws -> String {
        SettingsReads.record(name, .required)
        guard let raw = lookup(name), !raw.isEmpty else { throw ConfigurationError("\(name) is required: \(why)") }
        return raw
    }

    public func int(_ name: String, default value: Int, range: ClosedRange<Int>) throws -> Int {
        SettingsReads.record(name, .value(String(value)))
        guard let raw = lookup(name), !raw.isEmpty else { return value }
        guard let v = Int(raw), range.contains(v) else {
            throw ConfigurationError("\(name)=\(raw) is not an integer in \(range.lowerBound)...\(range.upperBound)")
        }
        return v
    }

    /// `true`/`false` (also `1`/`0`, `yes`/`no`), any case.
    public func bool(_ name: String, default value: Bool) throws -> Bool {
        SettingsReads.record(name, .value(String(value)))
        guard let raw = lookup(name), !raw.isEmpty else { return value }
        switch raw.lowercased() {
        case "true", "1", "yes": return true
        case "false", "0", "no": return false
        default: throw ConfigurationError("\(name)=\(raw) is not true or false")
        }
    }

    /// `key=value;key=value` → dictionary.
    public func properties(_ name: String) throws -> [String: String] {
        SettingsReads.record(name, .none)
        guard let raw = lookup(name), !raw.isEmpty else { return [:] }
        var out: [String: String] = [:]
        for (index, pair) in raw.split(separator: ";").enumerated() where !pair.trimmingCharacters(in: .whitespaces).isEmpty {
            let parts = pair.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            // The entry itself is not quoted: it may be a mistyped password.
            guard parts.count == 2, !parts[0].isEmpty else {
                throw ConfigurationError("\(name): entry \(index + 1) is not key=value")
            }
            out[parts[0]] = parts[1]
        }
        return out
    }
}

/// A configuration value that cannot be used; the message names the setting.
public struct ConfigurationError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
