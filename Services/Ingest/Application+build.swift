import Contracts
import Hummingbird
import Logging
import Projections
import Prometheus

/// Builds the ingest application: the HTTP server on `configuration.host:port` serving
/// `buildRouter`'s routes. The caller owns the publisher (Kafka), the store (read-only here),
/// the metrics backend (bootstrapped with `metrics` as its registry) and runs the result.
public func buildApplication(
    configuration: IngestConfiguration,
    publisher: any CommandPublisher,
    store: any ProjectionStore,
    metrics: PrometheusCollectorRegistry,
    logger: Logger
) -> some ApplicationProtocol {
    let router = buildRouter(configuration: configuration, publisher: publisher, store: store, metrics: metrics)
    return Application(
        router: router,
        configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "pushline-ingest"),
        logger: logger
    )
}

/// Builds every ingest route:
/// - seed 000 device registration under `/api/v1.0/orgs/{orgId}/pushdeviceregistration`,
/// - the admin API under `/admin/v1` (admin bearer token),
/// - `/health`, `/metrics`, `/noop`.
///
/// Every route, and the not-found answer, passes through `RequestMiddleware` (request id,
/// JSON problems, request metrics).
public func buildRouter(
    configuration: IngestConfiguration,
    publisher: any CommandPublisher,
    store: any ProjectionStore,
    metrics: PrometheusCollectorRegistry
) -> Router<IngestRequestContext> {
    let ingestMetrics = IngestMetrics()
    let writer = CommandWriter(publisher: publisher, topics: configuration.topics, metrics: ingestMetrics)
    let router = Router(context: IngestRequestContext.self)
    router.add(middleware: RequestMiddleware(metrics: ingestMetrics, retryAfterSeconds: configuration.retryAfterSeconds))

    OpsRoutes(publisher: publisher, registry: metrics).addRoutes(to: router)
    RegistrationRoutes(writer: writer, store: store, maxBodyBytes: configuration.maxBodyBytes)
        .addRoutes(to: router.group(RegistrationRoutes.basePath))
    AdminRoutes(writer: writer, store: store, maxBodyBytes: configuration.maxBodyBytes)
        .addRoutes(to: router.group(AdminRoutes.basePath).add(middleware: AdminAuthMiddleware(adminToken: configuration.adminToken)))
    return router
}
