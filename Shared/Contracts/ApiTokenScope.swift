import Foundation

/// What an app's API token may do (docs/API.md#token-scopes). A token's scopes are fixed when it
/// is issued.
///
/// - `client`: what a device does — register (every dialect), clean up, acknowledge, read its
///   pending notifications, report tracking, read registration statuses. This token ships
///   inside the mobile app, so anyone may hold it.
/// - `server`: what the app's backend does — send, read delivery statistics and outcomes. It
///   stays on the app's servers.
public enum ApiTokenScope: String, Codable, CaseIterable, Sendable, Comparable {
    case client, server

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// The one definition of "this token has scope X", shared by ingest and the processor.
public enum ApiTokenScopes {
    /// Whether a token with `scopes` may act with `scope`. `nil` scopes are a legacy token
    /// (issued before scopes existed): it keeps every scope.
    public static func grant(_ scopes: [ApiTokenScope]?, _ scope: ApiTokenScope) -> Bool {
        scopes?.contains(scope) ?? true
    }

    /// The canonical form of a set of scopes: each once, sorted by name.
    public static func normalized(_ scopes: [ApiTokenScope]) -> [ApiTokenScope] {
        Array(Set(scopes)).sorted()
    }

    /// The stored column value: the names sorted and comma-separated (`client,server`); nil for
    /// a legacy token.
    public static func column(_ scopes: [ApiTokenScope]?) -> String? {
        scopes.map { normalized($0).map(\.rawValue).joined(separator: ",") }
    }

    /// The scopes of a stored column value; nil (legacy) for NULL. Throws on an unknown name.
    public static func parse(column: String?) throws -> [ApiTokenScope]? {
        guard let column else { return nil }
        guard !column.isEmpty else { return [] }
        return try normalized(column.split(separator: ",").map { name in
            guard let scope = ApiTokenScope(rawValue: String(name)) else { throw UnknownScope(name: String(name)) }
            return scope
        })
    }

    public struct UnknownScope: Error, CustomStringConvertible {
        public var name: String
        public var description: String { "unknown API token scope '\(name)'" }
    }
}
