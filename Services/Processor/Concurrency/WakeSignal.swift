import Synchronization

/// A wake-up call that a task waits for with a deadline, instead of checking a flag in a sleep
/// loop. `signal()` resumes the waiting task at once; a signal given while no task waits is kept
/// (one at most) for the next `wait`.
public final class WakeSignal: Sendable {
    private struct State {
        var pending = false
        var waiters: [UInt64: CheckedContinuation<Bool, Never>] = [:]
        /// Waits begun and not resumed yet.
        var live: Set<UInt64> = []
        /// Live waits cancelled before their continuation was stored.
        var cancelled: Set<UInt64> = []
        var nextId: UInt64 = 0
    }

    private let state = Mutex(State())

    public init() {}

    /// Wakes every waiting task, or the next `wait` when none waits.
    public func signal() {
        let waiters = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            guard !state.waiters.isEmpty else {
                state.pending = true
                return []
            }
            defer {
                state.live.subtract(state.waiters.keys)
                state.waiters.removeAll()
            }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume(returning: true) }
    }

    /// Returns true when signalled (now or before), false when `timeout` passed first or the
    /// task was cancelled.
    public func wait(timeout: Duration) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask { await self.waitForSignal() }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
    }

    private func waitForSignal() async -> Bool {
        let id = state.withLock { state in
            state.nextId += 1
            state.live.insert(state.nextId)
            return state.nextId
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let now: Bool? = state.withLock { state in
                    if state.cancelled.remove(id) != nil {
                        state.live.remove(id)
                        return false
                    }
                    if state.pending {
                        state.pending = false
                        state.live.remove(id)
                        return true
                    }
                    state.waiters[id] = continuation
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Bool, Never>? in
                if let waiter = state.waiters.removeValue(forKey: id) {
                    state.live.remove(id)
                    return waiter
                }
                // Not stored yet: the wait sees this when it stores it. (Already resumed: nothing to do.)
                if state.live.contains(id) { state.cancelled.insert(id) }
                return nil
            }
            waiter?.resume(returning: false)
        }
    }
}
