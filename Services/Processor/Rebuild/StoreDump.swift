import Foundation
import Logging
import Projections
import ProjectionStores

/// `pushline dump`: a store's projected tables as the deterministic text every backend writes for
/// the same content (`StoreInspection.dump`), so that two stores — a rebuild and the live one,
/// SQLite and PostgreSQL — can be compared with `diff`. Reads only; creates no store.
public enum StoreDump {
    /// The dump of the store `location`.
    public static func text(of location: String, logger: Logger) async throws -> String {
        try requireExisting(location)
        return try await ProjectionStoreFactory.withStore(location, logger: logger) { try await $0.dump() }
    }

    /// How many changelog entries the store committed and its processors have not published yet
    /// (at most `limit`): a rebuild from the changelog holds only what was published, so compare
    /// it with the live store once this is 0.
    public static func unpublishedChangelogEntries(of location: String, limit: Int = 10_000, logger: Logger) async throws -> Int {
        try requireExisting(location)
        return try await ProjectionStoreFactory.withStore(location, logger: logger) {
            try await $0.unpublishedChangelog(after: 0, limit: limit).count
        }
    }

    /// Opening a SQLite store creates it: a mistyped path must not leave an empty store behind.
    private static func requireExisting(_ location: String) throws {
        if let path = ProjectionStoreFactory.sqlitePath(location), !FileManager.default.fileExists(atPath: path) {
            throw ProjectionStoreError.invalidConfiguration("there is no SQLite store at \(path)")
        }
    }
}
