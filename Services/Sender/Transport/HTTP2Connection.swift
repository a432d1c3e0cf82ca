import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL
import NIOTLS
import Synchronization

/// One HTTP/2 connection and the handler that runs its streams, after `NIOHTTP2Handler` (used
/// without a stream multiplexer).
///
/// Everything but `execute`, `connect`, `close` and `acceptsRequests` runs on the connection's
/// event loop, which is what makes it `@unchecked Sendable`. There:
/// - A request's stream ID is the next odd number when its `HEADERS` are written (then one
///   `DATA` frame with `END_STREAM`); requests that come while connecting wait in order.
///   Beyond the server's `SETTINGS_MAX_CONCURRENT_STREAMS`, `NIOHTTP2Handler` holds new streams
///   back (its concurrent stream buffer) until others close.
/// - Answers are gathered per stream until `END_STREAM`: `:status`, `retry-after`, the body up
///   to `Settings.maxBodyBytes`. Open streams are kept in ID order, which is also the order of
///   their deadlines: one timer for the oldest does for all.
/// - Inbound flow control: `NIOHTTP2Handler` sends no `WINDOW_UPDATE` of its own (the stream
///   multiplexer and child channels do that, and there are none here), so the connection window
///   is raised to `Settings.connectionWindow` at the start and topped up whenever it falls below
///   half of it. Stream windows are never topped up: each stream starts with
///   `Settings.streamWindow`, more than the largest body a stream may have.
/// - Failures: `RST_STREAM` fails its request; `GOAWAY` fails the streams above its last stream
///   ID and retires the connection (no new streams, closed once the others are answered); the
///   connection closing, or any error on it, fails everything open. `HTTP2Transport` replaces a
///   retired or closed connection on the next request.
final class HTTP2Connection: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    /// The connection's sizes.
    struct Settings: Sendable {
        /// The connection's inbound window, kept above half of it.
        var connectionWindow = 8 << 20
        /// `SETTINGS_INITIAL_WINDOW_SIZE`: each stream's inbound window; larger than `maxBodyBytes`.
        var streamWindow = 256 << 10
        /// The longest answer body read; a longer one fails its request.
        var maxBodyBytes = 64 << 10
        /// Streams reset by the client whose late frames are ignored; beyond them a late frame is
        /// a connection error in `NIOHTTP2Handler`. Timeouts reset streams, so more than its 32.
        var recentlyResetStreams = 1024

        init() {}
    }

    /// A request waiting for the connection, or for its stream to be opened.
    private struct Request {
        /// Names the request for cancelling it.
        var id: UInt64
        var headers: HPACKHeaders
        var body: ByteBuffer
        var deadline: NIODeadline
        var continuation: CheckedContinuation<HTTP2Response, any Error>
    }

    /// An open stream and what its answer has brought so far.
    private struct OpenStream {
        var request: UInt64
        var continuation: CheckedContinuation<HTTP2Response, any Error>
        var deadline: NIODeadline
        var status: Int?
        var retryAfter: String?
        var body: ByteBuffer?
    }

    private enum Phase {
        case connecting
        case active
        case closed(HTTP2TransportError)
    }

    let endpoint: HTTP2Endpoint
    let eventLoop: any EventLoop
    private let settings: Settings
    private let accepting = Atomic<Bool>(true)
    private let requestIDs = Atomic<UInt64>(0)
    private let closedPromise: EventLoopPromise<Void>

    // On the event loop only.
    private var phase = Phase.connecting
    private var context: ChannelHandlerContext?
    private var waiting = CircularBuffer<Request>()
    /// Streams by ID: the first is `firstStreamID`, each next one 2 higher; nil once answered.
    /// The first is never nil (answered ones at the front are dropped; behind a slow one they
    /// stay, at most a timeout's worth).
    private var streams = CircularBuffer<OpenStream?>(initialCapacity: 128)
    private var firstStreamID = HTTP2StreamID(1)
    private var nextStreamID = HTTP2StreamID(1)
    private var openStreams = 0
    /// Why no new stream is opened (`GOAWAY`, IDs used up); nil while they are.
    private var retired: HTTP2TransportError?
    private var timer: Scheduled<Void>?
    private var connectGuard: Scheduled<Void>?
    private var handshakeDone = false
    private var windowUpdateInFlight = false
    private var flushScheduled = false
    private var flushAfterRead = false
    private var lastError: String?
    private var closeSignalled = false

    init(endpoint: HTTP2Endpoint, eventLoop: any EventLoop, settings: Settings) {
        self.endpoint = endpoint
        self.eventLoop = eventLoop
        self.settings = settings
        closedPromise = eventLoop.makePromise()
    }

    /// False once the connection closed or was told to go away: the next request needs another.
    var acceptsRequests: Bool { accepting.load(ordering: .relaxed) }

    // MARK: Outside the event loop

    /// Sends one request and waits for its answer, or for the error that ends it (`deadline`
    /// included). Cancelling the task fails the request (`cancelled`) and resets its stream.
    func execute(headers: HPACKHeaders, body: ByteBuffer, deadline: NIODeadline) async throws -> HTTP2Response {
        let id = requestIDs.wrappingAdd(1, ordering: .relaxed).newValue
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                guard !Task.isCancelled else { return continuation.resume(throwing: HTTP2TransportError.cancelled) }
                let request = Request(id: id, headers: headers, body: body, deadline: deadline, continuation: continuation)
                if eventLoop.inEventLoop {
                    submit(request)
                } else {
                    eventLoop.execute { self.submit(request) }
                }
            }
        } onCancel: {
            eventLoop.execute { self.cancel(id) }
        }
    }

    /// Connects: TCP, TLS with ALPN `h2`, then HTTP/2. Requests sent meanwhile wait; if it
    /// fails, they fail.
    func connect(tls: NIOSSLContext, timeout: TimeAmount) {
        let endpoint = endpoint, settings = settings
        eventLoop.execute {
            // TCP has the bootstrap's timeout; this one covers TLS too.
            self.connectGuard = self.eventLoop.scheduleTask(in: timeout) { self.connectTimedOut() }
        }
        ClientBootstrap(group: eventLoop)
            .connectTimeout(timeout)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    var connection = NIOHTTP2Handler.ConnectionConfiguration()
                    connection.initialSettings = [
                        HTTP2Setting(parameter: .enablePush, value: 0),
                        HTTP2Setting(parameter: .initialWindowSize, value: settings.streamWindow),
                        HTTP2Setting(parameter: .maxHeaderListSize, value: HPACKDecoder.defaultMaxHeaderListSize),
                    ]
                    connection.maximumRecentlyResetStreams = settings.recentlyResetStreams
                    try channel.pipeline.syncOperations.addHandlers([
                        try NIOSSLClientHandler(context: tls, serverHostname: endpoint.serverName),
                        NIOHTTP2Handler(mode: .client, connectionConfiguration: connection),
                        self,
                    ])
                }
            }
            .connect(host: endpoint.host, port: endpoint.port)
            .whenComplete { result in
                switch result {
                case .success(let channel):
                    // Closed (shut down) while connecting.
                    if case .closed = self.phase { channel.close(promise: nil) }
                case .failure(let error):
                    self.fail(everything: .connectFailed(self.lastError ?? "\(error)"))
                    self.signalClosed()
                }
            }
    }

    /// Fails what is open and waiting with `shutDown`, closes the connection and waits until it is closed.
    func close() async {
        eventLoop.execute {
            self.fail(everything: .shutDown)
            self.context?.close(promise: nil)
        }
        try? await closedPromise.futureResult.get()
    }

    // MARK: Requests

    private func submit(_ request: Request) {
        switch phase {
        case .closed(.shutDown):
            request.continuation.resume(throwing: HTTP2TransportError.shutDown)
        case .closed(let error):
            request.continuation.resume(throwing: HTTP2TransportError.notSent(error.description))
        case .connecting:
            waiting.append(request)
        case .active:
            if let retired {
                request.continuation.resume(throwing: HTTP2TransportError.notSent(retired.description))
            } else {
                open(request)
                scheduleFlush()
            }
        }
    }

    /// Writes the request's `HEADERS` and `DATA` on the next stream ID (not flushed).
    private func open(_ request: Request) {
        guard let context else { return request.continuation.resume(throwing: HTTP2TransportError.connectionClosed(lastError)) }
        let id = nextStreamID
        if streams.isEmpty { firstStreamID = id }
        streams.append(OpenStream(request: request.id, continuation: request.continuation, deadline: request.deadline))
        openStreams += 1
        context.write(wrapOutboundOut(HTTP2Frame(streamID: id, payload: .headers(.init(headers: request.headers)))), promise: nil)
        context.write(wrapOutboundOut(HTTP2Frame(streamID: id, payload: .data(.init(data: .byteBuffer(request.body), endStream: true)))),
                      promise: nil)
        if Int(id) > Int(Int32.max) - 2 {
            retire(.streamIDsUsedUp)
        } else {
            nextStreamID = id.advanced(by: 2)
        }
        armTimer()
    }

    /// Where the stream `id` is in `streams`, if it is open.
    private func index(of id: HTTP2StreamID) -> CircularBuffer<OpenStream?>.Index? {
        let offset = Int(id) - Int(firstStreamID)
        guard offset >= 0, offset & 1 == 0, offset >> 1 < streams.count else { return nil }
        let index = streams.index(streams.startIndex, offsetBy: offset >> 1)
        return streams[index] == nil ? nil : index
    }

    /// Ends the stream at `index` with `result`; closes a retired connection with nothing left open.
    private func finish(_ index: CircularBuffer<OpenStream?>.Index, _ result: Result<HTTP2Response, HTTP2TransportError>) {
        guard let stream = streams[index] else { return }
        streams[index] = nil
        openStreams -= 1
        while let first = streams.first, first == nil {
            streams.removeFirst()
            firstStreamID = firstStreamID.advanced(by: 2)
        }
        stream.continuation.resume(with: result)
        if retired != nil, openStreams == 0 { context?.close(promise: nil) }
    }

    /// Ends the stream at `index` with `error` and resets it (`RST_STREAM CANCEL`).
    private func reset(_ index: CircularBuffer<OpenStream?>.Index, _ error: HTTP2TransportError) {
        let id = firstStreamID.advanced(by: 2 * streams.distance(from: streams.startIndex, to: index))
        // Finished first: writing the RST_STREAM closes the stream in `NIOHTTP2Handler`, which
        // tells this handler at once (StreamClosedEvent).
        finish(index, .failure(error))
        context?.write(wrapOutboundOut(HTTP2Frame(streamID: id, payload: .rstStream(.cancel))), promise: nil)
    }

    /// Fails the request `id` with `cancelled`, resetting its stream if it has one.
    private func cancel(_ id: UInt64) {
        if let waiter = waiting.firstIndex(where: { $0.id == id }) {
            waiting.remove(at: waiter).continuation.resume(throwing: HTTP2TransportError.cancelled)
        } else if let index = streams.firstIndex(where: { $0?.request == id }) {
            reset(index, .cancelled)
            context?.flush()
        }
    }

    /// No new streams: what is open goes on, and the connection closes when it is done.
    private func retire(_ reason: HTTP2TransportError) {
        guard retired == nil else { return }
        retired = reason
        accepting.store(false, ordering: .relaxed)
    }

    /// Fails every open and waiting request with `error`; the connection takes no more.
    private func fail(everything error: HTTP2TransportError) {
        if case .closed = phase { return }
        phase = .closed(error)
        accepting.store(false, ordering: .relaxed)
        timer?.cancel()
        timer = nil
        connectGuard?.cancel()
        connectGuard = nil
        let open = streams, queued = waiting
        streams.removeAll()
        waiting.removeAll()
        openStreams = 0
        firstStreamID = nextStreamID
        for stream in open { stream?.continuation.resume(throwing: error) }
        for request in queued { request.continuation.resume(throwing: error) }
    }

    private func signalClosed() {
        guard !closeSignalled else { return }
        closeSignalled = true
        closedPromise.succeed()
    }

    // MARK: Timeouts

    /// Arms the timer for the oldest open stream's deadline, unless it is armed.
    private func armTimer() {
        guard timer == nil, let first = streams.first, let deadline = first?.deadline else { return }
        timer = eventLoop.scheduleTask(deadline: deadline) { self.timerFired() }
    }

    /// Resets the streams whose deadline passed, oldest first, and arms the timer again.
    private func timerFired() {
        timer = nil
        let now = NIODeadline.now()
        var expired = false
        while let first = streams.first, let stream = first, stream.deadline <= now {
            reset(streams.startIndex, .timedOut)
            expired = true
        }
        if expired { context?.flush() }
        armTimer()
    }

    private func connectTimedOut() {
        connectGuard = nil
        guard !handshakeDone else { return }
        lastError = "connecting timed out"
        fail(everything: .connectFailed("timed out"))
        context?.close(promise: nil)
    }

    // MARK: Flushing

    /// Flushes once the event loop has run what it has queued: requests sent together go out together.
    private func scheduleFlush() {
        guard !flushScheduled else { return }
        flushScheduled = true
        eventLoop.execute {
            self.flushScheduled = false
            self.context?.flush()
        }
    }

    // MARK: Flow control

    /// Tops the connection's inbound window up to `Settings.connectionWindow` when it is below
    /// half of it. One update at a time: until it is written, `NIOHTTP2Handler` still reports the
    /// window without it.
    private func windowChanged(_ size: Int) {
        guard !windowUpdateInFlight, size < settings.connectionWindow / 2 else { return }
        sendWindowUpdate(settings.connectionWindow - size)
    }

    private func sendWindowUpdate(_ increment: Int) {
        guard let context else { return }
        windowUpdateInFlight = true
        let written = eventLoop.makePromise(of: Void.self)
        written.futureResult.whenComplete { _ in self.windowUpdateInFlight = false }
        context.write(wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: increment))),
                      promise: written)
        flushAfterRead = true
    }

    // MARK: Channel events

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        // `NIOHTTP2Handler` has written the preface (its SETTINGS) before passing this on.
        guard case .connecting = phase else {
            context.close(promise: nil)
            return context.fireChannelActive()
        }
        phase = .active
        // A connection's window starts at 65,535 bytes whatever the SETTINGS say (RFC 9113, 6.9.2).
        if settings.connectionWindow > 65_535 { sendWindowUpdate(settings.connectionWindow - 65_535) }
        let now = NIODeadline.now()
        while let request = waiting.popFirst() {
            if request.deadline <= now {
                request.continuation.resume(throwing: HTTP2TransportError.timedOut)
            } else {
                open(request)
            }
        }
        context.flush()
        flushAfterRead = false
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        fail(everything: .connectionClosed(lastError))
        signalClosed()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A connection error (the handler has sent GOAWAY), TLS, I/O; also a stream error, which
        // a conforming server does not cause: the connection is closed and made again.
        if lastError == nil { lastError = "\(error)" }
        context.close(promise: nil)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let update = event as? NIOHTTP2WindowUpdatedEvent {
            if update.streamID == .rootStream, let size = update.inboundWindowSize { windowChanged(size) }
        } else if let closed = event as? StreamClosedEvent {
            // Closed without the answer read: reset by the server, or by GOAWAY (already failed).
            if let index = index(of: closed.streamID) {
                finish(index, .failure(closed.reason.map { .streamReset($0) } ?? .badResponse("the stream closed without an answer")))
            }
        } else if case TLSUserEvent.handshakeCompleted(let negotiated)? = event as? TLSUserEvent {
            handshakeDone = true
            connectGuard?.cancel()
            connectGuard = nil
            if negotiated != "h2" {
                lastError = "ALPN \(negotiated ?? "none")"
                fail(everything: .notHTTP2(negotiated: negotiated))
                context.close(promise: nil)
            }
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.payload {
        case .headers(let headers):
            received(headers, on: frame.streamID)
        case .data(let data):
            received(data, on: frame.streamID)
        case .rstStream(let code):
            if let index = index(of: frame.streamID) { finish(index, .failure(.streamReset(code))) }
        case .goAway(let lastStreamID, let code, _):
            receivedGoAway(lastStreamID: lastStreamID, code: code)
        default:
            // SETTINGS, PING, WINDOW_UPDATE: `NIOHTTP2Handler` has dealt with them.
            break
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if flushAfterRead {
            flushAfterRead = false
            context.flush()
        }
        context.fireChannelReadComplete()
    }

    // MARK: Answers

    private func received(_ frame: HTTP2Frame.FramePayload.Headers, on id: HTTP2StreamID) {
        guard let index = index(of: id) else { return }
        if streams[index]?.status == nil {
            guard let text = frame.headers.first(name: ":status"), let status = Int(text) else {
                return reset(index, .badResponse("no :status"))
            }
            // 1xx: an interim answer; the final one follows.
            if status < 200 {
                if frame.endStream { finish(index, .failure(.badResponse("only an interim answer"))) }
                return
            }
            streams[index]?.status = status
            streams[index]?.retryAfter = frame.headers.first(name: "retry-after")
        }
        // END_STREAM on the first HEADERS (no body) or on trailers.
        if frame.endStream { complete(index) }
    }

    private func received(_ frame: HTTP2Frame.FramePayload.Data, on id: HTTP2StreamID) {
        guard let index = index(of: id), case .byteBuffer(var bytes) = frame.data else { return }
        if bytes.readableBytes > 0 {
            // Taken out while it grows, so that the buffer is not shared (and copied) on the way.
            guard var stream = streams[index] else { return }
            let length = (stream.body?.readableBytes ?? 0) + bytes.readableBytes
            if length > settings.maxBodyBytes {
                reset(index, .responseTooLarge(limit: settings.maxBodyBytes))
                flushAfterRead = true
                return
            }
            streams[index] = nil
            // Copied: a slice would keep the connection's read buffer alive.
            if stream.body == nil { stream.body = context?.channel.allocator.buffer(capacity: bytes.readableBytes) ?? ByteBuffer() }
            stream.body?.writeBuffer(&bytes)
            streams[index] = stream
        }
        if frame.endStream { complete(index) }
    }

    private func complete(_ index: CircularBuffer<OpenStream?>.Index) {
        guard let stream = streams[index] else { return }
        guard let status = stream.status else { return finish(index, .failure(.badResponse("no HEADERS"))) }
        finish(index, .success(HTTP2Response(status: status, retryAfter: stream.retryAfter, body: stream.body)))
    }

    /// The server takes no new streams and will not answer those above `lastStreamID`: they
    /// fail, the rest are answered, then the connection closes.
    private func receivedGoAway(lastStreamID: HTTP2StreamID, code: HTTP2ErrorCode) {
        retire(.goingAway(code))
        var unanswered: [HTTP2StreamID] = []
        for offset in stride(from: streams.count - 1, through: 0, by: -1) {
            let id = firstStreamID.advanced(by: 2 * offset)
            guard id > lastStreamID else { break }
            if streams[streams.index(streams.startIndex, offsetBy: offset)] != nil { unanswered.append(id) }
        }
        for id in unanswered {
            if let index = index(of: id) { finish(index, .failure(.goingAway(code))) }
        }
        if openStreams == 0 { context?.close(promise: nil) }
    }
}
