import NIOCore
import NIOHPACK
import NIOHTTP2

/// What one HTTP/2 connection knows of its requests and streams, as a value, after the connection
/// state machines of postgres-nio and AsyncHTTPClient. Each thing `HTTP2Connection` sees (a
/// request, a frame, the channel becoming active or inactive, a timer) is one call here, which
/// updates the state and returns what to do about it (`Action`); the handler does it. Nothing here
/// touches a channel, so the tests drive it frame by frame.
///
/// `Waiter` is what a request's answer is handed to: a continuation in the handler, a name in the
/// tests.
///
/// - A request's stream ID is the next odd number when it is opened (written as `HEADERS`, then
///   one `DATA` frame with `END_STREAM`); requests that come while connecting wait in order, and
///   are opened (or time out) when the channel becomes active.
/// - Answers are gathered per stream until `END_STREAM`: `:status`, `retry-after`, the body up
///   to `maxBodyBytes`. Open streams are kept in ID order, which is also the order of their
///   deadlines: one timer for the oldest does for all.
/// - Inbound flow control: the connection window is raised to `connectionWindow` at the start and
///   topped up whenever it falls below half of it, one `WINDOW_UPDATE` at a time.
/// - Failures: `RST_STREAM` fails its request; `GOAWAY` fails the streams above its last stream
///   ID and retires the connection (no new streams, closed once the others are answered); the
///   connection closing, or failing to connect, fails everything open and waiting.
struct HTTP2ConnectionStateMachine<Waiter> {
    /// A request for a stream of its own.
    struct Request {
        /// Names the request for cancelling it.
        var id: UInt64
        var headers: HPACKHeaders
        var body: ByteBuffer
        var deadline: NIODeadline
        var waiter: Waiter
    }

    /// A request given a stream: what to write, and what else opening it calls for.
    struct Opening {
        var streamID: HTTP2StreamID
        var headers: HPACKHeaders
        var body: ByteBuffer
        /// When the timer is to fire: the oldest open stream's deadline, if no timer was armed.
        var armTimer: NIODeadline?
        /// The stream IDs are used up with this one: the connection takes no more requests.
        var stopAccepting: Bool
    }

    /// What the handler does, in the order given.
    enum Action {
        /// Write the request's `HEADERS` and `DATA` (`END_STREAM`) on its stream, not flushed.
        case open(Opening)
        /// Hand `waiter` its result. Then, if `close`, close the connection (a retired one with
        /// nothing left open), and if `reset` names a stream, write `RST_STREAM CANCEL` on it.
        case complete(Waiter, Result<HTTP2Response, HTTP2TransportError>, close: Bool, reset: HTTP2StreamID?)
        /// Write a `WINDOW_UPDATE` of the connection, and call `windowUpdateWritten()` once it is.
        case writeWindowUpdate(increment: Int)
        /// Call `timerFired(now:)` at this deadline.
        case armTimer(NIODeadline)
        /// Cancel the stream timer and the connect timeout.
        case cancelTimers
        /// Cancel the connect timeout: TLS is set up.
        case cancelConnectTimeout
        /// Tell new requests to look for another connection.
        case stopAccepting
        case flush
        case close
        /// The connection is closed for good: whoever waits for that may go on.
        case signalClosed
    }

    /// An open stream and what its answer has brought so far.
    private struct OpenStream {
        var request: UInt64
        var waiter: Waiter
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

    /// The connection's inbound window, kept above half of it.
    private let connectionWindow: Int
    /// The longest answer body read; a longer one fails its request.
    private let maxBodyBytes: Int
    /// Makes the answers' bodies.
    private let allocator: ByteBufferAllocator

    private var phase = Phase.connecting
    private var waiting = CircularBuffer<Request>()
    /// Streams by ID: the first is `firstStreamID`, each next one 2 higher; nil once answered.
    /// The first is never nil (answered ones at the front are dropped; behind a slow one they
    /// stay, at most a timeout's worth).
    private var streams = CircularBuffer<OpenStream?>(initialCapacity: 128)
    private var firstStreamID: HTTP2StreamID
    private var nextStreamID: HTTP2StreamID
    /// How many streams are open.
    private(set) var openStreams = 0
    /// Why no new stream is opened (`GOAWAY`, IDs used up); nil while they are.
    private var retired: HTTP2TransportError?
    private var timerArmed = false
    private var handshakeDone = false
    private var windowUpdateInFlight = false
    /// The first error the channel reported, for the errors of the requests it ends.
    private var lastError: String?
    private var closeSignalled = false

    /// - Parameter firstStreamID: the ID of the first stream opened (the tests start near the last).
    init(settings: HTTP2Connection.Settings, allocator: ByteBufferAllocator = ByteBufferAllocator(),
         firstStreamID: HTTP2StreamID = 1) {
        connectionWindow = settings.connectionWindow
        maxBodyBytes = settings.maxBodyBytes
        self.allocator = allocator
        self.firstStreamID = firstStreamID
        nextStreamID = firstStreamID
    }

    /// True once the connection failed, closed or was shut down: it takes nothing more (a
    /// channel that connects after that is closed).
    var isClosed: Bool {
        if case .closed = phase { return true }
        return false
    }

    // MARK: Requests

    /// A request to send: opened at once on an active connection, kept while it connects,
    /// failed when the connection is closed or retired (`notSent`: nothing went out).
    mutating func submit(_ request: Request) -> Action? {
        switch phase {
        case .closed(.shutDown):
            return Self.fail(request.waiter, .shutDown)
        case .closed(let error):
            return Self.fail(request.waiter, .notSent(error.description))
        case .connecting:
            waiting.append(request)
            return nil
        case .active:
            if let retired { return Self.fail(request.waiter, .notSent(retired.description)) }
            return .open(open(request))
        }
    }

    /// The request `id` is cancelled: failed (`cancelled`), its stream reset if it has one.
    mutating func cancel(request id: UInt64) -> [Action] {
        if let waiter = waiting.firstIndex(where: { $0.id == id }) {
            return [Self.fail(waiting.remove(at: waiter).waiter, .cancelled)]
        }
        if let index = streams.firstIndex(where: { $0?.request == id }), let reset = reset(index, .cancelled) {
            return [reset, .flush]
        }
        return []
    }

    /// The client shuts down: everything open and waiting fails (`shutDown`), and the
    /// connection closes.
    mutating func shutDown() -> [Action] {
        var actions: [Action] = []
        failEverything(.shutDown, into: &actions)
        actions.append(.close)
        return actions
    }

    // MARK: Connecting

    /// TCP could not be set up: everything waiting fails.
    mutating func connectFailed(_ error: String) -> [Action] {
        var actions: [Action] = []
        failEverything(.connectFailed(lastError ?? error), into: &actions)
        signalClosed(into: &actions)
        return actions
    }

    /// The connect timeout fired: unless TLS is set up by then, everything waiting fails and the
    /// connection closes.
    mutating func connectTimedOut() -> [Action] {
        guard !handshakeDone else { return [] }
        lastError = "connecting timed out"
        var actions: [Action] = []
        failEverything(.connectFailed("timed out"), into: &actions)
        actions.append(.close)
        return actions
    }

    /// TLS is set up, having agreed on `negotiated` (ALPN): anything but `h2` fails everything.
    mutating func handshakeCompleted(negotiated: String?) -> [Action] {
        handshakeDone = true
        var actions: [Action] = [.cancelConnectTimeout]
        if negotiated != "h2" {
            lastError = "ALPN \(negotiated ?? "none")"
            failEverything(.notHTTP2(negotiated: negotiated), into: &actions)
            actions.append(.close)
        }
        return actions
    }

    /// The channel is active (`NIOHTTP2Handler` has written its preface): the connection window
    /// is raised, and the requests that waited are opened, or fail if their deadline passed by
    /// `now`. A connection closed meanwhile closes the channel.
    mutating func channelActive(now: NIODeadline) -> [Action] {
        guard case .connecting = phase else { return [.close] }
        phase = .active
        var actions: [Action] = []
        // A connection's window starts at 65,535 bytes whatever the SETTINGS say (RFC 9113, 6.9.2).
        if connectionWindow > 65_535 { actions.append(windowUpdate(connectionWindow - 65_535)) }
        while let request = waiting.popFirst() {
            actions.append(request.deadline <= now ? Self.fail(request.waiter, .timedOut) : .open(open(request)))
        }
        actions.append(.flush)
        return actions
    }

    /// The channel closed: everything open and waiting fails.
    mutating func channelInactive() -> [Action] {
        var actions: [Action] = []
        failEverything(.connectionClosed(lastError), into: &actions)
        signalClosed(into: &actions)
        return actions
    }

    /// An error on the channel (a connection error, after which `NIOHTTP2Handler` has sent
    /// `GOAWAY`; TLS; I/O; a stream error, which a conforming server does not cause): the
    /// connection is closed, and its requests fail naming the first error.
    mutating func errorCaught(_ error: String) -> Action {
        if lastError == nil { lastError = error }
        return .close
    }

    // MARK: Frames and stream events

    /// `HEADERS` on stream `id`: the first final ones give the status (an interim 1xx is
    /// skipped); with `END_STREAM` (no body, or trailers) the answer is complete.
    mutating func receivedHeaders(_ headers: HPACKHeaders, endStream: Bool, on id: HTTP2StreamID) -> Action? {
        guard let index = index(of: id) else { return nil }
        if streams[index]?.status == nil {
            guard let text = headers.first(name: ":status"), let status = Int(text) else {
                return reset(index, .badResponse("no :status"))
            }
            if status < 200 {
                return endStream ? finish(index, .failure(.badResponse("only an interim answer"))) : nil
            }
            streams[index]?.status = status
            streams[index]?.retryAfter = headers.first(name: "retry-after")
        }
        return endStream ? complete(index) : nil
    }

    /// `DATA` on stream `id`: added to the body (copied: a slice would keep the connection's read
    /// buffer alive); a body beyond `maxBodyBytes` fails the request and resets the stream.
    mutating func receivedData(_ bytes: ByteBuffer, endStream: Bool, on id: HTTP2StreamID) -> Action? {
        guard let index = index(of: id) else { return nil }
        if bytes.readableBytes > 0 {
            // Taken out while it grows, so that the buffer is not shared (and copied) on the way.
            guard var stream = streams[index] else { return nil }
            let length = (stream.body?.readableBytes ?? 0) + bytes.readableBytes
            if length > maxBodyBytes { return reset(index, .responseTooLarge(limit: maxBodyBytes)) }
            streams[index] = nil
            var bytes = bytes
            if stream.body == nil { stream.body = allocator.buffer(capacity: bytes.readableBytes) }
            stream.body?.writeBuffer(&bytes)
            streams[index] = stream
        }
        return endStream ? complete(index) : nil
    }

    /// `RST_STREAM` on stream `id`: its request fails naming the code.
    mutating func receivedReset(_ code: HTTP2ErrorCode, on id: HTTP2StreamID) -> Action? {
        guard let index = index(of: id) else { return nil }
        return finish(index, .failure(.streamReset(code)))
    }

    /// The stream `id` closed (`NIOHTTP2Handler`'s `StreamClosedEvent`). Still open here, it
    /// closed without its answer read: reset by the server (with `reason`), or by `GOAWAY`.
    mutating func streamClosed(_ id: HTTP2StreamID, reason: HTTP2ErrorCode?) -> Action? {
        guard let index = index(of: id) else { return nil }
        return finish(index, .failure(reason.map { .streamReset($0) } ?? .badResponse("the stream closed without an answer")))
    }

    /// `GOAWAY`: the server takes no new streams and will not answer those above `lastStreamID`.
    /// They fail, the rest are answered, then the connection closes.
    mutating func receivedGoAway(lastStreamID: HTTP2StreamID, code: HTTP2ErrorCode) -> [Action] {
        var actions: [Action] = []
        if retire(.goingAway(code)) { actions.append(.stopAccepting) }
        var unanswered: [HTTP2StreamID] = []
        for offset in stride(from: streams.count - 1, through: 0, by: -1) {
            let id = firstStreamID.advanced(by: 2 * offset)
            guard id > lastStreamID else { break }
            if streams[streams.index(streams.startIndex, offsetBy: offset)] != nil { unanswered.append(id) }
        }
        for id in unanswered {
            if let index = index(of: id), let failed = finish(index, .failure(.goingAway(code))) { actions.append(failed) }
        }
        // The last one failed closed it, if it left none open.
        if openStreams == 0, unanswered.isEmpty { actions.append(.close) }
        return actions
    }

    // MARK: Flow control

    /// `NIOHTTP2Handler` reports the connection's inbound window at `size`: below half of
    /// `connectionWindow`, it is topped up, unless an update is being written (until it is,
    /// `NIOHTTP2Handler` still reports the window without it).
    mutating func inboundWindowChanged(to size: Int) -> Action? {
        guard !windowUpdateInFlight, size < connectionWindow / 2 else { return nil }
        return windowUpdate(connectionWindow - size)
    }

    /// The `WINDOW_UPDATE` asked for was written (or failed to be).
    mutating func windowUpdateWritten() {
        windowUpdateInFlight = false
    }

    // MARK: Timeouts

    /// The timer fired at `now`: the streams whose deadline passed are failed (`timedOut`) and
    /// reset, oldest first, and the timer is armed again for the oldest left.
    mutating func timerFired(now: NIODeadline) -> [Action] {
        timerArmed = false
        var actions: [Action] = []
        while let first = streams.first, let stream = first, stream.deadline <= now {
            if let expired = reset(streams.startIndex, .timedOut) { actions.append(expired) }
        }
        if !actions.isEmpty { actions.append(.flush) }
        if let deadline = armTimer() { actions.append(.armTimer(deadline)) }
        return actions
    }

    // MARK: The streams

    private static func fail(_ waiter: Waiter, _ error: HTTP2TransportError) -> Action {
        .complete(waiter, .failure(error), close: false, reset: nil)
    }

    /// Gives the request the next stream ID.
    private mutating func open(_ request: Request) -> Opening {
        let id = nextStreamID
        if streams.isEmpty { firstStreamID = id }
        streams.append(OpenStream(request: request.id, waiter: request.waiter, deadline: request.deadline))
        openStreams += 1
        var usedUp = false
        if Int(id) > Int(Int32.max) - 2 {
            usedUp = retire(.streamIDsUsedUp)
        } else {
            nextStreamID = id.advanced(by: 2)
        }
        return Opening(streamID: id, headers: request.headers, body: request.body, armTimer: armTimer(), stopAccepting: usedUp)
    }

    /// Where the stream `id` is in `streams`, if it is open.
    private func index(of id: HTTP2StreamID) -> CircularBuffer<OpenStream?>.Index? {
        let offset = Int(id) - Int(firstStreamID)
        guard offset >= 0, offset & 1 == 0, offset >> 1 < streams.count else { return nil }
        let index = streams.index(streams.startIndex, offsetBy: offset >> 1)
        return streams[index] == nil ? nil : index
    }

    /// The answer so far as the result, once `END_STREAM` came.
    private mutating func complete(_ index: CircularBuffer<OpenStream?>.Index) -> Action? {
        guard let stream = streams[index] else { return nil }
        guard let status = stream.status else { return finish(index, .failure(.badResponse("no HEADERS"))) }
        return finish(index, .success(HTTP2Response(status: status, retryAfter: stream.retryAfter, body: stream.body)))
    }

    /// Ends the stream at `index` with `result` (resetting the stream `reset`); a retired
    /// connection with nothing left open closes.
    private mutating func finish(_ index: CircularBuffer<OpenStream?>.Index, _ result: Result<HTTP2Response, HTTP2TransportError>,
                                 reset: HTTP2StreamID? = nil) -> Action? {
        guard let stream = streams[index] else { return nil }
        streams[index] = nil
        openStreams -= 1
        while let first = streams.first, first == nil {
            streams.removeFirst()
            // Emptied, the next to open is first: past the last stream ID there is none to count to.
            firstStreamID = streams.isEmpty ? nextStreamID : firstStreamID.advanced(by: 2)
        }
        return .complete(stream.waiter, result, close: retired != nil && openStreams == 0, reset: reset)
    }

    /// Ends the stream at `index` with `error` and resets it (`RST_STREAM CANCEL`).
    private mutating func reset(_ index: CircularBuffer<OpenStream?>.Index, _ error: HTTP2TransportError) -> Action? {
        let id = firstStreamID.advanced(by: 2 * streams.distance(from: streams.startIndex, to: index))
        return finish(index, .failure(error), reset: id)
    }

    /// No new streams: what is open goes on, and the connection closes when it is done. True if
    /// it was not retired yet.
    private mutating func retire(_ reason: HTTP2TransportError) -> Bool {
        guard retired == nil else { return false }
        retired = reason
        return true
    }

    /// Fails every open and waiting request with `error`; the connection takes no more.
    private mutating func failEverything(_ error: HTTP2TransportError, into actions: inout [Action]) {
        if case .closed = phase { return }
        phase = .closed(error)
        timerArmed = false
        actions.append(.stopAccepting)
        actions.append(.cancelTimers)
        let open = streams, queued = waiting
        streams.removeAll()
        waiting.removeAll()
        openStreams = 0
        firstStreamID = nextStreamID
        for stream in open {
            if let stream { actions.append(Self.fail(stream.waiter, error)) }
        }
        for request in queued { actions.append(Self.fail(request.waiter, error)) }
    }

    private mutating func signalClosed(into actions: inout [Action]) {
        guard !closeSignalled else { return }
        closeSignalled = true
        actions.append(.signalClosed)
    }

    /// The timer's deadline, the oldest open stream's, when none is armed.
    private mutating func armTimer() -> NIODeadline? {
        guard !timerArmed, let first = streams.first, let deadline = first?.deadline else { return nil }
        timerArmed = true
        return deadline
    }

    private mutating func windowUpdate(_ increment: Int) -> Action {
        windowUpdateInFlight = true
        return .writeWindowUpdate(increment: increment)
    }
}

extension HTTP2ConnectionStateMachine.Opening: Equatable {}

extension HTTP2ConnectionStateMachine.Action: Equatable where Waiter: Equatable {}
