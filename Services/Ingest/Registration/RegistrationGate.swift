import Contracts
import Foundation
import Hummingbird
import Logging

/// Judges the commands of the registration API's write routes before they are written
/// (docs/API.md#forged-requests). That API answers `202` to a request with an unknown API token, so
/// that a forger learns nothing; Pushline keeps that answer, but writes nothing to Kafka for a
/// command whose token is not a live token of its app (`AppAuthenticator`: the app and the token as
/// projected, cached for `PUSHLINE_AUTH_CACHE_MS`), and counts it in
/// `pushline_ingest_forged_commands_total`. Forged traffic therefore costs a cache lookup, not a
/// record the processor must read.
///
/// A token, or an app, works here once the processor has projected it, as on the Bearer routes.
/// When the store cannot be read, the commands are written and the processor judges them:
/// writing is never wrong, only dropping could be.
///
/// The per-app rate limit applies to the apps of the admitted commands (`MobileAppId`, each
/// distinct app of a batch once per request), after authentication, so that nobody can spend
/// another app's budget with forged requests.
struct RegistrationGate: Sendable {
    let authenticator: AppAuthenticator
    /// Nil when the per-app limit is off.
    let appBuckets: TokenBuckets<UUID>?
    let metrics: IngestMetrics

    /// The commands worth writing, in order; throws 429 when an admitted app is over its limit.
    func admit<C: Sendable>(_ commands: [C], app: (C) -> UUID, tokenHash: (C) -> String,
                            context: IngestRequestContext) async throws -> [C] {
        var verdicts: [Credential: Bool] = [:]
        var admitted: [C] = []
        admitted.reserveCapacity(commands.count)
        for command in commands {
            let appId = app(command), hash = tokenHash(command)
            let key = Credential(appId: appId, tokenHash: hash)
            if verdicts[key] == nil { verdicts[key] = try await isLive(appId, tokenHash: hash, context: context) }
            if verdicts[key] == true { admitted.append(command) }
        }
        let dropped = commands.count - admitted.count
        if dropped > 0 {
            metrics.forged.increment(by: dropped)
            // Debug only: forged requests must not buy log volume.
            context.logger.debug("commands with an API token that is not live not written", metadata: ["dropped": "\(dropped)"])
        }
        if let appBuckets {
            var seen: Set<UUID> = []
            for command in admitted where seen.insert(app(command)).inserted {
                if case .refused(let retryAfterSeconds) = appBuckets.acquire(app(command)) {
                    metrics.countRateLimited(scope: .app)
                    throw IngestError.rateLimited(Problem(error: "rate limit exceeded for this app"), retryAfterSeconds: retryAfterSeconds)
                }
            }
        }
        return admitted
    }

    /// An (app, token hash) pair a request presents.
    private struct Credential: Hashable {
        var appId: UUID
        var tokenHash: String
    }

    private func isLive(_ appId: UUID, tokenHash: String, context: IngestRequestContext) async throws -> Bool {
        do {
            return try await authenticator.app(appId, tokenHash: tokenHash, context: context) != nil
        } catch let error as IngestError {
            guard case .unavailable = error else { throw error }
            return true
        }
    }
}
