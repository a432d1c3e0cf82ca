import Contracts
import Foundation
import Hummingbird
import Prometheus

/// Operations routes: `/health` (is the broker reachable), `/metrics` (Prometheus text),
/// `/noop` and `/openapi.yaml` (the OpenAPI document of every ingest route).
struct OpsRoutes: Sendable {
    let publisher: any CommandPublisher
    let registry: PrometheusCollectorRegistry

    func addRoutes(to router: Router<IngestRequestContext>) {
        router.get("health", use: health)
        router.get("metrics", use: metrics)
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

    /// 200 `{"status":"ok"}` when the publisher reports the broker ready, else 503 `{"status":"unavailable"}`.
    @Sendable func health(_ request: Request, context: IngestRequestContext) async throws -> Response {
        let ready = await publisher.isReady()
        return try JSONResponse.make(ready ? HealthAnswer.ok : HealthAnswer.unavailable,
                                     status: ready ? .ok : .serviceUnavailable, encoder: WireJSON.encoder())
    }

    /// The Prometheus text exposition of the registry the metrics backend writes to.
    @Sendable func metrics(_ request: Request, context: IngestRequestContext) async throws -> Response {
        var bytes: [UInt8] = []
        registry.emit(into: &bytes)
        return Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                        body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    /// 204 and nothing else, for benchmarks: the cost of the HTTP stack alone (Hummingbird plus
    /// ingest's request middleware: request id, metrics, error mapping, and collecting the body
    /// of a POST) — nothing validated, encoded or published. Subtract it from a route's cost to
    /// see what that route itself adds.
    @Sendable func noop(_ request: Request, context: IngestRequestContext) async throws -> Response {
        _ = try await request.body.collect(upTo: context.maxUploadSize)
        return Response(status: .noContent)
    }
}
