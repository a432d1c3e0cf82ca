import Foundation
import Logging
import PostgresNIO

/// A PostgreSQL server for tests, started and stopped through the project's own
/// `scripts/postgres` (a fresh state directory, a free loopback port, trust auth).
///
/// `shared()` is the one server of a test process: started on first use, stopped by its
/// recorded PID when the process exits. Tests give each store a database of its own
/// (`createDatabase`). `start()` makes a private server for a test that restarts or stops
/// it; that test must `stop()` it. When the PostgreSQL binaries are missing, starting
/// fails with the script's message (run scripts/setup) and so does the test.
public final class PostgresServer: Sendable {
    public struct ScriptError: Error, CustomStringConvertible {
        public var description: String
    }

    public let port: Int
    public let stateDirectory: URL

    /// The server's `postgres` database, as a store URL.
    public var url: String { url(database: "postgres") }

    public func url(database: String) -> String { "postgres://postgres@127.0.0.1:\(port)/\(database)" }

    private init(port: Int, stateDirectory: URL) {
        self.port = port
        self.stateDirectory = stateDirectory
    }

    // MARK: - Starting and stopping

    private static let sharedServer = Task<PostgresServer, any Error> {
        let server = try await start()
        SharedStop.register(server.stateDirectory.path)
        return server
    }

    /// The server shared by every test of this process.
    public static func shared() async throws -> PostgresServer {
        try await sharedServer.value
    }

    /// Starts a server of its own; retries on another port if the chosen one was taken meanwhile.
    public static func start() async throws -> PostgresServer {
        var lastError: ScriptError?
        for _ in 0..<3 {
            let stateDirectory = FileManager.default.temporaryDirectory
                .appendingPathComponent("pushline-test-postgres-\(UUID().uuidString)")
            let port = TestBroker.freePort()
            let output = try await script(["start", "--port", String(port), "--state-dir", stateDirectory.path])
            if output.status == 0 {
                return PostgresServer(port: port, stateDirectory: stateDirectory)
            }
            _ = try? await script(["stop", "--state-dir", stateDirectory.path])
            try? FileManager.default.removeItem(at: stateDirectory)
            lastError = ScriptError(description: "scripts/postgres start failed (\(output.status)): \(output.standardError)")
        }
        throw lastError!
    }

    /// Stops the server (fast shutdown) and starts it again on the same data and port.
    public func restart() async throws {
        try await Self.checked(["restart", "--state-dir", stateDirectory.path])
    }

    /// Stops the server, keeping its data (`resume()` starts it again).
    public func pause() async throws {
        try await Self.checked(["stop", "--state-dir", stateDirectory.path])
    }

    /// Starts a paused server again on the same data and port.
    public func resume() async throws {
        try await Self.checked(["start", "--port", String(port), "--state-dir", stateDirectory.path])
    }

    /// Stops the server and removes its data.
    public func stop() async throws {
        defer { try? FileManager.default.removeItem(at: stateDirectory) }
        try await Self.checked(["stop", "--state-dir", stateDirectory.path])
    }

    // MARK: - SQL

    /// Creates a database named `name` and returns its store URL.
    @discardableResult
    public func createDatabase(_ name: String) async throws -> String {
        try await execute("CREATE DATABASE \"\(name)\"")
        return url(database: name)
    }

    /// Drops the database, ending any sessions still connected to it.
    public func dropDatabase(_ name: String) async throws {
        try await execute("DROP DATABASE IF EXISTS \"\(name)\" WITH (FORCE)")
    }

    /// Runs statements (one per call) in `database`.
    public func execute(_ sql: String, database: String = "postgres") async throws {
        try await withConnection(database: database) { connection in
            for try await _ in try await connection.query(PostgresQuery(unsafeSQL: sql), logger: Self.logger) {}
        }
    }

    /// The first column of every row of a query in `database`, as text (`NULL`: nil).
    public func strings(_ sql: String, database: String = "postgres") async throws -> [String?] {
        try await withConnection(database: database) { connection in
            var values: [String?] = []
            for try await row in try await connection.query(PostgresQuery(unsafeSQL: sql), logger: Self.logger) {
                values.append(try row.decode(String?.self))
            }
            return values
        }
    }

    private func withConnection<T: Sendable>(database: String, _ body: (PostgresConnection) async throws -> T) async throws -> T {
        let configuration = PostgresConnection.Configuration(host: "127.0.0.1", port: port, username: "postgres", password: nil,
                                                             database: database, tls: .disable)
        let connection = try await PostgresConnection.connect(configuration: configuration, id: 0, logger: Self.logger)
        // Closed without waiting for the close, kept alive until it is done (PostgresNIO insists).
        defer { connection.close().whenComplete { _ in withExtendedLifetime(connection) {} } }
        return try await body(connection)
    }

    private static let logger = Logger(label: "postgres-test-server")

    // MARK: - The script

    private static var scriptPath: String { TestBroker.repositoryRoot.appendingPathComponent("scripts/postgres").path }

    private static func script(_ arguments: [String]) async throws -> ProcessOutput {
        try await ProcessRunner.run(scriptPath, arguments)
    }

    private static func checked(_ arguments: [String]) async throws {
        let output = try await script(arguments)
        guard output.status == 0 else {
            throw ScriptError(description: "scripts/postgres \(arguments.first ?? "") failed (\(output.status)): \(output.standardError)")
        }
    }

    /// Stops the shared server when the test process exits, through the script (which ends
    /// exactly the PID it recorded), and removes its data.
    private enum SharedStop {
        /// Written once, before the hook can run.
        nonisolated(unsafe) private static var stateDirectory: String?

        static func register(_ path: String) {
            stateDirectory = path
            atexit {
                guard let path = SharedStop.stateDirectory else { return }
                if let pid = try? ProcessRunner.spawn(PostgresServer.scriptPath, ["stop", "--state-dir", path],
                                                      standardOutput: "/dev/null", standardError: "/dev/null", append: true) {
                    var status: Int32 = 0
                    while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
                }
                try? FileManager.default.removeItem(atPath: path)
            }
        }
    }
}
