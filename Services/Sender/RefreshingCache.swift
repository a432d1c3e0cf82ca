import Synchronization

/// Values per key (provider tokens, access tokens, apps' credentials), reused while they are
/// fresh and made by one task at a time per key, however many callers wait for it. Reading a
/// fresh value takes a lock, not a hop to an actor: it happens for every push.
final class RefreshingCache<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private struct State {
        var values: [Key: Value] = [:]
        var making: [Key: Task<Value, any Error>] = [:]
        var made = 0
    }

    private let state = Mutex(State())

    /// Values made so far.
    var made: Int { state.withLock { $0.made } }

    /// The value of `key` if `fresh` accepts it, else the one `make` is making or makes now.
    /// A value `make` fails to make is not kept: the next call tries again.
    func value(for key: Key, fresh: (Value) -> Bool, make: @escaping @Sendable () async throws -> Value) async throws -> Value {
        let (cached, task) = state.withLock { state -> (Value?, Task<Value, any Error>?) in
            if let value = state.values[key], fresh(value) { return (value, nil) }
            if let running = state.making[key] { return (nil, running) }
            let task = Task(operation: make)
            state.making[key] = task
            return (nil, task)
        }
        if let cached { return cached }
        guard let task else { preconditionFailure("either a value or a task") }
        let result = await task.result
        state.withLock { state in
            // The first of the waiters keeps the value.
            guard state.making[key] == task else { return }
            state.making[key] = nil
            if case .success(let value) = result {
                state.values[key] = value
                state.made += 1
            }
        }
        return try result.get()
    }

    func invalidate(_ key: Key) {
        state.withLock { _ = $0.values.removeValue(forKey: key) }
    }
}
