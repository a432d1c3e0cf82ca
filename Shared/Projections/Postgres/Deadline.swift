import ProjectionChangelog
import Projections
import Synchronization

/// Runs `work` as a task of its own and returns what it returns or throws, unless `limit`
/// passes first: then the error `expired()` makes is thrown at once, without waiting for
/// `work`. PostgresNIO calls do not always end when cancelled, nor when their connection is
/// closed, so a child task (which its parent must wait for) would hold the caller with it. A
/// value `work` returns after the limit is handed to `late`.
func awaitingAtMost<T: Sendable>(
    _ limit: Duration,
    expired: @escaping @Sendable () -> any Error,
    late: @escaping @Sendable (T) -> Void = { _ in },
    _ work: @escaping @Sendable () async throws -> T
) async throws -> T {
    let decision = FirstOutcome()
    return try await withCheckedThrowingContinuation { continuation in
        let timer = Task {
            try await Task.sleep(for: limit)
            guard decision.claim() else { return }
            continuation.resume(throwing: expired())
        }
        Task {
            let outcome: Result<T, any Error>
            do { outcome = .success(try await work()) } catch { outcome = .failure(error) }
            timer.cancel()
            if decision.claim() {
                continuation.resume(with: outcome)
            } else if case .success(let value) = outcome {
                late(value)
            }
        }
    }
}

/// Decides which of two racing outcomes is the one: only the first `claim()` returns true.
private final class FirstOutcome: Sendable {
    private let claimed = Atomic<Bool>(false)

    func claim() -> Bool {
        claimed.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
    }
}
