import Foundation
import Synchronization

/// A dedicated thread that repeats one blocking step until stopped. Used for the
/// producer's delivery-report polling, so that work never occupies Swift's cooperative
/// pool.
final class PollerThread: Sendable {
    private let running = Atomic<Bool>(true)
    private let finished = DispatchSemaphore(value: 0)

    /// Starts the thread at once; `step` must return within a bounded time.
    init(name: String, step: @escaping @Sendable () -> Void) {
        DedicatedThread.start(name: name) { [self] in
            while running.load(ordering: .acquiring) {
                step()
            }
            finished.signal()
        }
    }

    /// Asks the thread to stop and waits until its current step returned. Blocking;
    /// idempotent only in the sense that a second call must not be made.
    func stop() {
        running.store(false, ordering: .releasing)
        finished.wait()
    }
}
