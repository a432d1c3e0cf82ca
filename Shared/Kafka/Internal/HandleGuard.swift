import Foundation
import Synchronization

/// Lets any number of threads use a librdkafka handle while one of them may destroy it:
/// `close()` bars new users and then waits for the current ones to leave, so the handle
/// is never destroyed under a running call. Two atomic operations per use keep it cheap
/// enough for the producer's hot path.
final class HandleGuard: Sendable {
    private static let closedBit = 1 << 62
    /// Users currently inside, plus `closedBit` once closing started.
    private let state = Atomic<Int>(0)

    /// Runs `body` unless closing has started; returns nil in that case.
    func withHandle<T>(_ body: () throws -> T) rethrows -> T? {
        let entered = state.add(1, ordering: .sequentiallyConsistent).newValue
        defer { state.subtract(1, ordering: .sequentiallyConsistent) }
        guard entered & Self.closedBit == 0 else { return nil }
        return try body()
    }

    var isClosed: Bool {
        state.load(ordering: .sequentiallyConsistent) & Self.closedBit != 0
    }

    /// Bars new users and waits until the current ones have left. Returns false if
    /// another caller closed first. Blocks: call it off Swift's cooperative pool.
    func close() -> Bool {
        let before = state.bitwiseOr(Self.closedBit, ordering: .sequentiallyConsistent).oldValue
        guard before & Self.closedBit == 0 else { return false }
        // Users are inside short, non-blocking librdkafka calls or a bounded one
        // (flush, metadata), so a short sleep loop is enough.
        while state.load(ordering: .sequentiallyConsistent) & ~Self.closedBit != 0 {
            usleep(200)
        }
        return true
    }
}
