import Contracts
import Foundation
import Hummingbird
import Prometheus
import WireCodec

/// The operations routes every Pushline service serves, one way: `GET /health` answers 200
/// `{"status":"ok"}`, or 503 `{"status":"unavailable"}` with a `reason` when the service gives
/// one; `GET /metrics` answers the Prometheus text exposition of the service's registry.
public struct HealthAndMetricsRoutes: Sendable {
    /// Why the service is not doing its work, or nil when it is. A problem without a reason
    /// (nil inside) is answered without one.
    public typealias HealthCheck = @Sendable () async -> HealthProblem?

    public struct HealthProblem: Sendable {
        public var reason: String?
        public init(reason: String?) { self.reason = reason }
    }

    private let check: HealthCheck
    private let registry: PrometheusCollectorRegistry

    public init(registry: PrometheusCollectorRegistry, health check: @escaping HealthCheck) {
        self.check = check
        self.registry = registry
    }

    public func addRoutes<Context: RequestContext>(to router: Router<Context>) {
        let check = self.check, registry = self.registry
        router.get("health") { _, _ -> Response in
            let problem = await check()
            let answer = problem.map { HealthAnswer(status: HealthAnswer.unavailable.status, reason: $0.reason) } ?? .ok
            return Response(status: problem == nil ? .ok : .serviceUnavailable, headers: [.contentType: "application/json"],
                            body: .init(byteBuffer: ByteBuffer(bytes: try WireJSON.encoder().encode(answer))))
        }
        router.get("metrics") { _, _ -> Response in
            var bytes: [UInt8] = []
            registry.emit(into: &bytes)
            return Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                            body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
        }
    }
}
