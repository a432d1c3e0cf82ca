import NIOCore
import NIOHPACK
import NIOPosix
import NIOSSL
import Synchronization

/// The pushes' own HTTP/2 client: one TLS connection per base URL, every request a stream of
/// frames written and read by one handler, without a child channel, a pipeline or a body stream
/// per request (docs/BENCHMARKS.md, "Sender": that machinery was a fifth of the sender's CPU).
///
/// A request is `POST` with a small body and gets a small answer; every failure to get one (a
/// connection that could not be made or closed, a reset stream, a `GOAWAY`, the timeout) is an
/// `HTTP2TransportError`, worth another attempt.
final class HTTP2Transport: Sendable {
    private let group: any EventLoopGroup
    private let tls: NIOSSLContext
    private let timeout: TimeAmount
    private let settings: HTTP2Connection.Settings
    private let state = Mutex<(connections: [String: HTTP2Connection], shutDown: Bool, made: Int)>(([:], false, 0))

    /// - Parameters:
    ///   - tls: the client's TLS configuration; ALPN is set to `h2`.
    ///   - timeout: for one request, connecting included.
    init(tls: TLSConfiguration, timeout: TimeAmount, settings: HTTP2Connection.Settings = .init(),
         group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton) throws {
        var tls = tls
        tls.applicationProtocols = ["h2"]
        self.tls = try NIOSSLContext(configuration: tls)
        self.timeout = timeout
        self.settings = settings
        self.group = group
    }

    /// Sends `POST path` to `baseURL` (`https://host[:port]`) with the pseudo-headers, then the
    /// headers `addHeaders` adds (lower-case names, `headerCount` of them at most), and `body`.
    func post(baseURL: String, path: String, body: ByteBuffer, headerCount: Int,
              addHeaders: (inout HPACKHeaders) -> Void) async throws -> HTTP2Response {
        let deadline = NIODeadline.now() + timeout
        let connection = try connection(to: baseURL)
        var headers = HPACKHeaders()
        headers.reserveCapacity(headerCount + 4)
        headers.add(name: ":method", value: "POST")
        headers.add(name: ":scheme", value: "https")
        headers.add(name: ":authority", value: connection.endpoint.authority)
        headers.add(name: ":path", value: connection.endpoint.pathPrefix.isEmpty ? path : connection.endpoint.pathPrefix + path)
        addHeaders(&headers)
        do {
            return try await connection.execute(headers: headers, body: body, deadline: deadline)
        } catch HTTP2TransportError.notSent {
            // The connection closed or was told to go away after it was picked: nothing was
            // sent, so once more on the connection that replaces it.
            return try await self.connection(to: baseURL).execute(headers: headers, body: body, deadline: deadline)
        }
    }

    /// The connection to `baseURL`: the open one, or a new one when there is none or it takes no
    /// more requests (closed, `GOAWAY`). Callers that arrive together while it connects share it.
    func connection(to baseURL: String) throws -> HTTP2Connection {
        let (connection, isNew) = try state.withLock { state throws -> (HTTP2Connection, Bool) in
            guard !state.shutDown else { throw HTTP2TransportError.shutDown }
            if let open = state.connections[baseURL], open.acceptsRequests { return (open, false) }
            let made = HTTP2Connection(endpoint: try HTTP2Endpoint(baseURL: baseURL), eventLoop: group.next(), settings: settings)
            state.connections[baseURL] = made
            state.made += 1
            return (made, true)
        }
        if isNew { connection.connect(tls: tls, timeout: timeout) }
        return connection
    }

    /// How many connections were made so far (the tests check that requests share them).
    var connectionsMade: Int { state.withLock { $0.made } }

    /// Closes every connection: what is open fails with `shutDown`, and so does every later request.
    func shutdown() async {
        let connections = state.withLock { state in
            state.shutDown = true
            defer { state.connections = [:] }
            return Array(state.connections.values)
        }
        for connection in connections { await connection.close() }
    }
}
