import ProjectionChangelog
import Projections
import Logging
import PostgresNIO

/// The store's own few connections to the server.
///
/// Not `PostgresClient`: its pool keeps lease requests waiting while the server cannot be
/// reached (up to a minute, then rejects them until a background retry succeeds). The store
/// wants the opposite: a call made while the server is down fails at once with
/// `ProjectionStoreError.unavailable`, so that the processor's retry loop decides how long to
/// wait, and the first call after the server is back connects anew and succeeds. So this pool
/// connects on demand, up to `size` connections, keeps idle ones for reuse, drops any that
/// closed or failed, and never retries by itself.
actor PostgresConnectionPool {
    private let configuration: PostgresConnection.Configuration
    private let size: Int
    private let logger: Logger
    private var idle: [PostgresConnection] = []
    private var open = 0
    private var waiters: [CheckedContinuation<Void, Never>] = []
    private var nextId = 0

    init(configuration: PostgresConnection.Configuration, size: Int, logger: Logger) {
        self.configuration = configuration
        self.size = size
        self.logger = logger
    }

    deinit {
        for connection in idle {
            Self.close(connection)
        }
    }

    /// An open connection: an idle one (`reused`), else a new one; waits while `size` are leased.
    /// Throws what connecting threw.
    func lease() async throws -> (connection: PostgresConnection, reused: Bool) {
        while true {
            while let connection = idle.popLast() {
                if !connection.isClosed { return (connection, true) }
                open -= 1
            }
            if open < size {
                open += 1
                nextId += 1
                do {
                    return (try await connect(id: nextId), false)
                } catch {
                    open -= 1
                    resumeOneWaiter()
                    throw error
                }
            }
            await withCheckedContinuation { waiters.append($0) }
        }
    }

    /// Connects, giving up after `connectTimeout` (PostgresNIO's own timeout covers the TCP
    /// connect, not a server that accepts and then never answers the startup).
    ///
    /// The attempt is raced, not awaited past the timeout (`awaitingAtMost`): PostgresNIO's
    /// connect was seen not to end when cancelled, against a server restarting under load. A
    /// connection that arrives after the timeout is closed.
    private func connect(id: Int) async throws -> PostgresConnection {
        let (configuration, logger) = (configuration, logger)
        let target = "\(configuration.host ?? "?"):\(configuration.port ?? 0)"
        return try await awaitingAtMost(Self.connectTimeout,
                                        expired: { ProjectionStoreError.unavailable("connecting to \(target) timed out") },
                                        late: Self.close) {
            try await PostgresConnection.connect(configuration: configuration, id: id, logger: logger)
        }
    }

    static let connectTimeout: Duration = .seconds(10)

    /// Closes the idle connections. Called when nothing uses the store any more (at shutdown),
    /// so none is leased.
    func close() async {
        let closing = idle
        idle.removeAll()
        open -= closing.count
        for connection in closing { try? await connection.close() }
    }

    /// Returns a leased connection: kept for reuse when `reusable` and still open, else closed.
    func release(_ connection: PostgresConnection, reusable: Bool) {
        if reusable && !connection.isClosed {
            idle.append(connection)
        } else {
            open -= 1
            Self.close(connection)
        }
        resumeOneWaiter()
    }

    /// Closes without waiting; the connection is kept until it is closed (PostgresNIO insists).
    static func close(_ connection: PostgresConnection) {
        connection.close().whenComplete { _ in withExtendedLifetime(connection) {} }
    }

    private func resumeOneWaiter() {
        if !waiters.isEmpty { waiters.removeFirst().resume() }
    }
}
