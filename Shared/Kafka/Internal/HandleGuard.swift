import Dispatch
import Synchronization

/// Lets any number of threads use a librdkafka handle while one of them may destroy it:
/// `close()` bars new users and then waits for the current ones to leave, so the handle
/// is never destroyed under a running call. Two atomic operations per use keep it cheap
/// enough for the producer's hot path.
final class HandleGuard: Sendable {
    private static let closedBit = 1 << 62
    /// Users currently inside, plus `closedBit` once closing started.
    private let state = Atomic<Int>(0)
    /// Signalled by the user whose leaving empties a closed guard.
    private let emptied = DispatchSemaphore(value: 0)

    /// Runs `body` unless closing has started; returns nil in that case.
    func withHandle<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T? {
        let entered = state.add(1, ordering: .sequentiallyConsistent).newValue
        defer {
            if state.subtract(1, ordering: .sequentiallyConsistent).newValue == Self.closedBit {
                emptied.signal()
            }
        }
        guard entered & Self.closedBit == 0 else { return nil }
        return try body()
    }

    var isClosed: Bool {
        state.load(ordering: .sequentiallyConsistent) & Self.closedBit != 0
    }

    /// Bars new users and waits until the current ones have left. Returns false if
    /// another caller closed first. Blocks: call it off Swift's cooperative pool.
    ///
    /// Once the guard is closed and empty, no user is inside a body again (later ones only
    /// pass through), so the first signal is the one to wait for; later ones are never awaited.
    func close() -> Bool {
        let before = state.bitwiseOr(Self.closedBit, ordering: .sequentiallyConsistent).oldValue
        guard before & Self.closedBit == 0 else { return false }
        if before != 0 {
            emptied.wait()
        }
        return true
    }
}
