import Foundation

/// The settings read, each with its default, while a task runs with `SettingsReads.$current`
/// bound: which variables an executable's configuration reads and what it assumes when one is
/// unset, as the code says it. The tests hold the configuration table of docs/CONFIGURATION.md
/// to it (its defaults and "used by" columns); when unbound, reading records nothing.
public final class SettingsReads: @unchecked Sendable {
    /// What a read assumes when its variable is unset (or empty).
    public enum Default: Hashable, Sendable, CustomStringConvertible {
        /// This value.
        case value(String)
        /// Nothing: the setting is absent (`raw`, `properties`).
        case none
        /// Nothing: the executable stops (`required`).
        case required

        public var description: String {
            switch self {
            case .value(let value): "`\(value)`"
            case .none: "—"
            case .required: "(required)"
            }
        }
    }

    @TaskLocal public static var current: SettingsReads?

    private let lock = NSLock()
    private var recorded: [String: Set<Default>] = [:]

    public init() {}

    /// Every variable read so far, with the defaults its reads assumed.
    public var defaults: [String: Set<Default>] {
        lock.withLock { recorded }
    }

    static func record(_ name: String, _ value: Default) {
        guard let reads = current else { return }
        reads.lock.withLock { _ = reads.recorded[name, default: []].insert(value) }
    }
}
