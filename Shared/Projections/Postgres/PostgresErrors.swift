import ProjectionChangelog
import Projections
import Logging
import PostgresNIO

extension PostgresConnection {
    /// Runs a statement and reads (discards) whatever it returns.
    func run(_ query: PostgresQuery, logger: Logger) async throws {
        for try await _ in try await self.query(query, logger: logger) {}
    }

    /// Runs a query and collects its rows.
    func rows(_ query: PostgresQuery, logger: Logger) async throws -> [PostgresRow] {
        try await self.query(query, logger: logger).collect()
    }
}

/// How PostgreSQL and PostgresNIO errors become `ProjectionStoreError`s.
///
/// Transient failures, unrelated to the data, are `.unavailable`: the server could not be
/// reached or the connection broke (SQLSTATE class 08, PostgresNIO's connection errors), the
/// server is shutting down or starting (57P01, 57P02, 57P03), has no connection slot or
/// resources left (class 53), or aborted the transaction to break a deadlock (40P01) or a
/// serialization conflict (40001). Everything else, constraint violations included, is
/// `.database`. Messages carry the SQLSTATE, the server's message and detail, never the
/// statement's parameters (a batch's arrays can be megabytes).
enum PostgresErrors {
    private static let transientStates: Set<String> = ["40P01", "40001", "57P01", "57P02", "57P03"]
    private static let transientClasses: Set<Substring> = ["08", "53"]

    static func storeError(_ error: any Error) -> any Error {
        switch error {
        case let error as ProjectionStoreError: error
        case let error as CancellationError: error
        case let error as PSQLError: classify(error)
        case let error as PostgresDecodingError:
            ProjectionStoreError.database("""
                cannot decode column \(error.columnName) (\(error.postgresType)) as \(error.targetType): \(error.code)
                """)
        case let error as IOError: ProjectionStoreError.unavailable("connection: \(error)")
        case let error as ChannelError: ProjectionStoreError.unavailable("connection: \(error)")
        default: ProjectionStoreError.database(String(describing: error))
        }
    }

    /// Whether the error says that the connection itself is gone or going (rather than a
    /// statement failing): then nothing more may be sent on it, not even a ROLLBACK, which could
    /// race the server closing it.
    static func isConnectionLost(_ error: any Error) -> Bool {
        switch error {
        case let error as PSQLError:
            if error.code == .server {
                let state = error.serverInfo?[.sqlState] ?? ""
                let severity = error.serverInfo?[.severity] ?? ""
                return severity == "FATAL" || severity == "PANIC" || state.hasPrefix("08") || state.hasPrefix("57P0")
            }
            return [.serverClosedConnection, .clientClosedConnection, .connectionError, .uncleanShutdown].contains(error.code)
        case is IOError, is ChannelError: return true
        default: return false
        }
    }

    private static func classify(_ error: PSQLError) -> ProjectionStoreError {
        switch error.code {
        case .server:
            let state = error.serverInfo?[.sqlState] ?? "?????"
            var message = "\(error.serverInfo?[.severity] ?? "ERROR") \(state): \(error.serverInfo?[.message] ?? "")"
            if let detail = error.serverInfo?[.detail] { message += " (\(detail))" }
            if transientStates.contains(state) || transientClasses.contains(state.prefix(2)) {
                return .unavailable(message)
            }
            return .database(message)
        case .serverClosedConnection, .clientClosedConnection, .connectionError, .uncleanShutdown, .poolClosed, .queryCancelled:
            let cause = error.underlying.map { ": \(String(describing: $0))" } ?? ""
            return .unavailable("\(error.code)\(cause)")
        default:
            let cause = error.underlying.map { ": \(String(describing: $0))" } ?? ""
            return .database("\(error.code)\(cause)")
        }
    }
}
