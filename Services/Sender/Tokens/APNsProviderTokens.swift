import Foundation
import JWTKit

/// APNs provider tokens (docs/ARCHITECTURE.md#delivery): one ES256 JWT per signing key, reused
/// until it is `refreshAfter` old. Apple refuses a token older than an hour
/// (`ExpiredProviderToken`) and one refreshed more often than every 20 minutes
/// (`TooManyProviderTokenUpdates`), so the default, 50 minutes, sits between the two.
public final class APNsProviderTokens: Sendable {
    private struct Entry: Sendable {
        var jwt: String
        var issuedAt: Date
    }

    private let cache = RefreshingCache<String, Entry>()
    public let refreshAfter: TimeInterval
    /// How many tokens were signed: the tests check reuse by it.
    public var signed: Int { cache.made }

    public init(refreshAfter: TimeInterval = 50 * 60) {
        precondition(refreshAfter >= 20 * 60 && refreshAfter < 60 * 60, "APNs wants a token 20 to 60 minutes old")
        self.refreshAfter = refreshAfter
    }

    /// The token to send with `key` at `now`: the one in use while it is younger than
    /// `refreshAfter`, else a new one issued at `now`. Concurrent first pushes of a key wait for
    /// one signing (Apple throttles a key renewed too often).
    public func token(for key: APNsSigningKey, now: Date = Date()) async throws -> String {
        try await cache.value(for: key.id, fresh: { now.timeIntervalSince($0.issuedAt) < self.refreshAfter && $0.issuedAt <= now }) {
            let claims = APNsClaims(iss: key.teamId, iat: Int(now.timeIntervalSince1970))
            let keys = JWTKeyCollection()
            await keys.add(ecdsa: key.key, kid: JWKIdentifier(string: key.keyId))
            return Entry(jwt: try await keys.sign(claims, kid: JWKIdentifier(string: key.keyId)), issuedAt: now)
        }.jwt
    }

    /// Forgets the key's token: APNs refused it (`ExpiredProviderToken`), so the next send signs anew.
    public func invalidate(_ key: APNsSigningKey) {
        cache.invalidate(key.id)
    }
}

/// The claims Apple reads: the team and the issue time in whole seconds.
struct APNsClaims: JWTPayload {
    var iss: String
    var iat: Int

    func verify(using algorithm: some JWTAlgorithm) async throws {}
}
