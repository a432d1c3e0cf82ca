import Contracts
import Foundation
import Hummingbird

/// The per-source limit (`PUSHLINE_RATE_LIMIT_SOURCE_…`, on by default): every route but
/// `/health` and `/metrics` (probes and scrapers are not clients), checked before any
/// authentication so that a flood of bad tokens is refused as cheaply as anything else. The
/// source is the connection's address, or behind a trusted proxy (`PUSHLINE_TRUSTED_PROXIES`) the
/// client `TrustedProxies` reads from `X-Forwarded-For`. Refusal: 429 with `Retry-After`. A `2xx`
/// or `429` under it carries the `source` policy (`RateLimitPolicy`).
struct SourceRateLimitMiddleware: RouterMiddleware {
    typealias Context = IngestRequestContext

    static let exemptRoutes: Set<String> = ["/health", "/metrics"]

    /// Nil when the limit is off.
    let buckets: TokenBuckets<SourceAddress>?
    let trustedProxies: TrustedProxies
    let metrics: IngestMetrics

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let buckets, !Self.exemptRoutes.contains(context.endpointPath ?? "") else { return try await next(request, context) }
        let policy = buckets.policy
        switch buckets.acquire(trustedProxies.source(of: request, context: context)) {
        case .refused(let retryAfterSeconds):
            metrics.countRateLimited(scope: .source)
            throw IngestError.rateLimited(Problem(error: "rate limit exceeded for this source address", code: .rateLimitedSource),
                                          retryAfterSeconds: retryAfterSeconds, policy: policy)
        case .allowed(let remaining, let fullInSeconds):
            return try await next(request, context).withRateLimit(policy, remaining: remaining, fullInSeconds: fullInSeconds)
        }
    }
}

extension TrustedProxies {
    /// The source address of `request`: its connection's peer, or the client a trusted proxy
    /// names in `X-Forwarded-For`.
    func source(of request: Request, context: IngestRequestContext) -> SourceAddress {
        let peer = TrustedProxies.bytes(of: context.remoteAddress)
        guard !isEmpty else { return SourceAddress(peer) }
        return SourceAddress(client(peer: peer, forwardedFor: request.headers[values: .xForwardedFor]))
    }
}

/// The key of the per-app limit: an app and the scope of the route (docs/API.md#rate-limits).
/// Each app has one bucket for its client routes and one for its server routes, each of the
/// configured size, so that a flood of device traffic (which anyone holding the client token can
/// make) cannot starve the app's own sends.
struct AppScopeKey: Hashable, Sendable {
    var appId: UUID
    var scope: ApiTokenScope
}

/// The per-app limit (`PUSHLINE_RATE_LIMIT_APP_…`) of the Bearer routes: placed after
/// `AppAuthMiddleware`, keyed by the authenticated app and the route's scope, so only that app's
/// own requests of that scope spend its tokens. Refusal: 429 with `Retry-After`. A `2xx` or `429`
/// under it carries the `app` policy.
struct AppRateLimitMiddleware: RouterMiddleware {
    typealias Context = IngestRequestContext

    /// Nil when the limit is off.
    let buckets: TokenBuckets<AppScopeKey>?
    let metrics: IngestMetrics

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let buckets, let app = context.authenticatedApp else { return try await next(request, context) }
        let policy = buckets.policy
        switch buckets.acquire(AppScopeKey(appId: app.mobileAppId, scope: app.scope)) {
        case .refused(let retryAfterSeconds):
            metrics.countRateLimited(scope: .app)
            throw IngestError.rateLimited(Problem(error: "rate limit exceeded for this app", code: .rateLimitedApp),
                                          retryAfterSeconds: retryAfterSeconds, policy: policy)
        case .allowed(let remaining, let fullInSeconds):
            return try await next(request, context).withRateLimit(policy, remaining: remaining, fullInSeconds: fullInSeconds)
        }
    }
}

extension Response {
    /// With the limit's fields when the answer is a `2xx` (errors are answered without them, but
    /// for the `429` of the limit itself).
    func withRateLimit(_ policy: RateLimitPolicy, remaining: Int, fullInSeconds: Int) -> Response {
        guard (200..<300).contains(status.code) else { return self }
        var response = self
        policy.write(remaining: remaining, resetSeconds: fullInSeconds, to: &response.headers)
        return response
    }
}
