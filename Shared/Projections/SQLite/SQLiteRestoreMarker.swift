import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The file beside a SQLite store that says a restore is writing the store without a journal
/// (docs/ARCHITECTURE.md#changelog-and-restore). Until that restore has finished — indexes built,
/// the WAL back on, the store file synced — a crash or a stop can leave the file incomplete or
/// damaged, so nothing may use a store whose marker is there. The restoring process holds an
/// exclusive `flock` on the marker for as long as it writes, so that a running restore can be
/// told from one that stopped (the kernel drops the lock when the process ends, however it ends).
final class SQLiteRestoreMarker: Sendable {
    let path: String
    private let descriptor: Int32

    enum State {
        case absent
        /// A process restores into the store now.
        case held
        /// A restore stopped before it finished: the store must be written again from the start.
        case left
    }

    static func path(for store: String) -> String { store + "-restoring" }

    static func state(for store: String) -> State {
        let descriptor = open(path(for: store), O_RDWR | O_CLOEXEC)
        guard descriptor >= 0 else { return errno == ENOENT ? .absent : .held }
        defer { close(descriptor) }
        return flock(descriptor, LOCK_EX | LOCK_NB) == 0 ? .left : .held
    }

    /// Creates the marker of `store` and takes its lock; it is on disk (the file and its directory
    /// synced) before this returns, so that no write without a journal precedes it.
    init(for store: String) throws {
        path = Self.path(for: store)
        descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw Self.failure("cannot create", path) }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            close(descriptor)
            throw ProjectionStoreError.database("\(store) is being restored by another process")
        }
        guard fsync(descriptor) == 0, Self.syncDirectory(of: path) else {
            close(descriptor)
            throw Self.failure("cannot sync", path)
        }
    }

    deinit {
        // Closing drops the lock; the marker stays unless `remove` ran.
        close(descriptor)
    }

    /// Removes the marker (the store file must be synced first) and makes the removal durable.
    func remove() throws {
        guard unlink(path) == 0, Self.syncDirectory(of: path) else { throw Self.failure("cannot remove", path) }
    }

    /// Deletes an unfinished restore's store (its file, WAL and shared memory) and then its marker.
    static func discard(_ store: String) throws {
        for file in [store, store + "-wal", store + "-shm", path(for: store)] where unlink(file) != 0 && errno != ENOENT {
            throw failure("cannot delete", file)
        }
        guard syncDirectory(of: store) else { throw failure("cannot sync the directory of", store) }
    }

    private static func syncDirectory(of file: String) -> Bool {
        let directory = open(URL(fileURLWithPath: file).deletingLastPathComponent().path, O_RDONLY | O_CLOEXEC)
        guard directory >= 0 else { return false }
        defer { close(directory) }
        return fsync(directory) == 0
    }

    private static func failure(_ what: String, _ file: String) -> ProjectionStoreError {
        .database("\(what) \(file): \(String(cString: strerror(errno)))")
    }
}
