import Foundation
import Hummingbird
import HummingbirdHTTP2
import HummingbirdTLS
import Logging
import NIOCore
import NIOSSL
import Synchronization

/// The HTTP/2-over-TLS listener both mock push servers run on: 127.0.0.1, a given port or one
/// the system picks, the `TestCA`'s server certificate, and ALPN offering `h2` only, as Apple's provider
/// API does, so a client that cannot speak HTTP/2 fails here as it would there.
///
/// Every request goes to one handler, which sees the request whatever its method and path: the
/// mocks answer wrong ones in the service's own words.
final class MockHTTP2Server: Sendable {
    typealias Handler = @Sendable (Request) async -> Response

    private let name: String
    private let ca: TestCA
    private let running = Mutex<(task: Task<Void, any Error>, port: Int)?>(nil)

    init(name: String, ca: TestCA) {
        self.name = name
        self.ca = ca
    }

    /// The port it listens on; only once started.
    var port: Int {
        guard let port = running.withLock({ $0?.port }) else { preconditionFailure("\(name) is not started") }
        return port
    }

    /// Starts listening on `port` (0: one the system picks) and returns once it is bound.
    func start(port: Int = 0, handler: @escaping Handler) async throws {
        precondition(running.withLock { $0 == nil }, "\(name) is already started")
        var tls = ca.serverTLSConfiguration()
        tls.applicationProtocols = ["h2"]
        let (bound, announce) = AsyncStream<Int>.makeStream()
        // Stopping is by cancellation, which Hummingbird reports at error level: keep it quiet.
        var logger = Logger(label: name)
        logger.logLevel = .critical
        let app = Application(
            responder: CallbackResponder<BasicRequestContext> { request, _ in await handler(request) },
            server: try .tls(.plaintextHTTP2(), tlsConfiguration: tls),
            configuration: .init(address: .hostname("127.0.0.1", port: port)),
            onServerRunning: { channel in
                if let port = channel.localAddress?.port { announce.yield(port) }
                announce.finish()
            },
            logger: logger
        )
        let task = Task {
            // Ends the wait below if the server fails before it is bound.
            defer { announce.finish() }
            try await app.runService(gracefulShutdownSignals: [])
        }
        var iterator = bound.makeAsyncIterator()
        guard let bound = await iterator.next() else {
            let failure = await task.result
            throw TestFailure("\(name) did not start: \(failure)")
        }
        running.withLock { $0 = (task, bound) }
    }

    /// Stops listening and waits until the server is down; does nothing if it is not running.
    func stop() async {
        guard let task = running.withLock({ state in defer { state = nil }; return state?.task }) else { return }
        task.cancel()
        _ = await task.result
    }

    /// Header values by lower-cased name; a repeated header's values joined by ", ".
    static func headerValues(_ fields: HTTPFields) -> [String: String] {
        var values: [String: String] = [:]
        for field in fields {
            let name = field.name.canonicalName
            values[name] = values[name].map { "\($0), \(field.value)" } ?? field.value
        }
        return values
    }

    /// The token of an `authorization: Bearer <token>` header (the scheme in any case, RFC 9110);
    /// nil without the header or for another scheme.
    static func bearerToken(_ authorization: String?) -> String? {
        guard let parts = authorization?.split(separator: " ", maxSplits: 1), parts.count == 2,
              parts[0].lowercased() == "bearer" else { return nil }
        return String(parts[1])
    }
}
