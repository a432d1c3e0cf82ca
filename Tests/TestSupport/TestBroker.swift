import Foundation

/// A private Tansu broker for one test (a free loopback port, a fresh state directory),
/// started and stopped through the project's own `scripts/broker`. Memory storage by
/// default; a durable broker keeps its log on disk, so it can be stopped and started again
/// with the log intact (`stopKeepingLog()`, `startAgain()`). Tests must `stop()` it (in
/// teardown or a `defer`); stopping ends exactly the processes the script recorded and
/// removes the state directory.
public final class TestBroker: Sendable {
    /// What went wrong when the broker script failed.
    public struct ScriptError: Error, CustomStringConvertible {
        public var description: String
    }

    private let servers: String
    private let port: Int
    private let durable: Bool
    private let stateDirectory: URL

    /// `127.0.0.1:PORT` of the running broker.
    public var bootstrapServers: String { servers }

    private init(bootstrapServers: String, port: Int, durable: Bool, stateDirectory: URL) {
        servers = bootstrapServers
        self.port = port
        self.durable = durable
        self.stateDirectory = stateDirectory
    }

    /// The checkout this file belongs to (…/Tests/TestSupport/TestBroker.swift).
    public static var repositoryRoot: URL {
        URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent()
            .deletingLastPathComponent()
            .deletingLastPathComponent()
    }

    /// A loopback TCP port nothing listens on right now, below the kernel's range of ephemeral
    /// ports (`ip_local_port_range`). A port the kernel picks for port 0 comes from that range,
    /// which outgoing connections draw their source ports from too: with several test jobs
    /// connecting to their brokers, one took a service's port between this check and the
    /// service's bind ("Address already in use").
    public static func freePort() -> Int {
        let range = (try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8))
            .flatMap { $0.split(whereSeparator: \.isWhitespace).first.flatMap { Int($0) } } ?? 32768
        let ports = 10_000..<max(10_001, min(range, 65_536))
        for _ in 0..<1_000 {
            let port = Int.random(in: ports)
            if canBind(port) { return port }
        }
        preconditionFailure("no free loopback port in \(ports)")
    }

    private static func canBind(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        precondition(fd >= 0, "socket() failed")
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }

    /// Starts a broker (`durable`: its log on disk, see `scripts/broker --durable`); retries on
    /// another port if the chosen one was taken meanwhile.
    public static func start(durable: Bool = false) async throws -> TestBroker {
        var lastError: ScriptError?
        for _ in 0..<3 {
            let stateDirectory = FileManager.default.temporaryDirectory
                .appendingPathComponent("pushline-test-broker-\(UUID().uuidString)")
            let port = freePort()
            let output = try await script(["start", "--port", String(port), "--state-dir", stateDirectory.path]
                                          + (durable ? ["--durable"] : []))
            if output.status == 0 {
                let servers = output.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)
                return TestBroker(bootstrapServers: servers, port: port, durable: durable, stateDirectory: stateDirectory)
            }
            _ = try? await script(["stop", "--state-dir", stateDirectory.path])
            try? FileManager.default.removeItem(at: stateDirectory)
            lastError = ScriptError(description: "scripts/broker start failed (\(output.status)): \(output.standardError)")
        }
        throw lastError!
    }

    /// Stops the broker's processes (by their recorded PIDs) and keeps the state directory,
    /// so that `startAgain()` brings back the same log. Durable brokers only: a memory broker
    /// would come back empty.
    /// Runs `body` with a broker of its own, stopped afterwards, also when `body` throws.
    public static func with<T>(durable: Bool = false, _ body: (TestBroker) async throws -> T) async throws -> T {
        let broker = try await start(durable: durable)
        do {
            let value = try await body(broker)
            try await broker.stop()
            return value
        } catch {
            try? await broker.stop()
            throw error
        }
    }

    public func stopKeepingLog() async throws {
        precondition(durable, "only a durable broker keeps its log across a restart")
        let output = try await Self.script(["stop", "--state-dir", stateDirectory.path])
        guard output.status == 0 else {
            throw ScriptError(description: "scripts/broker stop failed (\(output.status)): \(output.standardError)")
        }
    }

    /// Between `stopKeepingLog()` and `startAgain()`: counts one more offset at the end of
    /// `partition` of `topic` without storing a record for it, as the durable broker leaves a
    /// partition when it stops between raising the partition's end and writing the batch (its
    /// produce does them in that order). Consumers then see an end one past the last record.
    public func leaveGapAtEnd(topic: String, partition: Int) throws {
        precondition(durable, "only a durable broker keeps its log across a restart")
        let file = stateDirectory.appendingPathComponent(
            "bucket/tansu/clusters/tansu_cluster/topics/\(topic)/partitions/\(String(format: "%010d", partition))/watermark.json")
        let data = try Data(contentsOf: file)
        guard var watermark = try JSONSerialization.jsonObject(with: data) as? [String: Any], let high = watermark["high"] as? Int else {
            throw ScriptError(description: "unexpected watermark \(file.path): \(String(decoding: data, as: UTF8.self))")
        }
        watermark["high"] = high + 1
        try JSONSerialization.data(withJSONObject: watermark).write(to: file)
    }

    /// Starts the broker again on the same port and state directory after `stopKeepingLog()`.
    /// Clients keep their bootstrap address; the port is retried for a while in case the old
    /// listener's socket is not released yet.
    public func startAgain(timeout: Duration = .seconds(20)) async throws {
        precondition(durable, "only a durable broker keeps its log across a restart")
        let deadline = ContinuousClock.now + timeout
        while true {
            let output = try await Self.script(["start", "--port", String(port), "--state-dir", stateDirectory.path, "--durable"])
            if output.status == 0 { return }
            guard ContinuousClock.now < deadline else {
                throw ScriptError(description: "scripts/broker start (again) failed (\(output.status)): \(output.standardError)")
            }
            try await Task.sleep(for: .milliseconds(200))
        }
    }

    public func stop() async throws {
        let output = try await Self.script(["stop", "--state-dir", stateDirectory.path])
        try? FileManager.default.removeItem(at: stateDirectory)
        guard output.status == 0 else {
            throw ScriptError(description: "scripts/broker stop failed (\(output.status)): \(output.standardError)")
        }
    }

    /// Runs kcat against this broker (`-b` is added) and returns its standard output;
    /// throws if kcat fails.
    public func kcat(_ arguments: [String]) async throws -> String {
        let output = try await ProcessRunner.run("kcat", ["-b", servers] + arguments)
        guard output.status == 0 else {
            throw ScriptError(description: "kcat \(arguments) failed (\(output.status)): \(output.standardError)")
        }
        return output.standardOutput
    }

    private static func script(_ arguments: [String]) async throws -> ProcessOutput {
        try await ProcessRunner.run(repositoryRoot.appendingPathComponent("scripts/broker").path, arguments)
    }
}
