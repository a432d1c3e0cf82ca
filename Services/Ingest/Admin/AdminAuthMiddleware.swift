import Contracts
import Foundation
import Hummingbird
import Projections
import Synchronization
import WireCodec

/// Guards the admin API (docs/API.md#admin-tokens): `Authorization: Bearer <token>` where the
/// token is the bootstrap token (`PUSHLINE_ADMIN_TOKEN`; empty: no bootstrap token) or a live
/// named admin token (looked up by its hash in the projection store, through `AdminTokenCache`).
/// Anything else is a 401 problem. The caller becomes the request's `adminActor`, which every
/// admin command records.
///
/// Only SHA-256 digests are compared, in constant time: a digest has one length whatever was
/// presented, so neither the time taken nor an early return tells anything of the bootstrap
/// token, its length included. Failed attempts are limited per client address
/// (`failures`): once a source has spent its allowance, its admin requests are answered 429
/// without looking at the token, so that guessing costs time.
struct AdminAuthMiddleware: RouterMiddleware {
    typealias Context = IngestRequestContext

    /// SHA-256 of the bootstrap token; nil when there is none.
    let bootstrapDigest: String?
    let store: any ProjectionReader
    let cache: AdminTokenCache
    /// Failed admin authentications per client address.
    let failures: TokenBuckets<SourceAddress>
    /// Whose `X-Forwarded-For` names the client (`PUSHLINE_TRUSTED_PROXIES`).
    let trustedProxies: TrustedProxies

    /// The failures a source may make at once, and how fast it earns more: 10 in a row, then
    /// one every 6 seconds.
    static let failureLimit = (burst: 10, perSecond: 1.0 / 6)

    init(adminToken: String, store: any ProjectionReader, cache: AdminTokenCache, trustedProxies: TrustedProxies = .none) {
        self.trustedProxies = trustedProxies
        bootstrapDigest = adminToken.isEmpty ? nil : ApiTokens.hash(adminToken)
        self.store = store
        self.cache = cache
        failures = TokenBuckets(perSecond: Self.failureLimit.perSecond, burst: Self.failureLimit.burst, name: "admin-authentication")
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let source = trustedProxies.source(of: request, context: context)
        if let retryAfterSeconds = failures.waitBeforeNext(source) {
            throw IngestError.rateLimited(Problem(error: "too many failed admin authentications from this address", field: "Authorization",
                                                  code: .rateLimitedAdminAuthentication),
                                          retryAfterSeconds: retryAfterSeconds, policy: failures.policy)
        }
        guard let presented = Self.bearerToken(request.headers[.authorization]) else { throw refusal(source) }
        let digest = ApiTokens.hash(presented)
        let actor: AdminActor
        if let bootstrapDigest, ApiTokens.constantTimeEquals(digest, bootstrapDigest) {
            actor = .bootstrap
        } else if let named = try await namedToken(digest, context: context) {
            actor = AdminActor(id: named.adminTokenId, name: named.name)
        } else {
            throw refusal(source)
        }
        var context = context
        context.adminActor = actor
        context.adminCredentialDigest = digest
        context.logger[metadataKey: "admin_actor"] = .string(actor.id?.lowercasedString ?? actor.name)
        return try await next(request, context)
    }

    /// The live named admin token of this hash. A cached entry only ever admits: a hash it does
    /// not hold is looked up in the store, so a token issued a moment ago works at once.
    private func namedToken(_ hash: String, context: Context) async throws -> AdminTokenRow? {
        if let cached = cache.token(hash: hash) { return cached }
        let readAt = ContinuousClock.now
        guard let row = try await readStore(context, { try await store.adminToken(hash: hash) }),
              !row.revoked, ApiTokens.constantTimeEquals(row.tokenHash, hash)
        else { return nil }
        cache.remember(row, readAt: readAt)
        return row
    }

    /// The 401 of a failed attempt, which spends one of `source`'s allowance.
    private func refusal(_ source: SourceAddress) -> IngestError {
        _ = failures.acquire(source)
        return .rejected(.unauthorized, Problem(error: "a valid admin bearer token is required", field: "Authorization", code: .adminTokenInvalid))
    }

    /// The token of a `Bearer` authorization (scheme case-insensitive, RFC 9110).
    static func bearerToken(_ header: String?) -> String? {
        guard let header else { return nil }
        let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        let token = parts[1].trimmingCharacters(in: .whitespaces)
        return token.isEmpty ? nil : token
    }
}

/// Live named admin tokens by hash, kept for `PUSHLINE_AUTH_CACHE_MS` after they were read, as
/// `AppAuthCache` keeps app tokens: a revoked admin token may be admitted by an instance for at
/// most that long after its last read, which is why a revocation is answered that much later
/// (`AdminChangeApplied`). Only live tokens are kept: the cache never refuses on its own word.
/// A TTL of 0 disables it. Bounded: past `maxEntries` it is emptied (it refills on demand).
final class AdminTokenCache: Sendable {
    static let maxEntries = 1_000

    private struct Entry {
        var row: AdminTokenRow
        var readAt: ContinuousClock.Instant
    }

    let ttl: Duration
    private let entries = Mutex<[String: Entry]>([:])

    init(ttl: Duration) {
        self.ttl = ttl
    }

    func token(hash: String, now: ContinuousClock.Instant = .now) -> AdminTokenRow? {
        guard ttl > .zero else { return nil }
        return entries.withLock { entries in
            // Keyed by hash: a lookup compares SHA-256 digests of what was presented, which tell
            // nothing of a stored token; the store lookup's match is checked in constant time.
            guard let entry = entries[hash] else { return nil }
            guard now - entry.readAt < ttl else {
                entries[hash] = nil
                return nil
            }
            return entry.row
        }
    }

    func remember(_ row: AdminTokenRow, readAt: ContinuousClock.Instant) {
        guard ttl > .zero else { return }
        entries.withLock { entries in
            if entries.count >= Self.maxEntries { entries.removeAll() }
            entries[row.tokenHash] = Entry(row: row, readAt: readAt)
        }
    }
}
