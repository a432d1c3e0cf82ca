import Dispatch

/// Where slow blocking librdkafka calls run (flush, metadata, admin requests, close): Dispatch's
/// threads, reused from call to call, never Swift's cooperative pool (two threads on the target
/// machine).
enum BlockingPool {
    private static let queue = DispatchQueue(label: "pushline.kafka.blocking", attributes: .concurrent)

    /// Runs a blocking `body` on the pool and resumes the caller when it returns. For rare, slow
    /// calls, not for per-record work.
    static func run<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            queue.async {
                continuation.resume(returning: body())
            }
        }
    }
}
