import Contracts
import Synchronization

/// The limit of one scope (per app, per source address): a token bucket that holds at most
/// `burst` tokens and gains `perSecond` of them each second; a request takes one.
/// `perSecond == 0` turns the limit off.
public struct RateLimit: Sendable, Equatable {
    public var perSecond: Int
    public var burst: Int

    public init(perSecond: Int, burst: Int) {
        self.perSecond = perSecond
        self.burst = burst
    }

    public var isEnabled: Bool { perSecond > 0 }
}

/// One token bucket per key (an app id, a source address), in memory, per process: a flood
/// under one key empties only that key's bucket, so other keys are never starved by it.
///
/// Buckets refill by the time elapsed on a monotonic clock since they were last touched (no
/// timer). Thread-safe (one `Mutex`) and bounded: when a new key would take the table past
/// `maxKeys`, the buckets that are full again are dropped (forgetting them changes nothing: a
/// new bucket starts full); if every bucket is still in use the table is emptied, which hands
/// each key one fresh burst — the price of a bound on memory under that many active keys.
final class TokenBuckets<Key: Hashable & Sendable>: Sendable {
    enum Decision: Equatable {
        /// Taken; the bucket has `remaining` whole tokens left and is full again in
        /// `fullInSeconds` whole seconds.
        case allowed(remaining: Int, fullInSeconds: Int)
        /// Refused; one token will be back in this many whole seconds (at least 1).
        case refused(retryAfterSeconds: Int)
    }

    private struct Bucket {
        var tokens: Double
        var updatedAt: ContinuousClock.Instant
    }

    static var defaultMaxKeys: Int { 100_000 }

    let perSecond: Double
    let burst: Double
    let maxKeys: Int
    /// The limit as the `RateLimit-Policy` and `RateLimit` fields name it.
    let policy: RateLimitPolicy
    private let buckets = Mutex<[Key: Bucket]>([:])

    convenience init(_ limit: RateLimit, name: String, maxKeys: Int = defaultMaxKeys) {
        self.init(perSecond: Double(limit.perSecond), burst: limit.burst, name: name, maxKeys: maxKeys)
    }

    /// `name`: the policy's name in the `RateLimit` fields (`source`, `app`, `admin-authentication`).
    init(perSecond: Double, burst: Int, name: String, maxKeys: Int = defaultMaxKeys) {
        precondition(perSecond > 0 && burst >= 1 && maxKeys >= 1)
        self.perSecond = perSecond
        self.burst = Double(burst)
        self.maxKeys = maxKeys
        policy = RateLimitPolicy(name: name, perSecond: perSecond, burst: Double(burst))
    }

    /// Takes `cost` tokens (at most the burst) from `key`'s bucket when it has them.
    func acquire(_ key: Key, cost: Int = 1, now: ContinuousClock.Instant = .now) -> Decision {
        let needed = min(Double(max(cost, 1)), burst)
        return buckets.withLock { buckets -> Decision in
            if buckets.count >= maxKeys, buckets[key] == nil {
                buckets = buckets.filter { refilled($0.value, now: now).tokens < burst }
                if buckets.count >= maxKeys { buckets.removeAll(keepingCapacity: true) }
            }
            var bucket = buckets[key].map { refilled($0, now: now) } ?? Bucket(tokens: burst, updatedAt: now)
            defer { buckets[key] = bucket }
            guard bucket.tokens >= needed else {
                let seconds = ((needed - bucket.tokens) / perSecond).rounded(.up)
                return .refused(retryAfterSeconds: max(1, Int(seconds)))
            }
            bucket.tokens -= needed
            return .allowed(remaining: Int(bucket.tokens), fullInSeconds: Int(((burst - bucket.tokens) / perSecond).rounded(.up)))
        }
    }

    /// Nil when `key`'s bucket has a token, else the whole seconds (at least 1) until it has
    /// one; takes nothing.
    func waitBeforeNext(_ key: Key, now: ContinuousClock.Instant = .now) -> Int? {
        buckets.withLock { buckets in
            guard let bucket = buckets[key].map({ refilled($0, now: now) }), bucket.tokens < 1 else { return nil }
            return max(1, Int(((1 - bucket.tokens) / perSecond).rounded(.up)))
        }
    }

    /// The number of buckets held (for tests).
    var count: Int { buckets.withLock { $0.count } }

    private func refilled(_ bucket: Bucket, now: ContinuousClock.Instant) -> Bucket {
        guard now > bucket.updatedAt else { return bucket }
        let seconds = (now - bucket.updatedAt).inSeconds
        return Bucket(tokens: min(burst, bucket.tokens + seconds * perSecond), updatedAt: now)
    }
}
