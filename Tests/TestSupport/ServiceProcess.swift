import AsyncHTTPClient
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A Pushline executable run as a real child process by an integration test, so that tests
/// can kill it (SIGKILL, SIGTERM) and start it again, exactly as an operator would.
/// Started through `ProcessRunner.spawn` (clean signal mask, so SIGTERM reaches it).
public final class ServiceProcess: Sendable {
    public let name: String
    public let environment: [String: String]
    public let logURL: URL
    /// The running child, and the task that reaps it and tells its exit status.
    private let current = Mutex<(pid: pid_t, exit: Task<Int32, Never>)?>(nil)

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

    public var pid: pid_t? { current.withLock { $0?.pid } }

    public func start() throws {
        let path = Self.binDirectory.appendingPathComponent(name).path
        let pid = try ProcessRunner.spawn(path, [], environment: environment, standardOutput: logURL.path,
                                          standardError: logURL.path, append: true)
        let exit = Task { await ProcessRunner.waitForExit(pid) }
        current.withLock { $0 = (pid, exit) }
    }

    /// True while the child runs (started and not exited, not a zombie).
    public var isRunning: Bool {
        guard let pid else { return false }
        // The reaper has not collected it yet: signal 0 tells whether it still exists.
        return kill(pid, 0) == 0 && !isZombie(pid)
    }

    private func isZombie(_ pid: pid_t) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return true }
        return stat.split(separator: ")").last?.split(separator: " ").first == "Z"
    }

    /// Waits until `GET url` answers 200, failing early if the process exits.
    public func waitHealthy(_ url: String, timeout: Duration = .seconds(60)) async throws {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            guard isRunning else { throw TestFailure("\(name) exited before becoming healthy; log:\n\(tail())") }
            if let response = try? await HTTPClient.shared.execute(HTTPClientRequest(url: url), timeout: .seconds(2)),
               response.status == .ok {
                return
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw TestFailure("\(name) not healthy at \(url) within \(timeout); log:\n\(tail())")
    }

    /// Sends `signal` and waits for the process to exit; returns its exit status.
    @discardableResult
    public func stop(signal: Int32 = SIGTERM, timeout: Duration = .seconds(30)) async throws -> Int32? {
        guard let (pid, exit) = current.withLock({ $0 }) else { return nil }
        kill(pid, signal)
        let timer = Task {
            try await Task.sleep(for: timeout)
            kill(pid, SIGKILL)
        }
        let status = await exit.value
        timer.cancel()
        current.withLock { $0 = nil }
        if (try? await timer.value) != nil { throw TestFailure("\(name) did not exit within \(timeout) after signal \(signal)") }
        return status
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
