import Synchronization

/// A counted resource that tasks wait for in arrival order: slots for provider requests and
/// for records read. A waiting task that is cancelled stops waiting, without a slot.
final class Slots: Sendable {
    private struct State {
        var free: Int
        /// In arrival order from `head`; a cancelled wait leaves a hole.
        var waiters: [(id: UInt64, continuation: CheckedContinuation<Bool, Never>)?] = []
        var head = 0
        var nextId: UInt64 = 0
        /// Waits begun whose continuation is not stored yet, and those of them already cancelled.
        var starting: Set<UInt64> = []
        var cancelled: Set<UInt64> = []

        mutating func compact() {
            if head == waiters.count {
                waiters.removeAll(keepingCapacity: true)
                head = 0
            } else if head > 1_024, head * 2 > waiters.count {
                waiters.removeFirst(head)
                head = 0
            }
        }
    }

    private let state: Mutex<State>
    private let count: Int

    init(_ count: Int) {
        self.count = count
        state = Mutex(State(free: count))
    }

    /// Whether no slot is taken.
    var allFree: Bool { state.withLock { $0.free == count } }

    /// Takes a slot, waiting for one; false when the task was cancelled first (no slot taken).
    func acquire() async -> Bool {
        let id: UInt64? = state.withLock { state in
            if state.free > 0 {
                state.free -= 1
                return nil
            }
            state.nextId += 1
            state.starting.insert(state.nextId)
            return state.nextId
        }
        guard let id else { return true }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let now: Bool? = state.withLock { state in
                    state.starting.remove(id)
                    if state.cancelled.remove(id) != nil { return false }
                    if state.free > 0 {
                        state.free -= 1
                        return true
                    }
                    state.waiters.append((id, continuation))
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Bool, Never>? in
                if state.starting.contains(id) {
                    state.cancelled.insert(id)
                    return nil
                }
                guard let index = state.waiters[state.head...].firstIndex(where: { $0?.id == id }) else { return nil }
                defer { state.waiters[index] = nil }
                return state.waiters[index]?.continuation
            }
            waiter?.resume(returning: false)
        }
    }

    func release() {
        let waiter = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            while state.head < state.waiters.count {
                let next = state.waiters[state.head]
                state.head += 1
                if let next {
                    state.compact()
                    return next.continuation
                }
            }
            state.compact()
            state.free += 1
            return nil
        }
        waiter?.resume(returning: true)
    }
}
