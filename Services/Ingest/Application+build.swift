import Contracts
import Foundation
import Hummingbird
import Logging
import NIOCore
import Projections
import Prometheus

/// Builds the ingest application: the HTTP server on `configuration.host:port` serving
/// `buildRouter`'s routes. The caller owns the publisher (Kafka), the store (read-only here),
/// the metrics backend (bootstrapped with `metrics` as its registry) and runs the result.
public func buildApplication(
    configuration: IngestConfiguration,
    publisher: any CommandPublisher,
    store: any ProjectionReader,
    metrics: PrometheusCollectorRegistry,
    logger: Logger
) -> some ApplicationProtocol {
    let router = buildRouter(configuration: configuration, publisher: publisher, store: store, metrics: metrics)
    let readTimeout = TimeAmount.milliseconds(Int64(configuration.requestReadTimeoutMs))
    return Application(
        router: router,
        server: .http1(configuration: .init(
            additionalChannelHandlers: [RequestReadTimeoutHandler(timeout: readTimeout)],
            idleTimeout: .milliseconds(Int64(configuration.idleTimeoutMs)))),
        configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "pushline-ingest"),
        logger: logger
    )
}

/// Builds every ingest route. Each needs the scope `RouteScopes.table` gives it
/// (`RouteScopeMiddleware` looks it up for every request; docs/API.md#token-scopes):
/// - the device registration API under `/api/v1.0/orgs/{orgId}/pushdeviceregistration`
///   (API token in the body, judged by `RegistrationGate` and again by the processor),
/// - the Bearer routes of one app, each behind `AppAuthMiddleware` (`Authorization: Bearer
///   <api token>` of the app in the path, one `AppAuthCache` shared by all of them):
///   - `POST /v1/apps/{mobileAppId}/notifications` (send),
///   - `POST /v1/apps/{mobileAppId}/tracking`, `GET …/deliveries/{deliveryId}` (engagement tracking),
///   - `/bwmi/v1/apps/{mobileAppId}/…` `PUT`/`DELETE devices`, `PUT acks`,
///     `GET devices/{deviceToken}/notifications` (the BW device service),
///   - `POST`/`DELETE /kf5/v1/apps/{mobileAppId}/tokens` (the KF5 SDK token API),
/// - the admin API under `/admin/v1` (admin bearer token),
/// - `/health`, `/metrics`, `/noop`, `/openapi.yaml`.
///
/// docs/API.md describes them all.
///
/// Every route, and the not-found answer, passes through `RequestMiddleware` (request id,
/// JSON problems, request metrics), then the per-source rate limit (all but `/health` and
/// `/metrics`, before any authentication); the Bearer routes add the per-app rate limit, per
/// (app, scope), after `AppAuthMiddleware`.
public func buildRouter(
    configuration: IngestConfiguration,
    publisher: any CommandPublisher,
    store: any ProjectionReader,
    metrics: PrometheusCollectorRegistry
) -> Router<IngestRequestContext> {
    let ingestMetrics = IngestMetrics()
    let writer = CommandWriter(publisher: publisher, topics: configuration.shared.topics, metrics: ingestMetrics,
                               parts: configuration.shared.appParts)
    let router = Router(context: IngestRequestContext.self)
    router.add(middleware: RequestMiddleware(metrics: ingestMetrics, retryAfterSeconds: configuration.retryAfterSeconds))
    router.add(middleware: SourceRateLimitMiddleware(
        buckets: configuration.sourceRateLimit.isEnabled ? TokenBuckets(configuration.sourceRateLimit, name: "source") : nil,
        trustedProxies: configuration.trustedProxies, metrics: ingestMetrics))
    router.add(middleware: RouteScopeMiddleware())

    OpsRoutes(publisher: publisher, registry: metrics).addRoutes(to: router)
    let authCache = AppAuthCache(ttl: .milliseconds(configuration.authCacheMs))
    let appBuckets: TokenBuckets<AppScopeKey>? = configuration.appRateLimit.isEnabled ? TokenBuckets(configuration.appRateLimit, name: "app") : nil
    let identity = UserIdentityCheck(secrets: configuration.secrets)
    let gate = RegistrationGate(authenticator: AppAuthenticator(store: store, cache: authCache, legacyScopes: configuration.legacyTokenScopes),
                                identity: identity, appBuckets: appBuckets, metrics: ingestMetrics)
    RegistrationRoutes(writer: writer, store: store, gate: gate, secrets: configuration.secrets, maxBodyBytes: configuration.maxBodyBytes)
        .addRoutes(to: router.group(RegistrationRoutes.basePath))
    let appAuth = AppAuthMiddleware(store: store, cache: authCache, legacyScopes: configuration.legacyTokenScopes, metrics: ingestMetrics)
    let appRateLimit = AppRateLimitMiddleware(buckets: appBuckets, metrics: ingestMetrics)
    func bearerGroup(_ path: RouterPath) -> RouterGroup<IngestRequestContext> {
        router.group(path).add(middleware: appAuth).add(middleware: appRateLimit)
    }
    let applied = AdminChangeApplied(store: store, timeout: .milliseconds(configuration.adminApplyTimeoutMs),
                                     authCacheTTL: .milliseconds(configuration.authCacheMs))
    NotificationRoutes(writer: writer, store: store, idempotencyWindow: configuration.shared.idempotencyWindow,
                       maxBodyBytes: configuration.maxBodyBytes, messageKeyId: configuration.secrets?.currentKeyId, applied: applied)
        .addRoutes(to: bearerGroup(NotificationRoutes.basePath))
    BWDeviceRoutes(writer: writer, store: store, identity: identity, metrics: ingestMetrics, maxBodyBytes: configuration.maxBodyBytes)
        .addRoutes(to: bearerGroup(BWDeviceRoutes.basePath))
    KF5TokenRoutes(writer: writer, identity: identity, metrics: ingestMetrics, maxBodyBytes: configuration.maxBodyBytes)
        .addRoutes(to: bearerGroup(KF5TokenRoutes.basePath))
    TrackingRoutes(writer: writer, store: store, maxBodyBytes: configuration.maxBodyBytes, keyedIds: configuration.secrets != nil)
        .addRoutes(to: bearerGroup(TrackingRoutes.basePath))
    DeviceChangeRoutes(writer: writer, store: store, identity: identity, maxBodyBytes: configuration.maxBodyBytes)
        .addRoutes(to: bearerGroup(DeviceChangeRoutes.basePath))
    let adminTokenCache = AdminTokenCache(ttl: .milliseconds(configuration.authCacheMs))
    let admin = router.group(AdminRoutes.basePath)
        .add(middleware: AdminAuthMiddleware(adminToken: configuration.adminToken, store: store, cache: adminTokenCache,
                                            trustedProxies: configuration.trustedProxies))
    let tokenKey = CreatedTokenKey(secrets: configuration.secrets)
    AdminRoutes(writer: writer, store: store, applied: applied, idempotencyWindow: configuration.shared.idempotencyWindow,
                tokenKey: tokenKey, secrets: configuration.secrets, maxBodyBytes: configuration.maxBodyBytes).addRoutes(to: admin)
    PushCredentialsRoutes(writer: writer, store: store, applied: applied, secrets: configuration.secrets, maxBodyBytes: configuration.maxBodyBytes)
        .addRoutes(to: admin)
    UserIdentityRoutes(writer: writer, store: store, applied: applied, secrets: configuration.secrets, maxBodyBytes: configuration.maxBodyBytes)
        .addRoutes(to: admin)
    AdminTokenRoutes(writer: writer, store: store, applied: applied, idempotencyWindow: configuration.shared.idempotencyWindow,
                     tokenKey: tokenKey, maxBodyBytes: configuration.maxBodyBytes).addRoutes(to: admin)
    AuditRoutes(store: store).addRoutes(to: admin)
    WebhookSigningRoutes(store: store, secrets: configuration.secrets).addRoutes(to: admin)
    return router
}
