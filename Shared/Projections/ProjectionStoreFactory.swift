import Foundation
import Logging

/// Opens the projection store named by a configuration string (`PUSHLINE_STORE`):
/// `sqlite:<path>` or a bare file path. PostgreSQL arrives behind the same protocol later.
public enum ProjectionStoreFactory {
    public static let defaultLocation = "sqlite:./var/pushline.sqlite"

    public static func open(_ location: String, logger: Logger) throws -> any ProjectionStore {
        if location.hasPrefix("postgres://") || location.hasPrefix("postgresql://") {
            throw ProjectionStoreError.invalidConfiguration("PostgreSQL projections are not available in this version; use sqlite:<path>")
        }
        let path = location.hasPrefix("sqlite:") ? String(location.dropFirst("sqlite:".count)) : location
        guard !path.isEmpty else { throw ProjectionStoreError.invalidConfiguration("empty SQLite path in '\(location)'") }
        return try SQLiteProjectionStore(path: path, logger: logger)
    }
}
