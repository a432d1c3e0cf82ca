/// The one error type of the Projections module.
public enum ProjectionStoreError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The stored offsets of these partitions were not the expected ones; nothing was written.
    case offsetConflict([PartitionKey])
    /// The schema in the store is newer than this code knows.
    case unsupportedSchemaVersion(found: Int, supported: Int)
    /// The underlying database failed.
    case database(String)
    /// The store configuration could not be understood.
    case invalidConfiguration(String)
    /// Transient: the database could not be reached, or aborted the transaction for reasons
    /// unrelated to the data (connection refused or lost, server shutting down, deadlock,
    /// serialization failure, SQLite busy or locked). Nothing was written; retrying the same
    /// call later is right.
    case unavailable(String)

    public var description: String {
        switch self {
        case .offsetConflict(let p): "stored offsets changed underneath for \(p.map(\.description).joined(separator: ", "))"
        case .unsupportedSchemaVersion(let found, let supported): "store schema version \(found) is newer than supported \(supported)"
        case .database(let m): "database error: \(m)"
        case .invalidConfiguration(let m): "invalid store configuration: \(m)"
        case .unavailable(let m): "store unavailable: \(m)"
        }
    }
}
