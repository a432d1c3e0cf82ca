import Contracts
import Foundation
import Projections
import Synchronization

/// What the Bearer routes need to know about an app: its row and its live (non-revoked) API
/// tokens (hash and scopes), as read from the projection store.
struct AppCredentials: Sendable {
    var app: AppRow
    var liveTokens: [LiveToken]

    /// A live token: its hash and its scopes (nil: legacy, every scope).
    struct LiveToken: Sendable {
        var hash: String
        var scopes: [ApiTokenScope]?
    }

    init(app: AppRow, liveTokens: [LiveToken]) {
        self.app = app
        self.liveTokens = liveTokens
    }

    /// The live tokens of `tokens` (revoked ones left out).
    init(app: AppRow, tokens: [ApiTokenRow]) {
        self.init(app: app, liveTokens: tokens.filter { !$0.revoked }.map { LiveToken(hash: $0.tokenHash, scopes: $0.scopes) })
    }

    /// The live token whose hash is `tokenHash`, nil when none is. Compares with every one of
    /// them, not stopping at a match, so the time taken does not tell which one (or how many)
    /// matched.
    func admits(_ tokenHash: String) -> LiveToken? {
        var matched: LiveToken?
        for token in liveTokens where ApiTokens.constantTimeEquals(tokenHash, token.hash) {
            matched = token
        }
        return matched
    }
}

/// A small per-process cache of each app's `AppCredentials`, so that the hot send path does not
/// read the projection store (two queries) on every request.
///
/// The trade-off is the TTL (`PUSHLINE_AUTH_CACHE_MS`, default 1 s): a token revoked through
/// the admin API is still accepted by this process for at most the TTL after it was last read
/// (on top of the processor's projection lag), while the store is read at most once per app
/// per TTL. A TTL of 0 disables the cache: every request reads the store and a revocation takes
/// effect as soon as it is projected. A token that is not in a cached entry is never refused on
/// the cache's word alone (see `AppAuthMiddleware`), so a newly issued token works at once.
///
/// Thread-safe (a `Mutex`) and bounded: past `maxEntries` apps, expired entries are dropped,
/// and if every entry is still fresh the whole cache is emptied (it refills on demand).
final class AppAuthCache: Sendable {
    static let maxEntries = 10_000

    private struct Entry {
        /// Nil: the store had no such app.
        var credentials: AppCredentials?
        /// When the store read that produced the entry began (the entry is at least that fresh).
        var readAt: ContinuousClock.Instant
    }

    /// What the cache knows of an app.
    enum Lookup {
        case known(AppCredentials)
        /// The store had no such app when last read.
        case missing
    }

    let ttl: Duration
    private let entries = Mutex<[UUID: Entry]>([:])

    init(ttl: Duration) {
        self.ttl = ttl
    }

    var isEnabled: Bool { ttl > .zero }

    /// The credentials of `appId` when an entry younger than the TTL exists.
    func credentials(for appId: UUID, now: ContinuousClock.Instant = .now) -> AppCredentials? {
        if case .known(let credentials) = lookup(appId, now: now) { return credentials }
        return nil
    }

    /// What an entry younger than the TTL says of `appId`, nil without one.
    func lookup(_ appId: UUID, now: ContinuousClock.Instant = .now) -> Lookup? {
        guard isEnabled else { return nil }
        return entries.withLock { entries in
            guard let entry = entries[appId] else { return nil }
            guard now - entry.readAt < ttl else {
                entries[appId] = nil
                return nil
            }
            return entry.credentials.map(Lookup.known) ?? .missing
        }
    }

    /// Remembers that the store had no app `appId` in a read that began at `readAt`.
    func rememberMissing(_ appId: UUID, readAt: ContinuousClock.Instant) {
        store(Entry(credentials: nil, readAt: readAt), for: appId)
    }

    /// Remembers credentials read from the store by a read that began at `readAt`.
    func remember(_ credentials: AppCredentials, readAt: ContinuousClock.Instant) {
        store(Entry(credentials: credentials, readAt: readAt), for: credentials.app.appId)
    }

    private func store(_ entry: Entry, for appId: UUID) {
        guard isEnabled else { return }
        entries.withLock { entries in
            if entries.count >= Self.maxEntries, entries[appId] == nil {
                let now = ContinuousClock.now
                entries = entries.filter { now - $0.value.readAt < ttl }
                if entries.count >= Self.maxEntries { entries.removeAll() }
            }
            entries[appId] = entry
        }
    }

    /// The number of entries held (for tests).
    var count: Int { entries.withLock { $0.count } }
}
