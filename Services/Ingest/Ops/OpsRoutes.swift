import Contracts
import Foundation
import Hummingbird
import Operations
import Prometheus

/// Operations routes: `/health` (is the broker reachable) and `/metrics` (Prometheus text), as
/// every service serves them, plus `/noop` and `/openapi.yaml` (the OpenAPI document of every
/// ingest route).
struct OpsRoutes: Sendable {
    let publisher: any CommandPublisher
    let registry: PrometheusCollectorRegistry

    func addRoutes(to router: Router<IngestRequestContext>) {
        let publisher = self.publisher
        HealthAndMetricsRoutes(registry: registry) {
            await publisher.isReady() ? nil : HealthAndMetricsRoutes.HealthProblem(reason: nil)
        }.addRoutes(to: router)
        router.get("noop", use: noop)
        router.post("noop", use: noop)
        router.get("openapi.yaml", use: openAPIDocument)
    }

    /// `Ops/openapi.yaml`, compiled into the binary by SwiftPM (`embedInCode`): the one copy of
    /// the document, which `OpenAPIDocumentTests` holds to the router's routes.
    @Sendable func openAPIDocument(_ request: Request, context: IngestRequestContext) async throws -> Response {
        Response(status: .ok, headers: [.contentType: "application/yaml"], body: .init(byteBuffer: Self.openAPIBytes))
    }

    private static let openAPIBytes = ByteBuffer(bytes: PackageResources.openapi_yaml)

    /// 204 and nothing else, for benchmarks: the cost of the HTTP stack alone (Hummingbird plus
    /// ingest's request middleware: request id, metrics, error mapping, and collecting the body
    /// of a POST) — nothing validated, encoded or published. Subtract it from a route's cost to
    /// see what that route itself adds.
    @Sendable func noop(_ request: Request, context: IngestRequestContext) async throws -> Response {
        _ = try await request.body.collect(upTo: context.maxUploadSize)
        return Response(status: .noContent)
    }
}
