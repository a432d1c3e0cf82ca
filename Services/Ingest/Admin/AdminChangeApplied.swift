import Contracts
import Foundation
import Kafka
import Projections

/// Makes an admin change's 2xx mean that it is applied (docs/API.md#admin-changes-are-applied-when-answered):
/// after the broker has the change's command, the admin route waits until the projection store's
/// offset of that command's partition has passed it, so that every route of every ingest instance
/// (they all read that store) sees the change. App tables are small and admin changes rare, so the
/// wait — about one pass of the processor — is spent where it is cheap, and the routes that run
/// per request (authentication, the registration gate) need no knowledge of the log.
///
/// Caches are the one place where an instance could still answer from before the change. The app
/// auth cache (`AppAuthCache`) decides from a fresh entry both ways, so an entry read before the
/// change could hide a new app or token as well as a revocation; `AdminTokenCache` (named admin
/// tokens) could hide a revocation; and the cached app row decides whether user assertions are
/// required and with which identity secret. So every change of who may authenticate — an app
/// created, an API token issued, a token revoked, user assertions required, a new identity
/// secret — is answered one cache lifetime (`PUSHLINE_AUTH_CACHE_MS`) after it was applied
/// (`changesAccess`): by then no instance holds an entry from before it. A new token is known to
/// nobody before that answer (it is in it), so no request can have been refused for it by an entry
/// that outlives the answer.
struct AdminChangeApplied: Sendable {
    let store: any ProjectionReader
    /// 0: answer once published (`PUSHLINE_ADMIN_APPLY_TIMEOUT_MS`).
    let timeout: Duration
    let authCacheTTL: Duration
    /// How often the store is asked while waiting.
    static let pollInterval = Duration.milliseconds(10)

    /// Returns once every record at `positions`, commands about `app` (nil: about no app), is
    /// applied (and, when `changesAccess`, cached auth entries from before it have expired);
    /// throws `IngestError.notApplied` past the timeout, naming what was written.
    ///
    /// While a send read in pages holds the app (`HeldLane`), the partition's offset moves past
    /// its commands before they are applied: the app's rows say how far they are.
    func wait(for positions: [KafkaDeliveryReport], app: UUID?, changesAccess: Bool = false,
              written: @autoclosure () -> String, check: @autoclosure () -> String = "GET the app to see when") async throws {
        guard timeout > .zero, !positions.isEmpty else { return }
        let deadline = ContinuousClock.now + timeout
        let topics = Array(Set(positions.map(\.topic))).sorted()
        while true {
            // A store that cannot be read now may answer at the next poll; the deadline bounds both.
            if let stored = try? await store.offsets(topics: topics),
               let held = app == nil ? [] : try? await store.heldLanes(topics: topics).filter({ $0.held.app == app }),
               positions.allSatisfy({ position in
                   let lane = PartitionKey(topic: position.topic, partition: position.partition)
                   return (stored[lane] ?? 0) > position.offset && !held.contains { $0.lane == lane && $0.next <= position.offset }
               }) {
                break
            }
            guard ContinuousClock.now + Self.pollInterval < deadline else {
                throw IngestError.notApplied("\(written()) is in the log, but no processor applied it within "
                    + "\(timeout.inMilliseconds) ms (PUSHLINE_ADMIN_APPLY_TIMEOUT_MS): it takes effect once a processor applies it; "
                    + check())
            }
            try await Task.sleep(for: Self.pollInterval)
        }
        if changesAccess { try await waitCacheLifetime() }
    }

    /// Waits one auth cache lifetime: the answer to a keyed create found applied (a retry), which
    /// may have been applied a moment ago, waits it as the first answer would have.
    func waitCacheLifetime() async throws {
        guard timeout > .zero, authCacheTTL > .zero else { return }
        try await Task.sleep(for: authCacheTTL)
    }
}
