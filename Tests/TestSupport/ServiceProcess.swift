import AsyncHTTPClient
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A Pushline executable run as a real child process by an integration test, so that tests
/// can kill it (SIGKILL, SIGTERM) and start it again, exactly as an operator would.
public final class ServiceProcess: @unchecked Sendable {
    public let name: String
    public let environment: [String: String]
    public let logURL: URL
    private var process: Process?
    private let lock = NSLock()

    /// Where the built executables are: `PUSHLINE_BIN_DIR` (set by scripts/test), else `.build/debug`.
    public static var binDirectory: URL {
        if let dir = ProcessInfo.processInfo.environment["PUSHLINE_BIN_DIR"], !dir.isEmpty {
            return URL(fileURLWithPath: dir)
        }
        return TestBroker.repositoryRoot.appendingPathComponent(".build/debug")
    }

    public init(name: String, environment: [String: String], logDirectory: URL) {
        self.name = name
        self.environment = environment
        self.logURL = logDirectory.appendingPathComponent("\(name).log")
    }

    public var pid: Int32? { lock.withLock { process?.processIdentifier } }

    public func start() throws {
        let p = Process()
        p.executableURL = Self.binDirectory.appendingPathComponent(name)
        var env = ProcessInfo.processInfo.environment
        for (k, v) in environment { env[k] = v }
        p.environment = env
        if !FileManager.default.fileExists(atPath: logURL.path) {
            FileManager.default.createFile(atPath: logURL.path, contents: nil)
        }
        let handle = try FileHandle(forWritingTo: logURL)
        handle.seekToEndOfFile()
        p.standardOutput = handle
        p.standardError = handle
        try p.run()
        lock.withLock { process = p }
    }

    /// Waits until `GET url` answers 200, failing early if the process exits.
    public func waitHealthy(_ url: String, timeout: Duration = .seconds(60)) async throws {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            guard let p = lock.withLock({ process }), p.isRunning else {
                throw TestFailure("\(name) exited before becoming healthy; log:\n\(tail())")
            }
            if let response = try? await HTTPClient.shared.execute(HTTPClientRequest(url: url), timeout: .seconds(2)),
               response.status == .ok {
                return
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw TestFailure("\(name) not healthy at \(url) within \(timeout); log:\n\(tail())")
    }

    /// Sends `signal` and waits for the process to exit.
    public func stop(signal: Int32 = SIGTERM, timeout: Duration = .seconds(30)) async throws {
        guard let p = lock.withLock({ process }) else { return }
        if p.isRunning { kill(p.processIdentifier, signal) }
        let deadline = ContinuousClock.now + timeout
        while p.isRunning {
            if ContinuousClock.now > deadline {
                kill(p.processIdentifier, SIGKILL)
                throw TestFailure("\(name) did not exit within \(timeout) after signal \(signal)")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        lock.withLock { process = nil }
    }

    public func tail(lines: Int = 40) -> String {
        let text = (try? String(contentsOf: logURL, encoding: .utf8)) ?? ""
        return text.split(separator: "\n", omittingEmptySubsequences: false).suffix(lines).joined(separator: "\n")
    }
}

/// A plain test failure with a message (for helpers outside XCTest assertions).
public struct TestFailure: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
