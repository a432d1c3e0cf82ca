import NIOCore
import NIOHPACK
import NIOHTTP2
@testable import Sender
import XCTest

/// The HTTP/2 connection's state, driven event by event without a socket: each test checks the
/// actions a transition returns, which the handler carries out as they are.
final class HTTP2ConnectionStateMachineTests: XCTestCase {
    /// Requests are named; the name is their waiter, `:path` and body.
    private typealias Machine = HTTP2ConnectionStateMachine<String>

    private let now = NIODeadline.uptimeNanoseconds(1_000_000_000_000)
    private static let window = HTTP2Connection.Settings().connectionWindow

    // MARK: Helpers

    private func request(_ name: String, id: UInt64, in seconds: Int64 = 10) -> Machine.Request {
        Machine.Request(id: id, headers: Self.headers(name), body: ByteBuffer(string: name), deadline: now + .seconds(seconds),
                        waiter: name)
    }

    private static func headers(_ name: String) -> HPACKHeaders {
        [":method": "POST", ":path": "/\(name)"]
    }

    /// The action that opens `name`'s request on stream `id`.
    private static func open(_ name: String, _ id: HTTP2StreamID, armTimer: NIODeadline? = nil,
                             stopAccepting: Bool = false) -> Machine.Action {
        .open(.init(streamID: id, headers: headers(name), body: ByteBuffer(string: name), armTimer: armTimer, stopAccepting: stopAccepting))
    }

    private static func answered(_ name: String, _ status: Int, retryAfter: String? = nil, body: String? = nil,
                                 close: Bool = false) -> Machine.Action {
        .complete(name, .success(HTTP2Response(status: status, retryAfter: retryAfter, body: body.map { ByteBuffer(string: $0) })),
                  close: close, reset: nil)
    }

    private static func failed(_ name: String, _ error: HTTP2TransportError, close: Bool = false,
                               reset: HTTP2StreamID? = nil) -> Machine.Action {
        .complete(name, .failure(error), close: close, reset: reset)
    }

    private static func status(_ code: Int, _ more: [(String, String)] = []) -> HPACKHeaders {
        HPACKHeaders([(":status", String(code))] + more)
    }

    /// An active connection with `names` opened on streams 1, 3, 5…, the first timer armed.
    private func active(_ names: [String] = [], settings: HTTP2Connection.Settings = .init(),
                        firstStreamID: HTTP2StreamID = 1) -> Machine {
        var machine = Machine(settings: settings, firstStreamID: firstStreamID)
        XCTAssertEqual(machine.channelActive(now: now).last, .flush)
        for (offset, name) in names.enumerated() {
            guard case .open? = machine.submit(request(name, id: UInt64(offset))) else {
                XCTFail("\(name) is not opened")
                continue
            }
        }
        return machine
    }

    // MARK: Requests and answers

    func testRequestsThatComeWhileConnectingWaitAndAreOpenedInOrderOnceActiveAfterTheWindowIsRaised() {
        var machine = Machine(settings: .init())
        XCTAssertNil(machine.submit(request("a", id: 1, in: 5)))
        XCTAssertNil(machine.submit(request("b", id: 2, in: 6)))
        XCTAssertEqual(machine.channelActive(now: now), [
            .writeWindowUpdate(increment: Self.window - 65_535),
            Self.open("a", 1, armTimer: now + .seconds(5)),
            Self.open("b", 3),
            .flush,
        ])
    }

    func testAWaitingRequestWhoseDeadlinePassedFailsWithoutAStream() {
        var machine = Machine(settings: .init())
        XCTAssertNil(machine.submit(request("late", id: 1, in: -1)))
        XCTAssertNil(machine.submit(request("b", id: 2)))
        XCTAssertEqual(machine.channelActive(now: now), [
            .writeWindowUpdate(increment: Self.window - 65_535),
            Self.failed("late", .timedOut),
            Self.open("b", 1, armTimer: now + .seconds(10)),
            .flush,
        ])
    }

    func testAConnectionWindowOfTheProtocolsDefaultIsNotRaised() {
        var settings = HTTP2Connection.Settings()
        settings.connectionWindow = 65_535
        var machine = Machine(settings: settings)
        XCTAssertEqual(machine.channelActive(now: now), [.flush])
    }

    func testRequestsOnAnActiveConnectionGetOddStreamIDsInOrderAndOnlyTheFirstArmsTheTimer() {
        var machine = active()
        XCTAssertEqual(machine.submit(request("a", id: 1)), Self.open("a", 1, armTimer: now + .seconds(10)))
        XCTAssertEqual(machine.submit(request("b", id: 2)), Self.open("b", 3))
        XCTAssertEqual(machine.submit(request("c", id: 3)), Self.open("c", 5))
        XCTAssertEqual(machine.openStreams, 3)
    }

    func testAnAnswerBringsItsStatusRetryAfterAndTheBodyOfAllItsDataFrames() {
        var machine = active(["a"])
        XCTAssertNil(machine.receivedHeaders(Self.status(429, [("retry-after", "7")]), endStream: false, on: 1))
        XCTAssertNil(machine.receivedData(ByteBuffer(string: "ab"), endStream: false, on: 1))
        XCTAssertEqual(machine.receivedData(ByteBuffer(string: "c"), endStream: true, on: 1),
                       Self.answered("a", 429, retryAfter: "7", body: "abc"))
        XCTAssertEqual(machine.openStreams, 0)
    }

    func testAnAnswerWithoutBodyOrEndedByTrailersIsComplete() {
        var machine = active(["a", "b"])
        XCTAssertEqual(machine.receivedHeaders(Self.status(200), endStream: true, on: 1), Self.answered("a", 200))
        XCTAssertNil(machine.receivedHeaders(Self.status(500), endStream: false, on: 3))
        XCTAssertNil(machine.receivedData(ByteBuffer(string: "x"), endStream: false, on: 3))
        XCTAssertNil(machine.receivedData(ByteBuffer(), endStream: false, on: 3))
        XCTAssertEqual(machine.receivedHeaders(["grpc-status": "0"], endStream: true, on: 3), Self.answered("b", 500, body: "x"))
    }

    func testAnInterimAnswerIsSkippedAndOneThatEndsTheStreamFails() {
        var machine = active(["a", "b"])
        XCTAssertNil(machine.receivedHeaders(Self.status(100), endStream: false, on: 1))
        XCTAssertEqual(machine.receivedHeaders(Self.status(200, [("retry-after", "1")]), endStream: true, on: 1),
                       Self.answered("a", 200, retryAfter: "1"))
        XCTAssertEqual(machine.receivedHeaders(Self.status(103), endStream: true, on: 3),
                       Self.failed("b", .badResponse("only an interim answer")))
    }

    func testHeadersWithoutAStatusFailTheRequestAndResetItsStream() {
        var machine = active(["a"])
        XCTAssertEqual(machine.receivedHeaders([":status": "fine"], endStream: false, on: 1),
                       Self.failed("a", .badResponse("no :status"), reset: 1))
    }

    func testDataEndingAStreamWithoutHeadersFailsItsRequest() {
        var machine = active(["a"])
        XCTAssertEqual(machine.receivedData(ByteBuffer(string: "x"), endStream: true, on: 1), Self.failed("a", .badResponse("no HEADERS")))
    }

    func testABodyLongerThanTheLimitFailsItsRequestAloneAndResetsItsStream() {
        var settings = HTTP2Connection.Settings()
        settings.maxBodyBytes = 10
        var machine = active(["a", "b"], settings: settings)
        XCTAssertNil(machine.receivedHeaders(Self.status(500), endStream: false, on: 1))
        XCTAssertNil(machine.receivedHeaders(Self.status(500), endStream: false, on: 3))
        XCTAssertNil(machine.receivedData(ByteBuffer(string: "123456"), endStream: false, on: 1))
        XCTAssertEqual(machine.receivedData(ByteBuffer(string: "78901"), endStream: false, on: 1),
                       Self.failed("a", .responseTooLarge(limit: 10), reset: 1))
        XCTAssertNil(machine.receivedData(ByteBuffer(string: "late"), endStream: true, on: 1), "the reset stream is forgotten")
        XCTAssertEqual(machine.receivedData(ByteBuffer(string: "0123456789"), endStream: true, on: 3),
                       Self.answered("b", 500, body: "0123456789"), "exactly the limit is read")
    }

    func testFramesOfStreamsNeverOpenedOrAlreadyAnsweredAreIgnored() {
        var machine = active(["a", "b"])
        XCTAssertNil(machine.receivedHeaders(Self.status(200), endStream: true, on: 2))
        XCTAssertNil(machine.receivedHeaders(Self.status(200), endStream: true, on: 5))
        XCTAssertNil(machine.receivedReset(.cancel, on: 7))
        XCTAssertEqual(machine.receivedHeaders(Self.status(200), endStream: true, on: 1), Self.answered("a", 200))
        XCTAssertNil(machine.receivedHeaders(Self.status(200), endStream: true, on: 1))
        XCTAssertNil(machine.receivedData(ByteBuffer(string: "x"), endStream: true, on: 1))
        XCTAssertNil(machine.streamClosed(1, reason: nil))
        XCTAssertEqual(machine.openStreams, 1)
    }

    func testStreamsAnsweredOutOfOrderEachGetTheirOwnAnswer() {
        var machine = active(["a", "b", "c", "d"])
        XCTAssertEqual(machine.receivedHeaders(Self.status(201), endStream: true, on: 5), Self.answered("c", 201))
        XCTAssertEqual(machine.receivedHeaders(Self.status(200), endStream: true, on: 1), Self.answered("a", 200))
        XCTAssertEqual(machine.receivedHeaders(Self.status(203), endStream: true, on: 7), Self.answered("d", 203))
        XCTAssertEqual(machine.receivedHeaders(Self.status(202), endStream: true, on: 3), Self.answered("b", 202))
        XCTAssertEqual(machine.submit(request("e", id: 9)), Self.open("e", 9, armTimer: nil), "the IDs go on; the timer is still armed")
    }

    // MARK: Resets

    func testAResetStreamFailsItsRequestAloneNamingTheCode() {
        var machine = active(["a", "b"])
        XCTAssertEqual(machine.receivedReset(.refusedStream, on: 3), Self.failed("b", .streamReset(.refusedStream)))
        XCTAssertEqual(machine.receivedHeaders(Self.status(200), endStream: true, on: 1), Self.answered("a", 200))
    }

    func testAStreamClosedBeforeItsAnswerFailsItsRequest() {
        var machine = active(["a", "b"])
        XCTAssertEqual(machine.streamClosed(1, reason: .internalError), Self.failed("a", .streamReset(.internalError)))
        XCTAssertEqual(machine.streamClosed(3, reason: nil), Self.failed("b", .badResponse("the stream closed without an answer")))
    }

    // MARK: GOAWAY

    func testGoAwayFailsTheStreamsAboveTheLastOneAndClosesOnceTheOthersAreAnswered() {
        var machine = active(["a", "b", "c"])
        XCTAssertEqual(machine.receivedGoAway(lastStreamID: 1, code: .noError), [
            .stopAccepting,
            Self.failed("c", .goingAway(.noError)),
            Self.failed("b", .goingAway(.noError)),
        ])
        XCTAssertEqual(machine.submit(request("d", id: 4)), Self.failed("d", .notSent(HTTP2TransportError.goingAway(.noError).description)))
        XCTAssertEqual(machine.receivedHeaders(Self.status(200), endStream: true, on: 1), Self.answered("a", 200, close: true))
    }

    func testGoAwayNamingTheNewestStreamFailsNoneAndTheLastAnswerCloses() {
        var machine = active(["a", "b"])
        XCTAssertEqual(machine.receivedGoAway(lastStreamID: 3, code: .enhanceYourCalm), [.stopAccepting])
        XCTAssertEqual(machine.receivedHeaders(Self.status(200), endStream: true, on: 3), Self.answered("b", 200))
        XCTAssertEqual(machine.receivedHeaders(Self.status(200), endStream: true, on: 1), Self.answered("a", 200, close: true))
    }

    func testGoAwayFailingEveryOpenStreamClosesWithTheLast() {
        var machine = active(["a", "b"])
        XCTAssertEqual(machine.receivedGoAway(lastStreamID: 0, code: .protocolError), [
            .stopAccepting,
            Self.failed("b", .goingAway(.protocolError)),
            Self.failed("a", .goingAway(.protocolError), close: true),
        ])
    }

    func testGoAwayWithNothingOpenClosesAtOnceAndASecondOneDoesNotRetireAgain() {
        var machine = active()
        XCTAssertEqual(machine.receivedGoAway(lastStreamID: 0, code: .noError), [.stopAccepting, .close])
        XCTAssertEqual(machine.receivedGoAway(lastStreamID: 0, code: .internalError), [.close])
        XCTAssertEqual(machine.submit(request("a", id: 1)), Self.failed("a", .notSent(HTTP2TransportError.goingAway(.noError).description)))
    }

    func testGoAwaySkipsStreamsAboveTheLastOneThatWereAlreadyAnswered() {
        var machine = active(["a", "b", "c"])
        XCTAssertEqual(machine.receivedHeaders(Self.status(200), endStream: true, on: 5), Self.answered("c", 200))
        XCTAssertEqual(machine.receivedGoAway(lastStreamID: 1, code: .noError), [.stopAccepting, Self.failed("b", .goingAway(.noError))])
        XCTAssertEqual(machine.openStreams, 1)
    }

    // MARK: Stream IDs

    func testTheLastStreamIDRetiresTheConnectionWhichClosesOnceItIsAnswered() {
        let last = HTTP2StreamID(Int(Int32.max))
        var machine = active(firstStreamID: last.advanced(by: -2))
        XCTAssertEqual(machine.submit(request("a", id: 1)), Self.open("a", last.advanced(by: -2), armTimer: now + .seconds(10)))
        XCTAssertEqual(machine.submit(request("b", id: 2)), Self.open("b", last, stopAccepting: true))
        XCTAssertEqual(machine.submit(request("c", id: 3)), Self.failed("c", .notSent(HTTP2TransportError.streamIDsUsedUp.description)))
        XCTAssertEqual(machine.receivedHeaders(Self.status(200), endStream: true, on: last), Self.answered("b", 200))
        XCTAssertEqual(machine.receivedHeaders(Self.status(200), endStream: true, on: last.advanced(by: -2)),
                       Self.answered("a", 200, close: true))
    }

    // MARK: Timeouts and cancelling

    func testTheTimerFailsAndResetsTheExpiredStreamsOldestFirstAndIsArmedForTheNext() {
        var machine = active()
        XCTAssertEqual(machine.submit(request("a", id: 1, in: 1)), Self.open("a", 1, armTimer: now + .seconds(1)))
        XCTAssertEqual(machine.submit(request("b", id: 2, in: 2)), Self.open("b", 3))
        XCTAssertEqual(machine.submit(request("c", id: 3, in: 3)), Self.open("c", 5))
        XCTAssertEqual(machine.timerFired(now: now + .seconds(2)), [
            Self.failed("a", .timedOut, reset: 1),
            Self.failed("b", .timedOut, reset: 3),
            .flush,
            .armTimer(now + .seconds(3)),
        ])
        XCTAssertNil(machine.streamClosed(1, reason: .cancel), "the reset stream closing is no news")
        XCTAssertEqual(machine.receivedHeaders(Self.status(200), endStream: true, on: 5), Self.answered("c", 200))
        XCTAssertEqual(machine.timerFired(now: now + .seconds(3)), [], "nothing open: no timer")
        XCTAssertEqual(machine.submit(request("d", id: 4, in: 20)), Self.open("d", 7, armTimer: now + .seconds(20)))
    }

    func testATimerForAnAnsweredStreamIsArmedForTheOldestOpenOne() {
        var machine = active()
        XCTAssertEqual(machine.submit(request("a", id: 1, in: 1)), Self.open("a", 1, armTimer: now + .seconds(1)))
        XCTAssertEqual(machine.submit(request("b", id: 2, in: 5)), Self.open("b", 3))
        XCTAssertEqual(machine.receivedHeaders(Self.status(200), endStream: true, on: 1), Self.answered("a", 200))
        XCTAssertEqual(machine.timerFired(now: now + .seconds(1)), [.armTimer(now + .seconds(5))])
    }

    func testCancellingFailsAWaitingRequestOrResetsAnOpenStream() {
        var machine = Machine(settings: .init())
        XCTAssertNil(machine.submit(request("waiting", id: 1)))
        XCTAssertEqual(machine.cancel(request: 1), [Self.failed("waiting", .cancelled)])
        XCTAssertEqual(machine.channelActive(now: now), [.writeWindowUpdate(increment: Self.window - 65_535), .flush],
                       "the cancelled request is not opened")
        XCTAssertEqual(machine.submit(request("open", id: 2)), Self.open("open", 1, armTimer: now + .seconds(10)))
        XCTAssertEqual(machine.cancel(request: 2), [Self.failed("open", .cancelled, reset: 1), .flush])
        XCTAssertEqual(machine.cancel(request: 2), [], "once")
        XCTAssertEqual(machine.cancel(request: 99), [])
    }

    // MARK: Flow control

    func testTheConnectionWindowIsToppedUpBelowHalfOneUpdateAtATime() {
        var machine = Machine(settings: .init())
        XCTAssertEqual(machine.channelActive(now: now).first, .writeWindowUpdate(increment: Self.window - 65_535))
        XCTAssertNil(machine.inboundWindowChanged(to: 1000), "the first update is being written")
        machine.windowUpdateWritten()
        XCTAssertNil(machine.inboundWindowChanged(to: Self.window / 2), "half is enough")
        XCTAssertEqual(machine.inboundWindowChanged(to: Self.window / 2 - 1), .writeWindowUpdate(increment: Self.window / 2 + 1))
        XCTAssertNil(machine.inboundWindowChanged(to: 10))
        machine.windowUpdateWritten()
        XCTAssertEqual(machine.inboundWindowChanged(to: 10), .writeWindowUpdate(increment: Self.window - 10))
    }

    // MARK: The connection's end

    func testTheChannelClosingFailsEveryOpenRequestNamingTheFirstErrorAndLaterOnesAreNotSent() {
        var machine = active(["a", "b", "c"])
        XCTAssertEqual(machine.receivedHeaders(Self.status(200), endStream: true, on: 3), Self.answered("b", 200))
        XCTAssertEqual(machine.errorCaught("first"), .close)
        XCTAssertEqual(machine.errorCaught("second"), .close)
        let closed = HTTP2TransportError.connectionClosed("first")
        XCTAssertEqual(machine.channelInactive(), [
            .stopAccepting, .cancelTimers, Self.failed("a", closed), Self.failed("c", closed), .signalClosed,
        ])
        XCTAssertTrue(machine.isClosed)
        XCTAssertEqual(machine.openStreams, 0)
        XCTAssertEqual(machine.submit(request("d", id: 9)), Self.failed("d", .notSent(closed.description)))
        XCTAssertNil(machine.receivedHeaders(Self.status(200), endStream: true, on: 1))
        XCTAssertEqual(machine.channelInactive(), [], "closed once")
    }

    func testShutdownFailsWhatIsOpenAndWaitingAndEveryLaterRequest() {
        var machine = Machine(settings: .init())
        XCTAssertNil(machine.submit(request("waiting", id: 1)))
        XCTAssertEqual(machine.shutDown(), [.stopAccepting, .cancelTimers, Self.failed("waiting", .shutDown), .close])
        XCTAssertEqual(machine.submit(request("later", id: 2)), Self.failed("later", .shutDown))
        XCTAssertTrue(machine.isClosed, "a channel that connects now is closed")
        XCTAssertEqual(machine.channelActive(now: now), [.close])
        XCTAssertEqual(machine.channelInactive(), [.signalClosed])
    }

    func testShuttingDownAnActiveConnectionFailsItsOpenStreams() {
        var machine = active(["a"])
        XCTAssertEqual(machine.shutDown(), [.stopAccepting, .cancelTimers, Self.failed("a", .shutDown), .close])
        XCTAssertEqual(machine.shutDown(), [.close], "what was failed is failed once")
    }

    func testAFailedConnectFailsTheWaitingRequestsAndSignalsTheEnd() {
        var machine = Machine(settings: .init())
        XCTAssertNil(machine.submit(request("a", id: 1)))
        XCTAssertEqual(machine.connectFailed("refused"), [
            .stopAccepting, .cancelTimers, Self.failed("a", .connectFailed("refused")), .signalClosed,
        ])
        XCTAssertEqual(machine.submit(request("b", id: 2)), Self.failed("b", .notSent(HTTP2TransportError.connectFailed("refused").description)))
    }

    func testTheConnectTimeoutFailsEverythingUnlessTLSIsSetUp() {
        var connected = Machine(settings: .init())
        XCTAssertEqual(connected.handshakeCompleted(negotiated: "h2"), [.cancelConnectTimeout])
        XCTAssertEqual(connected.connectTimedOut(), [])
        XCTAssertFalse(connected.isClosed)

        var stuck = Machine(settings: .init())
        XCTAssertNil(stuck.submit(request("a", id: 1)))
        XCTAssertEqual(stuck.connectTimedOut(), [.stopAccepting, .cancelTimers, Self.failed("a", .connectFailed("timed out")), .close])
        XCTAssertEqual(stuck.connectFailed("refused"), [.signalClosed], "the requests failed already")
    }

    func testTheConnectTimeoutFailsTheStreamsOfAChannelActiveBeforeTLSIsSetUp() {
        // TCP is up (the channel is active, the requests written) but the TLS handshake is not done.
        var machine = active(["a"])
        XCTAssertEqual(machine.connectTimedOut(), [
            .stopAccepting, .cancelTimers, Self.failed("a", .connectFailed("timed out")), .close,
        ])
        XCTAssertEqual(machine.submit(request("b", id: 2)),
                       Self.failed("b", .notSent(HTTP2TransportError.connectFailed("timed out").description)))
        XCTAssertEqual(machine.channelInactive(), [.signalClosed])
    }

    func testAServerThatDoesNotSpeakHTTP2FailsEverything() {
        var machine = Machine(settings: .init())
        XCTAssertNil(machine.submit(request("a", id: 1)))
        XCTAssertEqual(machine.handshakeCompleted(negotiated: "http/1.1"), [
            .cancelConnectTimeout, .stopAccepting, .cancelTimers, Self.failed("a", .notHTTP2(negotiated: "http/1.1")), .close,
        ])
        XCTAssertEqual(machine.channelInactive(), [.signalClosed])
        XCTAssertEqual(machine.submit(request("b", id: 2)),
                       Self.failed("b", .notSent(HTTP2TransportError.notHTTP2(negotiated: "http/1.1").description)))
    }

    func testAnErrorBeforeTheChannelClosesNamesItInTheFailures() {
        var machine = Machine(settings: .init())
        XCTAssertNil(machine.submit(request("a", id: 1)))
        XCTAssertEqual(machine.errorCaught("TLS: bad certificate"), .close)
        XCTAssertEqual(machine.connectFailed("connection reset"), [
            .stopAccepting, .cancelTimers, Self.failed("a", .connectFailed("TLS: bad certificate")), .signalClosed,
        ])
    }
}
