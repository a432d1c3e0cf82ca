import Foundation

/// When to try again: exponential back-off with full jitter (`base × 2^(attempt−1)`, capped,
/// a uniform draw below it), never sooner than the provider's `Retry-After`.
public struct RetryPolicy: Sendable, Equatable {
    public var base: TimeInterval
    public var cap: TimeInterval

    public init(base: TimeInterval = 1, cap: TimeInterval = 300) {
        self.base = base
        self.cap = cap
    }

    /// The wait before attempt `attempt + 1`, after `attempt` (≥ 1) failed attempts.
    public func delay(afterAttempt attempt: Int, retryAfter: TimeInterval?,
                      using random: inout some RandomNumberGenerator) -> TimeInterval {
        let ceiling = min(cap, base * pow(2, Double(max(0, attempt - 1))))
        let jittered = Double.random(in: 0...ceiling, using: &random)
        guard let retryAfter else { return jittered }
        // Honoured, plus a little spread so that throttled senders do not return together.
        return retryAfter + Double.random(in: 0...(max(retryAfter, base) * 0.1), using: &random)
    }
}
