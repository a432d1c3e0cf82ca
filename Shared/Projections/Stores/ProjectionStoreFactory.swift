import PostgresProjections
import Projections
import SQLiteProjections
import Foundation
import Logging
import Settings

/// Opens the projection store named by a configuration string (`PUSHLINE_STORE`):
/// `sqlite:<path>` or a bare file path for SQLite, `postgres://…` or `postgresql://…` for
/// PostgreSQL (see `PostgresLocation` for the URL's parts and parameters).
public enum ProjectionStoreFactory {
    /// Throws `invalidConfiguration` for a location it cannot understand, and whatever opening
    /// the store throws (`.unavailable` for an unreachable PostgreSQL server).
    public static func open(_ location: String, logger: Logger) async throws -> any ProjectionStore {
        if location.hasPrefix("postgres://") || location.hasPrefix("postgresql://") {
            return try await PostgresProjectionStore(location: PostgresLocation(url: location), logger: logger)
        }
        if location.hasPrefix("postgres:") || location.hasPrefix("postgresql:") {
            throw ProjectionStoreError.invalidConfiguration(
                "'\(redacted(location))' is not a PostgreSQL URL; expected postgres://user@host:port/database")
        }
        guard let path = sqlitePath(location), !path.isEmpty else {
            throw ProjectionStoreError.invalidConfiguration("empty SQLite path in '\(location)'")
        }
        return try SQLiteProjectionStore(path: path, logger: logger)
    }

    /// The file of a SQLite location (`sqlite:<path>` or a bare path); nil for a PostgreSQL one.
    public static func sqlitePath(_ location: String) -> String? {
        if location.hasPrefix("postgres:") || location.hasPrefix("postgresql:") { return nil }
        return location.hasPrefix("sqlite:") ? String(location.dropFirst("sqlite:".count)) : location
    }

    /// The location with any password hidden, for logs.
    public static func redacted(_ location: String) -> String {
        PostgresLocation.redacting(location)
    }
}

extension SharedSettings {
    /// `store` with any password hidden, for logs and messages.
    public var storeForLogs: String { ProjectionStoreFactory.redacted(store) }
}
