import Foundation

// The environment variable names are part of Pushline's deployment contract (README, compose
// files), so both services read them through this one reader.

/// Reads typed settings from environment variables with clear errors.
public struct EnvironmentReader {
    private let env: [String: String]

    public init(_ env: [String: String]) {
        self.env = env
    }

    public func string(_ name: String, default value: String) -> String {
        guard let v = env[name], !v.isEmpty else { return value }
        return v
    }

    public func int(_ name: String, default value: Int, range: ClosedRange<Int>) throws -> Int {
        guard let raw = env[name], !raw.isEmpty else { return value }
        guard let v = Int(raw), range.contains(v) else {
            throw ConfigurationError("\(name)=\(raw) is not an integer in \(range.lowerBound)...\(range.upperBound)")
        }
        return v
    }

    /// `true`/`false` (also `1`/`0`, `yes`/`no`), any case.
    public func bool(_ name: String, default value: Bool) throws -> Bool {
        guard let raw = env[name], !raw.isEmpty else { return value }
        switch raw.lowercased() {
        case "true", "1", "yes": return true
        case "false", "0", "no": return false
        default: throw ConfigurationError("\(name)=\(raw) is not true or false")
        }
    }

    /// `key=value;key=value` → dictionary.
    public func properties(_ name: String) throws -> [String: String] {
        guard let raw = env[name], !raw.isEmpty else { return [:] }
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
