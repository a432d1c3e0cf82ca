import Foundation
import Hummingbird
import Logging
import NIOCore
import Synchronization

/// A real HTTP server inside the test process that records every request it receives:
/// the stand-in for an app backend receiving Pushline's webhooks and callbacks.
///
/// Two paths misbehave on purpose: under `/drip` it answers its headers at once and then one
/// byte of body a second for a minute; under `/hang` it answers nothing for a minute.
public final class WebhookReceiver: Sendable {
    public struct Received: Sendable {
        public var path: String
        public var headers: [String: String]
        public var body: Data
        public var at: ContinuousClock.Instant
    }

    private let received = Mutex<[Received]>([])
    private let answerStatus = Mutex<HTTPResponse.Status>(.ok)
    private let task = Mutex<Task<Void, any Error>?>(nil)
    public let port: Int

    public init() {
        port = TestBroker.freePort()
    }

    public var baseURL: String { "http://127.0.0.1:\(port)" }
    public var requests: [Received] { received.withLock { $0 } }

    /// Makes the receiver answer every later request with `status`.
    public func answer(_ status: HTTPResponse.Status) { answerStatus.withLock { $0 = status } }

    public func start() async throws {
        let router = Router()
        router.post("**") { request, context -> Response in
            let body = try await request.body.collect(upTo: 1 << 20)
            var headers: [String: String] = [:]
            for field in request.headers { headers[field.name.canonicalName] = field.value }
            // HTTP/1's Host header arrives as the request's authority.
            if let authority = request.head.authority { headers["Host"] = authority }
            self.received.withLock {
                $0.append(Received(path: request.uri.path, headers: headers, body: Data(buffer: body), at: .now))
            }
            if request.uri.path.hasPrefix("/hang") {
                try await Task.sleep(for: .seconds(60))
            }
            if request.uri.path.hasPrefix("/drip") {
                return Response(status: .ok, body: ResponseBody { writer in
                    for _ in 0..<60 {
                        try await writer.write(ByteBuffer(string: "x"))
                        try await Task.sleep(for: .seconds(1))
                    }
                    try await writer.finish(nil)
                })
            }
            return Response(status: self.answerStatus.withLock { $0 })
        }
        // Stopping is by cancellation, which Hummingbird reports at error level: keep it quiet.
        var logger = Logger(label: "webhook-receiver")
        logger.logLevel = .critical
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)), logger: logger)
        task.withLock { $0 = Task { try await app.runService() } }
        for _ in 0..<100 {
            if (try? await HTTPClientHelpers.get("\(baseURL)/")) != nil { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw TestFailure("webhook receiver did not start on port \(port)")
    }

    public func stop() async {
        let t = task.withLock { $0 }
        t?.cancel()
        _ = try? await t?.value
    }

    /// Waits until at least `count` requests arrived.
    public func waitFor(count: Int, timeout: Duration = .seconds(30)) async throws {
        let deadline = ContinuousClock.now + timeout
        while requests.count < count {
            if ContinuousClock.now > deadline { throw TestFailure("received \(requests.count) of \(count) webhooks within \(timeout)") }
            try await Task.sleep(for: .milliseconds(50))
        }
    }
}
