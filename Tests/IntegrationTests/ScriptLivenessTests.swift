import Foundation
import TestSupport
import XCTest

/// `make run` (scripts/run), scripts/broker and the other scripts that start and stop by recorded
/// PID (through scripts/pids.sh) start again what is not running, and stop it. A process that was
/// killed or crashed is a zombie until its parent reaps it — PID 1 once the script that started
/// it has exited, which a container's init may do late or never — and a zombie answers `kill -0`:
/// it must count as not running, or the restart skips it (scripts/bench-chaos found the
/// processor and the broker left down that way for seconds).
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
        // The helpers every such script uses: stopping a zombie ends at once, and it is not alive.
        let pids = TestBroker.repositoryRoot.appendingPathComponent("scripts/pids.sh").path
        let helpers = try await ProcessRunner.run("/bin/bash", ["-c", ". \"$0\"; stop_pid \(zombie) 600 && ! pid_alive \"$1\" && echo stopped",
                                                                pids, pidFile.path])
        XCTAssertEqual(helpers.status, 0, helpers.standardOutput + helpers.standardError)
        XCTAssertEqual(helpers.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines), "stopped")
        _ = await ProcessRunner.waitForExit(zombie)

        // A process that runs (this one) still counts as running.
        try "\(getpid())\n".write(to: pidFile, atomically: true, encoding: .utf8)
        let alive = try await ProcessRunner.run(broker, ["status", "--state-dir", directory.path])
        XCTAssertEqual(alive.status, 0, alive.standardOutput + alive.standardError)
        XCTAssertTrue(alive.standardOutput.hasPrefix("running"), alive.standardOutput)

        // Every script that starts or stops by recorded PID decides with these helpers.
        for name in ["run", "stop", "broker", "postgres", "push-mocks"] {
            let script = try String(contentsOf: TestBroker.repositoryRoot.appendingPathComponent("scripts/\(name)"), encoding: .utf8)
            let lines = script.split(separator: "\n")
            XCTAssertTrue(lines.contains { $0.hasPrefix(". ") && $0.hasSuffix("pids.sh") || $0.hasSuffix("pids.sh\"") }, "scripts/\(name) sources scripts/pids.sh")
            XCTAssertFalse(lines.contains { $0.hasPrefix("running()") || $0.hasPrefix("pid_alive()") }, "scripts/\(name) has a liveness test of its own")
            XCTAssertFalse(script.contains("kill -0"), "scripts/\(name) asks kill -0 alone, which a zombie answers")
        }
    }
}
