import Foundation
import Synchronization

/// Threads of the module's own — librdkafka's pollers — and the bridge from them to Swift
/// concurrency, so that no blocking call runs on the cooperative pool (two threads on the
/// target machine). Blocking one-off calls use `BlockingPool`.
enum DedicatedThread {
    /// Starts a long-lived thread, e.g. a poller loop.
    static func start(name: String, _ body: @escaping @Sendable () -> Void) {
        let thread = Thread(block: body)
        thread.name = name
        thread.start()
    }

    /// Waits on the calling thread for an async operation run as a `Task`. Only for
    /// threads this module owns (the poller threads): blocking them is harmless, while
    /// blocking a cooperative thread could deadlock the pool.
    static func awaitTask<T: Sendable>(_ operation: @escaping @Sendable () async throws -> T) throws -> T {
        let done = DispatchSemaphore(value: 0)
        let result = Mutex<Result<T, any Error>?>(nil)
        Task {
            let outcome: Result<T, any Error>
            do { outcome = .success(try await operation()) } catch { outcome = .failure(error) }
            result.withLock { $0 = outcome }
            done.signal()
        }
        done.wait()
        return try result.withLock { $0! }.get()
    }
}
