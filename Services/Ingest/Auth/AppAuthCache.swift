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

/// A small per-process cache of what the store said about apps and tokens, so that neither the
/// hot send path nor a flood of refused tokens reads the projection store on every request.
///
/// It holds two tables, each entry for at most the TTL (`PUSHLINE_AUTH_CACHE_MS`, default 1 s)
/// after the store read that made it began:
/// - **apps**: each app's `AppCredentials`. A fresh entry is the whole truth about the app's
///   tokens, both ways: a token it admits is admitted, and one it does not is refused without a
///   store read.
/// - **refusals**: what was refused, so that a refusal costs no store read after the first per
///   app (an app the store does not have) or per (app, token hash) (whether the token is a live
///   token of another app: the Bearer routes' 401/403 choice).
///
/// Why a fresh entry may refuse: every change that grants access — an app created, a token
/// issued — is answered by the admin API one cache lifetime after it was applied
/// (`AdminChangeApplied`), and nobody knows a new token, or can use a new app, before that
/// answer. An entry read before the change was applied has expired by then on every instance, so
/// a token works everywhere as soon as its create answers. Revocations wait the same lifetime, so
/// a revoked token is refused everywhere once its revocation answers; before that, an instance
/// accepts it for at most the TTL after its entry was read (on top of the processor's lag). A TTL
/// of 0 disables the cache: every request reads the store.
///
/// Thread-safe (a `Mutex`) and bounded: at most `maxApps` apps and `maxRefusals` refusals. Only
/// apps the store has enter the apps table, so made-up app ids cannot push real apps out. Past a
/// table's bound, its expired entries are dropped, and if every entry is still fresh that table
/// alone is emptied (it refills on demand): a flood of more distinct refusals per TTL than the
/// bound costs store reads again, never memory, and never the real apps' entries.
final class AppAuthCache: Sendable {
    static let maxApps = 10_000
    static let maxRefusals = 100_000

    /// What the cache says of a token presented for an app.
    enum Verdict {
        /// A live token of the app, with these scopes (nil: legacy, every scope).
        case admitted(AppRow, scopes: [ApiTokenScope]?)
        /// Not a live token of the app (or no such app).
        case refused
    }

    private struct AppEntry {
        var credentials: AppCredentials
        /// When the store read that produced the entry began (the entry is at least that fresh).
        var readAt: ContinuousClock.Instant
    }

    /// A refusal: of every token of an app the store does not have (`tokenHash` nil), or of one
    /// token of an app.
    private struct RefusalKey: Hashable {
        var appId: UUID
        var tokenHash: String?
    }

    private struct RefusalEntry {
        /// For a token: whether it is a live token of another app; nil when not asked yet.
        var ownedByAnotherApp: Bool?
        var readAt: ContinuousClock.Instant
    }

    private struct Tables {
        var apps: [UUID: AppEntry] = [:]
        var refusals: [RefusalKey: RefusalEntry] = [:]
    }

    let ttl: Duration
    let maxApps: Int
    let maxRefusals: Int
    private let tables = Mutex(Tables())

    init(ttl: Duration, maxApps: Int = AppAuthCache.maxApps, maxRefusals: Int = AppAuthCache.maxRefusals) {
        self.ttl = ttl
        self.maxApps = maxApps
        self.maxRefusals = maxRefusals
    }

    var isEnabled: Bool { ttl > .zero }

    /// The verdict of fresh entries on `tokenHash` presented for `appId`, nil when the store must
    /// be read.
    func verdict(_ appId: UUID, tokenHash: String, now: ContinuousClock.Instant = .now) -> Verdict? {
        guard isEnabled else { return nil }
        return tables.withLock { tables in
            if let entry = tables.apps[appId] {
                if now - entry.readAt < ttl {
                    return entry.credentials.admits(tokenHash).map { .admitted(entry.credentials.app, scopes: $0.scopes) } ?? .refused
                }
                tables.apps[appId] = nil
            }
            let missing = RefusalKey(appId: appId, tokenHash: nil)
            if let entry = tables.refusals[missing] {
                if now - entry.readAt < ttl { return .refused }
                tables.refusals[missing] = nil
            }
            return nil
        }
    }

    /// The credentials of `appId` when an entry younger than the TTL exists.
    func credentials(for appId: UUID, now: ContinuousClock.Instant = .now) -> AppCredentials? {
        guard isEnabled else { return nil }
        return tables.withLock { tables in
            guard let entry = tables.apps[appId], now - entry.readAt < ttl else { return nil }
            return entry.credentials
        }
    }

    /// Whether `tokenHash`, refused for `appId`, is a live token of another app, when a fresh
    /// refusal says so; nil when the store must be asked.
    func ownedByAnotherApp(_ appId: UUID, tokenHash: String, now: ContinuousClock.Instant = .now) -> Bool? {
        guard isEnabled else { return nil }
        return tables.withLock { tables in
            let key = RefusalKey(appId: appId, tokenHash: tokenHash)
            guard let entry = tables.refusals[key] else { return nil }
            guard now - entry.readAt < ttl else {
                tables.refusals[key] = nil
                return nil
            }
            return entry.ownedByAnotherApp
        }
    }

    /// Remembers credentials read from the store by a read that began at `readAt`.
    func remember(_ credentials: AppCredentials, readAt: ContinuousClock.Instant) {
        guard isEnabled else { return }
        tables.withLock { tables in
            let appId = credentials.app.appId
            if tables.apps.count >= maxApps, tables.apps[appId] == nil {
                let now = ContinuousClock.now
                tables.apps = tables.apps.filter { now - $0.value.readAt < ttl }
                if tables.apps.count >= maxApps { tables.apps.removeAll() }
            }
            tables.apps[appId] = AppEntry(credentials: credentials, readAt: readAt)
            tables.refusals[RefusalKey(appId: appId, tokenHash: nil)] = nil
        }
    }

    /// Remembers that the store had no app `appId` in a read that began at `readAt`.
    func rememberMissing(_ appId: UUID, readAt: ContinuousClock.Instant) {
        storeRefusal(RefusalEntry(ownedByAnotherApp: nil, readAt: readAt), for: RefusalKey(appId: appId, tokenHash: nil))
    }

    /// Remembers whether `tokenHash`, refused for `appId`, is a live token of another app, as a
    /// read that began at `readAt` found.
    func rememberRefusal(_ appId: UUID, tokenHash: String, ownedByAnotherApp: Bool, readAt: ContinuousClock.Instant) {
        storeRefusal(RefusalEntry(ownedByAnotherApp: ownedByAnotherApp, readAt: readAt),
                     for: RefusalKey(appId: appId, tokenHash: tokenHash))
    }

    private func storeRefusal(_ entry: RefusalEntry, for key: RefusalKey) {
        guard isEnabled else { return }
        tables.withLock { tables in
            if tables.refusals.count >= maxRefusals, tables.refusals[key] == nil {
                let now = ContinuousClock.now
                tables.refusals = tables.refusals.filter { now - $0.value.readAt < ttl }
                if tables.refusals.count >= maxRefusals { tables.refusals.removeAll() }
            }
            tables.refusals[key] = entry
        }
    }

    /// The number of apps held (for tests).
    var appCount: Int { tables.withLock { $0.apps.count } }
    /// The number of refusals held (for tests).
    var refusalCount: Int { tables.withLock { $0.refusals.count } }
}
