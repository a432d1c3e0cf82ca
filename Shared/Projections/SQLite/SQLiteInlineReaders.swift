import ProjectionChangelog
import Projections
import GRDB
import Synchronization

/// Read-only connections that run a short read on the calling thread.
///
/// A read through the pool hops to a reader thread and back, which costs more (in CPU and in
/// wakeups) than a primary-key lookup itself. For the lookups on a request's path that must cost
/// nothing measurable (a keyed send's "is this delivery applied?", docs/BENCHMARKS.md), a
/// connection is taken from here, the statement runs where the caller is, and the connection
/// goes back. A lookup reads a few cached pages through the memory map; SQLite readers never wait
/// for the writer (WAL).
final class SQLiteInlineReaders: Sendable {
    /// Idle connections kept; more are opened while more lookups run at once, then closed.
    private static let kept = 4

    private let path: String
    private let configuration: Configuration
    private let idle = Mutex<[DatabaseQueue]>([])

    init(path: String, configuration: Configuration) {
        var configuration = configuration
        configuration.readonly = true
        configuration.label = "\(configuration.label ?? "sqlite").inline"
        self.path = path
        self.configuration = configuration
    }

    /// `body` on an idle connection (opened if none is), outside any transaction: one statement
    /// is its own snapshot.
    func read<T>(_ body: (Database) throws -> T) throws -> T {
        let connection = try idle.withLock { $0.popLast() } ?? DatabaseQueue(path: path, configuration: configuration)
        defer {
            idle.withLock { idle in
                if idle.count < Self.kept { idle.append(connection) }
            }
        }
        return try connection.inDatabase(body)
    }
}
