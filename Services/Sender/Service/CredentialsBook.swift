import Contracts
import Foundation
import Synchronization

/// The apps' push credentials as the sender uses them: read from the projection store (where the
/// processor put them, before the sends whose records the sender reads), reused for a short
/// while, and the apps whose credentials a provider refused — paused until they change
/// (docs/ARCHITECTURE.md#delivery).
public final class CredentialsBook: Sendable {
    /// Reads one app's credentials (the store's `app(id)`); nil: no credentials.
    public typealias Source = @Sendable (UUID) async throws -> PushCredentials?

    private struct Cached: Sendable {
        var credentials: PushCredentials?
        var readAt: ContinuousClock.Instant
    }

    private struct Pause: Sendable {
        var version: String
        var reason: String
    }

    private let source: Source
    private let maxAge: Duration
    private let cache = RefreshingCache<UUID, Cached>()
    private let pauses = Mutex<[PauseKey: Pause]>([:])

    private struct PauseKey: Hashable {
        var app: UUID
        var provider: PushProvider
    }

    public init(maxAge: Duration, source: @escaping Source) {
        self.maxAge = maxAge
        self.source = source
    }

    /// The app's credentials, at most `maxAge` old: read once for all the pushes that want
    /// them while they are read.
    public func credentials(of app: UUID) async throws -> PushCredentials? {
        let now = ContinuousClock.now
        return try await cache.value(for: app, fresh: { now - $0.readAt < self.maxAge }) { [source] in
            Cached(credentials: try await source(app), readAt: now)
        }.credentials
    }

    /// Pauses `app`'s sending through `provider` while its credentials stay at `version`.
    /// Returns true when this starts the pause.
    @discardableResult
    public func pause(_ app: UUID, _ provider: PushProvider, version: String, reason: String) -> Bool {
        pauses.withLock { pauses in
            let id = PauseKey(app: app, provider: provider)
            if pauses[id]?.version == version { return false }
            pauses[id] = Pause(version: version, reason: reason)
            return true
        }
    }

    /// The reason `app`'s sending through `provider` is paused with its credentials at
    /// `version`; nil when it is not. A pause of other credentials ends here: they were replaced.
    /// Returns also whether this call ended a pause.
    public func pauseReason(_ app: UUID, _ provider: PushProvider, version: String?) -> (reason: String?, ended: Bool) {
        pauses.withLock { pauses in
            let id = PauseKey(app: app, provider: provider)
            guard let pause = pauses[id] else { return (nil, false) }
            if pause.version == version { return (pause.reason, false) }
            pauses[id] = nil
            return (nil, true)
        }
    }

    /// Apps and providers paused now.
    public var pausedCount: Int { pauses.withLock { $0.count } }
}
