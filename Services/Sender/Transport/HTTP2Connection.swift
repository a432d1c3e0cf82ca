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
/// What the connection knows of its requests and streams, and what it does about each thing that
/// happens, is `HTTP2ConnectionStateMachine`'s; this handler turns the channel's events, the
/// requests and the timers into its calls, and carries out the actions it returns. Everything but
/// `execute`, `connect`, `close` and `acceptsRequests` runs on the connection's event loop, which
/// is what makes it `@unchecked Sendable`. There:
/// - Requests written together are flushed together, once the event loop has run what it has
///   queued; what is written while reading is flushed when the read completes.
/// - Beyond the server's `SETTINGS_MAX_CONCURRENT_STREAMS`, `NIOHTTP2Handler` holds new streams
///   back (its concurrent stream buffer) until others close.
/// - Inbound flow control: `NIOHTTP2Handler` sends no `WINDOW_UPDATE` of its own (the stream
///   multiplexer and child channels do that, and there are none here), so the state machine asks
///   for the connection's. Stream windows are never topped up: each stream starts with
///   `Settings.streamWindow`, more than the largest body a stream may have.
/// - `HTTP2Transport` replaces a retired or closed connection on the next request.
final class HTTP2Connection: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame
    private typealias StateMachine = HTTP2ConnectionStateMachine<CheckedContinuation<HTTP2Response, any Error>>

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

    let endpoint: HTTP2Endpoint
    let eventLoop: any EventLoop
    private let settings: Settings
    private let accepting = Atomic<Bool>(true)
    private let requestIDs = Atomic<UInt64>(0)
    private let closedPromise: EventLoopPromise<Void>

    // On the event loop only.
    private var state: StateMachine
    private var context: ChannelHandlerContext?
    private var timer: Scheduled<Void>?
    private var connectGuard: Scheduled<Void>?
    private var flushScheduled = false
    private var flushAfterRead = false

    init(endpoint: HTTP2Endpoint, eventLoop: any EventLoop, settings: Settings) {
        self.endpoint = endpoint
        self.eventLoop = eventLoop
        self.settings = settings
        state = StateMachine(settings: settings)
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
                let request = StateMachine.Request(id: id, headers: headers, body: body, deadline: deadline, waiter: continuation)
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
                    if self.state.isClosed { channel.close(promise: nil) }
                case .failure(let error):
                    self.run(self.state.connectFailed("\(error)"))
                }
            }
    }

    /// Fails what is open and waiting with `shutDown`, closes the connection and waits until it is closed.
    func close() async {
        eventLoop.execute { self.run(self.state.shutDown()) }
        try? await closedPromise.futureResult.get()
    }

    // MARK: Requests

    private func submit(_ request: StateMachine.Request) {
        guard let action = state.submit(request) else { return }
        run(action)
        if case .open = action { scheduleFlush() }
    }

    private func cancel(_ id: UInt64) {
        run(state.cancel(request: id))
    }

    /// Resets the streams whose deadline passed, and arms the timer again.
    private func timerFired() {
        timer = nil
        run(state.timerFired(now: .now()))
    }

    private func connectTimedOut() {
        connectGuard = nil
        run(state.connectTimedOut())
    }

    /// Flushes once the event loop has run what it has queued: requests sent together go out together.
    private func scheduleFlush() {
        guard !flushScheduled else { return }
        flushScheduled = true
        eventLoop.execute {
            self.flushScheduled = false
            self.context?.flush()
        }
    }

    // MARK: The state machine's actions

    private func run(_ actions: [StateMachine.Action]) {
        for action in actions { run(action) }
    }

    private func run(_ action: StateMachine.Action?) {
        guard let action else { return }
        switch action {
        case .open(let opening):
            // Only on an active channel, whose context stays until it is inactive (which closes
            // the state machine: nothing is opened after).
            context?.write(wrapOutboundOut(HTTP2Frame(streamID: opening.streamID, payload: .headers(.init(headers: opening.headers)))),
                           promise: nil)
            context?.write(wrapOutboundOut(HTTP2Frame(streamID: opening.streamID,
                                                      payload: .data(.init(data: .byteBuffer(opening.body), endStream: true)))),
                           promise: nil)
            if opening.stopAccepting { accepting.store(false, ordering: .relaxed) }
            if let deadline = opening.armTimer { armTimer(deadline) }
        case .complete(let continuation, let result, let close, let reset):
            continuation.resume(with: result)
            if close { context?.close(promise: nil) }
            if let reset {
                // The state machine has finished the stream already: writing the RST_STREAM closes
                // it in `NIOHTTP2Handler`, which tells this handler at once (StreamClosedEvent).
                context?.write(wrapOutboundOut(HTTP2Frame(streamID: reset, payload: .rstStream(.cancel))), promise: nil)
                flushAfterRead = true
            }
        case .writeWindowUpdate(let increment):
            guard let context else { return }
            let written = eventLoop.makePromise(of: Void.self)
            written.futureResult.whenComplete { _ in self.state.windowUpdateWritten() }
            context.write(wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: increment))),
                          promise: written)
            flushAfterRead = true
        case .armTimer(let deadline):
            armTimer(deadline)
        case .cancelTimers:
            timer?.cancel()
            timer = nil
            connectGuard?.cancel()
            connectGuard = nil
        case .cancelConnectTimeout:
            connectGuard?.cancel()
            connectGuard = nil
        case .stopAccepting:
            accepting.store(false, ordering: .relaxed)
        case .flush:
            context?.flush()
            flushAfterRead = false
        case .close:
            context?.close(promise: nil)
        case .signalClosed:
            closedPromise.succeed()
        }
    }

    private func armTimer(_ deadline: NIODeadline) {
        timer = eventLoop.scheduleTask(deadline: deadline) { self.timerFired() }
    }

    // MARK: Channel events

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        run(state.channelActive(now: .now()))
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        run(state.channelInactive())
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        run(state.errorCaught("\(error)"))
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let update = event as? NIOHTTP2WindowUpdatedEvent {
            if update.streamID == .rootStream, let size = update.inboundWindowSize { run(state.inboundWindowChanged(to: size)) }
        } else if let closed = event as? StreamClosedEvent {
            run(state.streamClosed(closed.streamID, reason: closed.reason))
        } else if case TLSUserEvent.handshakeCompleted(let negotiated)? = event as? TLSUserEvent {
            run(state.handshakeCompleted(negotiated: negotiated))
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.payload {
        case .headers(let headers):
            run(state.receivedHeaders(headers.headers, endStream: headers.endStream, on: frame.streamID))
        case .data(let data):
            guard case .byteBuffer(let bytes) = data.data else { return }
            run(state.receivedData(bytes, endStream: data.endStream, on: frame.streamID))
        case .rstStream(let code):
            run(state.receivedReset(code, on: frame.streamID))
        case .goAway(let lastStreamID, let code, _):
            run(state.receivedGoAway(lastStreamID: lastStreamID, code: code))
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
}
