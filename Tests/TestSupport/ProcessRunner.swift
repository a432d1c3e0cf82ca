import Foundation

/// The outcome of a finished program run.
public struct ProcessOutput: Sendable {
    public var status: Int32
    public var standardOutput: String
    public var standardError: String
}

/// Runs helper programs (the broker script, kcat) from async tests without blocking
/// Swift's cooperative pool.
///
/// Uses `posix_spawn` and `waitpid` rather than Foundation's `Process`: on Linux,
/// `Process` learns of a child's exit through a descriptor the child inherits, so a
/// script that leaves a daemon behind (the broker script starts Tansu in the background)
/// never counts as finished. Output goes to temporary files rather than pipes, so a
/// chatty program can never stall on a full pipe.
public enum ProcessRunner {
    /// The program could not be started at all (not found, not executable).
    public struct SpawnError: Error, CustomStringConvertible {
        public var description: String
    }

    /// Runs the program to its end; `environment` is added to this process's environment.
    public static func run(_ executable: String, _ arguments: [String], environment: [String: String] = [:]) async throws -> ProcessOutput {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("pushline-process-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let outPath = directory.appendingPathComponent("stdout").path
        let errPath = directory.appendingPathComponent("stderr").path

        let pid = try spawn(executable, arguments, environment: environment, standardOutput: outPath, standardError: errPath, append: false)
        let status = await waitForExit(pid)
        return ProcessOutput(
            status: status,
            standardOutput: (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? "",
            standardError: (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? ""
        )
    }

    /// Starts a program with a clean signal mask, its output going to files (appended or
    /// truncated), and `environment` added to this process's environment.
    public static func spawn(
        _ executable: String,
        _ arguments: [String],
        environment: [String: String] = [:],
        standardOutput: String,
        standardError: String,
        append: Bool
    ) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        let mode = O_WRONLY | O_CREAT | (append ? O_APPEND : O_TRUNC)
        posix_spawn_file_actions_addopen(&actions, 1, standardOutput, mode, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, standardError, mode, 0o644)
        // Nothing else of this process reaches the child: without this, a server started by a
        // script (PostgreSQL, the broker) kept copies of the test process's client sockets,
        // seen holding a connection to a server it had just replaced.
        _ = spawnFileActionsAddCloseFrom(&actions, 3)

        // The calling thread is a pool thread whose signal mask blocks most signals; a
        // child inherits that mask, and a broker that cannot receive SIGTERM only dies
        // by the stop script's SIGKILL five seconds later. Start children with a clean
        // mask and default signal handlers.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        var allSignals = sigset_t()
        sigfillset(&allSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        posix_spawnattr_setsigdefault(&attributes, &allSignals)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var merged = ProcessInfo.processInfo.environment
        for (key, value) in environment { merged[key] = value }
        let envp = merged.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { envp.forEach { free($0) } }
        var pid: pid_t = 0
        // posix_spawnp searches PATH, so "kcat" works as well as an absolute path.
        let result = posix_spawnp(&pid, executable, &actions, &attributes, argv, envp)
        guard result == 0 else {
            throw SpawnError(description: "cannot start \(executable): \(String(cString: strerror(result)))")
        }
        return pid
    }

    /// Waits for the child on a thread of its own, so no cooperative thread blocks.
    public static func waitForExit(_ pid: pid_t) async -> Int32 {
        await withCheckedContinuation { continuation in
            Thread {
                var status: Int32 = 0
                while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
                // WIFEXITED / WEXITSTATUS, which Swift does not import as macros.
                let exited = status & 0x7f == 0
                continuation.resume(returning: exited ? (status >> 8) & 0xff : 128 + (status & 0x7f))
            }.start()
        }
    }
}

/// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later), which its Swift module
/// does not export: a spawned child closes every descriptor from `from` on.
@_silgen_name("posix_spawn_file_actions_addclosefrom_np")
private func spawnFileActionsAddCloseFrom(_ actions: UnsafeMutablePointer<posix_spawn_file_actions_t>, _ from: Int32) -> Int32
