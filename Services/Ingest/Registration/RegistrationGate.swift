import Contracts
import Foundation
import Hummingbird
import Logging
import Projections

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
/// A live token of the app without the route's scope (a server-only token on a device's route)
/// is not a forgery: whoever holds it is the app's own backend, so the request is answered `403`
/// naming the missing scope and the token's field, and nothing of it is written
/// (docs/API.md#token-scopes). The processor judges the scope again (`BatchState.authorization`).
///
/// A live token of the app with a missing or wrong user assertion, where the app requires one
/// (docs/API.md#verified-user-identity), is not a forgery either: it is answered `403` naming the
/// assertion's field, and nothing of the request is written. A command whose assertion was
/// checked is written with `identityVerified`; the processor judges that against the app as of
/// the log.
/// An app that lists the hosts its status webhooks may reach (`AppRow.webhookHosts`) gets no
/// command written whose callback URL's host is not on it: the request is answered 400 naming
/// the header (docs/API.md#webhook-hosts). Judged from the app's row as authenticated (cache or
/// store); the processor judges again against the list as the log has it when it applies.
///
/// The per-app rate limit applies to the apps of the admitted commands (`MobileAppId`, each
/// distinct app of a batch once per request), after authentication, so that nobody can spend
/// another app's budget with forged requests; it is kept per (app, scope), like the Bearer routes'.
struct RegistrationGate: Sendable {
    let authenticator: AppAuthenticator
    let identity: UserIdentityCheck
    /// Nil when the per-app limit is off.
    let appBuckets: TokenBuckets<AppScopeKey>?
    let metrics: IngestMetrics

    /// The commands worth writing, in order, each marked `identityVerified` when its assertion
    /// (`assertions[i]`, the field `assertionField(i)`) was checked; throws 403 when a command's
    /// token is a live token of its app without `scope` (`tokenField(i)` names the field of
    /// command `i`) or its assertion is missing or wrong where needed, 400 when an admitted
    /// command's app does not let `callback` (the request's status webhook URL and the header that
    /// gave it) be reached, 429 when an admitted app is over its limit.
    func admit<C: UserBinding>(_ commands: [C], assertions: [String?], scope: ApiTokenScope, tokenField: (Int) -> String,
                               assertionField: (Int) -> String, callback: (url: String, field: String)? = nil,
                               context: IngestRequestContext) async throws -> [C] {
        var verdicts: [Credential: Verdict] = [:]
        var admitted: [C] = []
        admitted.reserveCapacity(commands.count)
        for (index, command) in commands.enumerated() {
            let appId = command.mobileAppId, hash = command.apiTokenHash
            let key = Credential(appId: appId, tokenHash: hash)
            let verdict: Verdict
            if let known = verdicts[key] {
                verdict = known
            } else {
                verdict = try await judge(appId, tokenHash: hash, scope: scope, context: context)
                verdicts[key] = verdict
            }
            switch verdict {
            case .admitted(let app?):
                var checked = command
                if try identity.verify(app: app, userId: command.userId, assertion: assertions[index], field: assertionField(index),
                                       context: context) {
                    checked.identityVerified = true
                }
                if let callback, !WebhookHosts.allows(callback.url, hosts: app.webhookHosts) {
                    throw IngestError.badRequest("the host of this URL is not among the app's webhook hosts", field: callback.field, code: .webhookHostNotAllowed)
                }
                admitted.append(checked)
            // The store could not tell: written unverified, and the processor judges it.
            case .admitted(nil): admitted.append(command)
            case .forged: break
            case .lacksScope: throw ScopeRefusal.problem(missing: scope, field: tokenField(index))
            }
        }
        let dropped = commands.count - admitted.count
        if dropped > 0 {
            metrics.forged.increment(by: dropped)
            // Debug only: forged requests must not buy log volume.
            context.logger.debug("commands with an API token that is not live not written", metadata: ["dropped": "\(dropped)"])
        }
        if appBuckets != nil {
            var seen: Set<UUID> = []
            for command in admitted where seen.insert(command.mobileAppId).inserted {
                try spend(1, of: command.mobileAppId, scope: scope)
            }
        }
        return admitted
    }

    /// Takes `requests` requests from the per-app limit of (`appId`, `scope`); 429 when its
    /// bucket lacks them. Only for an app whose live token was presented.
    func spend(_ requests: Int, of appId: UUID, scope: ApiTokenScope) throws {
        guard let appBuckets,
              case .refused(let retryAfterSeconds) = appBuckets.acquire(AppScopeKey(appId: appId, scope: scope), cost: requests) else { return }
        metrics.countRateLimited(scope: .app)
        throw IngestError.rateLimited(Problem(error: "rate limit exceeded for this app", code: .rateLimitedApp), retryAfterSeconds: retryAfterSeconds,
                                      policy: appBuckets.policy)
    }

    /// An (app, token hash) pair a request presents.
    private struct Credential: Hashable {
        var appId: UUID
        var tokenHash: String
    }

    private enum Verdict {
        /// A live token of the app with the scope, and the app's row (nil: the store could not
        /// tell; written, and the processor judges it).
        case admitted(AppRow?)
        /// Not a live token of the app: answered as usual, not written.
        case forged
        /// A live token of the app without the scope: 403.
        case lacksScope
    }

    private func judge(_ appId: UUID, tokenHash: String, scope: ApiTokenScope, context: IngestRequestContext) async throws -> Verdict {
        do {
            guard let authenticated = try await authenticator.app(appId, tokenHash: tokenHash, context: context) else { return .forged }
            return authenticated.grants(scope) ? .admitted(authenticated.app) : .lacksScope
        } catch let error as IngestError {
            guard case .unavailable = error else { throw error }
            return .admitted(nil)
        }
    }
}
