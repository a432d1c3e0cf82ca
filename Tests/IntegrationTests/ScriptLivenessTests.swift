import Foundation
import TestSupport
import XCTest

/// `make run` (scripts/run) and scripts/broker start again what is not running, by the PIDs they
/// recorded. A process that was killed or crashed is a zombie until its parent reaps it — PID 1
/// once the script that started it has exited, which a container's init may do late or never —
/// and a zombie answers `kill -0`: it must count as not running, or the restart skips it
/// (scripts/bench-chaos found the processor and the broker left down that way for seconds).
final class ScriptLivenessTests: XCTestCase {
    func testAZombieOfARecordedPIDCountsAsNotRunning() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pushline-liveness-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let broker = TestBroker.repositoryRoot.appendingPathComponent("scripts/broker").path
        let pidFile = directory.appendingPathComponent("tansu.pid")
        try "1\n".write(to: directory.appendingPathComponent("port"), atomically: true, encoding: .utf8)

        // A child that exited and that this process does not reap yet: a zombie.
        let log = directory.appendingPathComponent("true.log").path
        let zombie = try ProcessRunner.spawn("/bin/true", [], standardOutput: log, standardError: log, append: false)
        var state = ""
        for _ in 0..<100 {
            state = (try? String(contentsOfFile: "/proc/\(zombie)/stat", encoding: .utf8))
                .map { String($0.split(separator: ")").last?.split(separator: " ").first ?? "") } ?? ""
            if state == "Z" { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        XCTAssertEqual(state, "Z", "the child is a zombie")
        XCTAssertEqual(kill(zombie, 0), 0, "a zombie answers kill -0")

        try "\(zombie)\n".write(to: pidFile, atomically: true, encoding: .utf8)
        let dead = try await ProcessRunner.run(broker, ["status", "--state-dir", directory.path])
        XCTAssertEqual(dead.status, 1, dead.standardOutput + dead.standardError)
        XCTAssertEqual(dead.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines), "stopped")
        _ = await ProcessRunner.waitForExit(zombie)

        // A process that runs (this one) still counts as running.
        try "\(getpid())\n".write(to: pidFile, atomically: true, encoding: .utf8)
        let alive = try await ProcessRunner.run(broker, ["status", "--state-dir", directory.path])
        XCTAssertEqual(alive.status, 0, alive.standardOutput + alive.standardError)
        XCTAssertTrue(alive.standardOutput.hasPrefix("running"), alive.standardOutput)

        // scripts/run decides with the same test.
        let run = try String(contentsOf: TestBroker.repositoryRoot.appendingPathComponent("scripts/run"), encoding: .utf8)
        let brokerScript = try String(contentsOfFile: broker, encoding: .utf8)
        let running = brokerScript.split(separator: "\n").first { $0.hasPrefix("running() ") }
        XCTAssertNotNil(running)
        XCTAssertTrue(run.split(separator: "\n").contains { $0 == running! }, "scripts/run's running() is scripts/broker's")
        XCTAssertTrue(run.contains(#"alive() { [ -f "$1" ] && running "$(cat "$1")"; }"#))
    }
}
