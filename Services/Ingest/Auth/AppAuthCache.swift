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
///   store read, however many distinct tokens are tried.
/// - **missing apps**: app ids the store does not have, so that a made-up app id costs one store
///   read per TTL.
///
/// Requests that miss the cache for one app at the same moment share one store read
/// (`read(_:using:)`): when an entry expires under load, the app is read once, not once per
/// request in flight.
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
/// Thread-safe (a `Mutex`) and bounded: at most `maxApps` apps and `maxRefusals` missing apps. Only
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

    private struct Tables {
        var apps: [UUID: AppEntry] = [:]
        /// Apps the store did not have, by when the read that found so began.
        var refusals: [UUID: ContinuousClock.Instant] = [:]
    }

    /// What one store read of an app found.
    enum AppRead: Sendable {
        case found(AppCredentials)
        case missing
    }

    let ttl: Duration
    let maxApps: Int
    let maxRefusals: Int
    private let tables = Mutex(Tables())
    /// The store reads in flight, by app.
    private let reads = Mutex([UUID: Task<AppRead, any Error>]())

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
            if let readAt = tables.refusals[appId] {
                if now - readAt < ttl { return .refused }
                tables.refusals[appId] = nil
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
            tables.refusals[appId] = nil
        }
    }

    /// Remembers that the store had no app `appId` in a read that began at `readAt`.
    func rememberMissing(_ appId: UUID, readAt: ContinuousClock.Instant) {
        guard isEnabled else { return }
        tables.withLock { tables in
            if tables.refusals.count >= maxRefusals, tables.refusals[appId] == nil {
                let now = ContinuousClock.now
                tables.refusals = tables.refusals.filter { now - $0.value < ttl }
                if tables.refusals.count >= maxRefusals { tables.refusals.removeAll() }
            }
            tables.refusals[appId] = readAt
        }
    }

    /// The outcome of `read` for `appId`, which remembers what it found. Callers that ask while
    /// a read of the app is in flight wait for that read instead of starting one. With the cache
    /// disabled every caller reads on its own (a read begun before the call might miss a change
    /// the caller must see).
    func read(_ appId: UUID, using read: @escaping @Sendable () async throws -> AppRead) async throws -> AppRead {
        guard isEnabled else { return try await read() }
        let (task, started) = reads.withLock { reads -> (Task<AppRead, any Error>, Bool) in
            if let task = reads[appId] { return (task, false) }
            let task = Task { try await read() }
            reads[appId] = task
            return (task, true)
        }
        defer { if started { reads.withLock { _ = $0.removeValue(forKey: appId) } } }
        return try await task.value
    }

    /// The number of apps held (for tests).
    var appCount: Int { tables.withLock { $0.apps.count } }
    /// The number of refusals held (for tests).
    var refusalCount: Int { tables.withLock { $0.refusals.count } }
}
