import Contracts
import Crypto
import Foundation
import NIOCore
import NIOSSL
@testable import Sender
import TestSupport
import XCTest

/// The sender's HTTP/2 transport against the mock APNs: real HTTP/2 over TLS, a CA made for the
/// run. Each test checks what a request gets, never how long it took.
final class HTTP2ConnectionTests: XCTestCase {
    private static let teamId = "ABCDE12345", keyId = "KEY1234567", bundleId = "com.example.app"

    private var stops: [@Sendable () async -> Void] = []
    private var ca: TestCA!
    private var caFile: String!
    private var key: APNsSigningKey!
    private var publicKey: P256.Signing.PublicKey!
    private var pushes: Pushes!

    override func setUp() async throws {
        ca = try TestCA()
        caFile = FileManager.default.temporaryDirectory.appendingPathComponent("h2-ca-\(UUID().uuidString).pem").path
        try ca.writeCertificate(to: caFile)
        let keys = TestPushKeys()
        publicKey = try P256.Signing.PrivateKey(pemRepresentation: keys.apnsPEM).publicKey
        key = try APNsSigningKey(teamId: Self.teamId, keyId: Self.keyId, fingerprint: "f", pem: keys.apnsPEM)
        pushes = Pushes(key: key)
    }

    override func tearDown() async throws {
        for stop in stops.reversed() { await stop() }
        try? FileManager.default.removeItem(atPath: caFile)
    }

    private func server(port: Int = 0) async throws -> MockAPNsServer {
        let apns = MockAPNsServer(ca: ca, trustedKeys: [.init(teamId: Self.teamId, keyId: Self.keyId, bundleId: Self.bundleId,
                                                               publicKey: publicKey)])
        try await apns.start(port: port)
        stops.append { await apns.stop() }
        return apns
    }

    private func client(timeout: Duration = .seconds(10)) throws -> ProviderClient {
        let client = try ProviderClient(caFile: caFile, timeout: timeout)
        stops.append { try? await client.shutdown() }
        return client
    }

    /// A device token that says which request it is.
    private static func token(_ number: Int) -> String {
        let hex = String(number, radix: 16)
        return String(repeating: "0", count: 64 - hex.count) + hex
    }

    /// Sends push `number` (its device token and body say which) with a valid provider token.
    private struct Pushes: Sendable {
        let tokens = APNsProviderTokens()
        let key: APNsSigningKey

        func push(_ number: Int, client: ProviderClient, to baseURL: String) async throws -> AttemptOutcome {
            let request = APNsRequest(path: "/3/device/\(HTTP2ConnectionTests.token(number))",
                                      headers: [("apns-topic", HTTP2ConnectionTests.bundleId), ("apns-push-type", "alert")],
                                      body: Data(#"{"aps":{"alert":"n\#(number)"}}"#.utf8))
            return await client.send(request, baseURL: baseURL, jwt: try await tokens.token(for: key))
        }
    }

    private static func isRetry(_ outcome: AttemptOutcome, mentioning text: String) -> Bool {
        guard case .retry(let reason, nil) = outcome else { return false }
        return reason.contains(text)
    }

    func testConcurrentRequestsShareOneConnectionAndEachGetsItsOwnAnswer() async throws {
        let pushes = try XCTUnwrap(self.pushes)
        let apns = try await server()
        // Every third request a 500 with its own reason, every third a 429 with its own retry-after.
        apns.setBehaviourRule { token in
            guard let number = Int(token, radix: 16) else { return nil }
            switch number % 3 {
            case 0: return .status(500, reason: "R\(number)")
            case 1: return .tooManyRequests(retryAfterSeconds: number)
            default: return nil
            }
        }
        // 500 requests at once: each must get its own answer however long a loaded machine takes.
        let client = try client(timeout: .seconds(120))
        let outcomes = try await withThrowingTaskGroup(of: (Int, AttemptOutcome).self) { group in
            for number in 1...500 {
                group.addTask { (number, try await pushes.push(number, client: client, to: apns.baseURL)) }
            }
            return try await group.reduce(into: [Int: AttemptOutcome]()) { $0[$1.0] = $1.1 }
        }
        XCTAssertEqual(outcomes.count, 500)
        for (number, outcome) in outcomes {
            switch number % 3 {
            case 0: XCTAssertEqual(outcome, .retry(reason: "R\(number)", retryAfter: nil), "request \(number)")
            case 1: XCTAssertEqual(outcome, .retry(reason: "TooManyRequests", retryAfter: TimeInterval(number)), "request \(number)")
            default: XCTAssertEqual(outcome, .delivered, "request \(number)")
            }
        }
        XCTAssertEqual(apns.answeredByStatus, [200: 167, 429: 167, 500: 166])
        XCTAssertEqual(client.pushes.connectionsMade, 1, "the first requests shared one connection attempt")
        XCTAssertEqual(Set(apns.requests.map(\.body)).count, 500, "each request went with its own body")
    }

    func testAnswersLargerThanTheWindowsAreReadAndTooLargeOnesFailAlone() async throws {
        let pushes = try XCTUnwrap(self.pushes)
        let apns = try await server()
        // About 60 KB per answer, 200 of them: 12 MB, more than the connection window (8 MiB),
        // which must be topped up; each answer under the 64 KiB limit but near a stream's 64 KiB default.
        let long = String(repeating: "x", count: 60_000), tooLong = String(repeating: "y", count: 70_000)
        apns.setBehaviourRule { token in
            Int(token, radix: 16) == 0 ? .status(500, reason: tooLong) : .status(500, reason: long)
        }
        let client = try client()
        for round in 0..<10 {
            let outcomes = try await withThrowingTaskGroup(of: AttemptOutcome.self) { group in
                for number in 1...20 { group.addTask { try await pushes.push(round * 20 + number, client: client, to: apns.baseURL) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            XCTAssertEqual(outcomes, Array(repeating: .retry(reason: long, retryAfter: nil), count: 20), "round \(round)")
        }
        let tooLarge = try await pushes.push(0, client: client, to: apns.baseURL)
        XCTAssertTrue(Self.isRetry(tooLarge, mentioning: "longer than 65536 bytes"), "\(tooLarge)")
        let after = try await pushes.push(1, client: client, to: apns.baseURL)
        XCTAssertEqual(after, .retry(reason: long, retryAfter: nil), "the connection goes on")
        XCTAssertEqual(client.pushes.connectionsMade, 1)
    }

    func testATimedOutRequestFailsAloneAndTheConnectionGoesOn() async throws {
        let pushes = try XCTUnwrap(self.pushes)
        let apns = try await server()
        apns.setBehaviour(.slow(.seconds(30)), for: Self.token(1))
        let client = try client(timeout: .seconds(1))
        async let slow = pushes.push(1, client: client, to: apns.baseURL)
        async let quick = pushes.push(2, client: client, to: apns.baseURL)
        let (slowOutcome, quickOutcome) = try await (slow, quick)
        XCTAssertTrue(Self.isRetry(slowOutcome, mentioning: "no answer in time"), "\(slowOutcome)")
        XCTAssertEqual(quickOutcome, .delivered)
        let later = try await pushes.push(3, client: client, to: apns.baseURL)
        XCTAssertEqual(later, .delivered)
        XCTAssertEqual(client.pushes.connectionsMade, 1, "a reset stream does not cost the connection")
    }

    func testACancelledRequestFailsAloneAndTheConnectionGoesOn() async throws {
        let pushes = try XCTUnwrap(self.pushes)
        let apns = try await server()
        apns.setBehaviour(.slow(.seconds(60)), for: Self.token(1))
        let client = try client(timeout: .seconds(120))
        let baseURL = apns.baseURL
        let slow = Task { try await pushes.push(1, client: client, to: baseURL) }
        let quick = try await pushes.push(2, client: client, to: baseURL)
        XCTAssertEqual(quick, .delivered)
        slow.cancel()
        let cancelled = try await slow.value
        XCTAssertTrue(Self.isRetry(cancelled, mentioning: "cancelled"), "\(cancelled)")
        let after = try await pushes.push(3, client: client, to: baseURL)
        XCTAssertEqual(after, .delivered)
        XCTAssertEqual(client.pushes.connectionsMade, 1)
    }

    func testShutdownFailsWhatIsOpenAndEveryLaterRequest() async throws {
        let pushes = try XCTUnwrap(self.pushes)
        let apns = try await server()
        apns.setBehaviour(.slow(.seconds(60)), for: Self.token(1))
        let client = try ProviderClient(caFile: caFile, timeout: .seconds(30))
        let delivered = try await pushes.push(2, client: client, to: apns.baseURL)
        XCTAssertEqual(delivered, .delivered)
        let open = Task { try await pushes.push(1, client: client, to: apns.baseURL) }
        try await Task.sleep(for: .milliseconds(300))
        try await client.shutdown()
        let cutOff = try await open.value
        XCTAssertTrue(Self.isRetry(cutOff, mentioning: "shut down"), "\(cutOff)")
        let after = try await pushes.push(3, client: client, to: apns.baseURL)
        XCTAssertTrue(Self.isRetry(after, mentioning: "shut down"), "\(after)")
    }

    func testAnUnreachableServerFailsRetryably() async throws {
        let apns = try await server()
        let baseURL = apns.baseURL
        await apns.stop()
        let client = try client(timeout: .seconds(5))
        let request = APNsRequest(path: "/3/device/\(Self.token(1))", headers: [("apns-topic", Self.bundleId)], body: Data("{}".utf8))
        let outcome = await client.send(request, baseURL: baseURL, jwt: "x")
        XCTAssertTrue(Self.isRetry(outcome, mentioning: "connect"), "\(outcome)")
        let plain = await client.send(request, baseURL: "http://127.0.0.1:1", jwt: "x")
        XCTAssertTrue(Self.isRetry(plain, mentioning: "not an https base URL"), "\(plain)")
    }

    // MARK: Failures on cue (ScriptedHTTP2Server)

    private func transport(timeout: TimeAmount = .seconds(10)) throws -> HTTP2Transport {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.additionalTrustRoots = [.file(caFile)]
        let transport = try HTTP2Transport(tls: tls, timeout: timeout)
        stops.append { await transport.shutdown() }
        return transport
    }

    private func scripted(port: Int = 0, maxConcurrentStreams: Int = 100) async throws -> ScriptedHTTP2Server {
        let server = try await ScriptedHTTP2Server.start(ca: ca, port: port, maxConcurrentStreams: maxConcurrentStreams)
        stops.append { await server.stop() }
        return server
    }

    /// The answer's status and body, or the error.
    private static func post(_ transport: HTTP2Transport, _ baseURL: String, _ path: String) async -> Result<String, HTTP2TransportError> {
        do {
            let answer = try await transport.post(baseURL: baseURL, path: path, body: ByteBuffer(string: "{}"), headerCount: 0) { _ in }
            return .success("\(answer.status) \(answer.body.map { String(buffer: $0) } ?? "")")
        } catch let error as HTTP2TransportError {
            return .failure(error)
        } catch {
            return .failure(.badResponse("\(error)"))
        }
    }

    func testAResetStreamFailsThatRequestAloneNamingTheCode() async throws {
        let server = try await scripted()
        let transport = try transport()
        let reset = await Self.post(transport, server.baseURL, "/reset")
        XCTAssertEqual(reset, .failure(.streamReset(.refusedStream)))
        XCTAssertTrue(HTTP2TransportError.streamReset(.refusedStream).description.contains("RST_STREAM"))
        let answered = await Self.post(transport, server.baseURL, "/fine")
        XCTAssertEqual(answered, .success("200 /fine"))
        XCTAssertEqual(transport.connectionsMade, 1)
    }

    /// A scripted server, a transport, and two requests the server holds unanswered.
    private func twoHeldRequests() async throws -> (ScriptedHTTP2Server, HTTP2Transport, [Task<Result<String, HTTP2TransportError>, Never>]) {
        let server = try await scripted()
        let transport = try transport()
        let baseURL = server.baseURL
        let held = ["/hold-1", "/hold-2"].map { path in Task { await Self.post(transport, baseURL, path) } }
        let bothArrived = try await server.wait { $0.held == 2 }
        XCTAssertTrue(bothArrived)
        return (server, transport, held)
    }

    func testGoAwayFailsTheStreamsAboveTheLastOneAnswersTheRestAndTheNextRequestConnectsAgain() async throws {
        let (server, transport, held) = try await twoHeldRequests()
        let baseURL = server.baseURL
        // GOAWAY names the lower held stream as the last: it is answered, the other and this one are not.
        let goAway = await Self.post(transport, baseURL, "/goaway")
        let (older, newer) = (await held[0].value, await held[1].value)
        XCTAssertEqual([older, newer].filter { $0 == .success("200 /held") }.count, 1, "\(older) \(newer)")
        XCTAssertEqual([older, newer].filter { $0 == .failure(.goingAway(.noError)) }.count, 1, "\(older) \(newer)")
        XCTAssertEqual(goAway, .failure(.goingAway(.noError)))

        let next = await Self.post(transport, baseURL, "/after")
        XCTAssertEqual(next, .success("200 /after"))
        XCTAssertEqual(transport.connectionsMade, 2)
        XCTAssertEqual(server.log.connections, 2)
    }

    func testAClosedConnectionFailsEveryOpenRequestAndTheNextRequestConnectsAgain() async throws {
        let (server, transport, held) = try await twoHeldRequests()
        let baseURL = server.baseURL
        let closing = await Self.post(transport, baseURL, "/close")
        for outcome in [await held[0].value, await held[1].value, closing] {
            guard case .failure(.connectionClosed) = outcome else { return XCTFail("\(outcome)") }
        }
        let next = await Self.post(transport, baseURL, "/after")
        XCTAssertEqual(next, .success("200 /after"))
        XCTAssertEqual(transport.connectionsMade, 2)
    }

    func testOpenRequestsFailWhenTheServerGoesAndANewServerOnThePortIsReached() async throws {
        let server = try await scripted()
        let (port, baseURL) = (server.port, server.baseURL)
        let transport = try transport()
        async let open = Self.post(transport, baseURL, "/hold")
        let arrived = try await server.wait { $0.held == 1 }
        XCTAssertTrue(arrived)
        await server.stop()
        guard case .failure(.connectionClosed) = await open else { return XCTFail("the open request fails retryably") }

        let again = try await scripted(port: port)
        let next = await Self.post(transport, baseURL, "/again")
        XCTAssertEqual(next, .success("200 /again"))
        XCTAssertEqual(again.log.connections, 1)
    }

    func testNoMoreStreamsAreOpenedThanTheServerAllows() async throws {
        let server = try await scripted(maxConcurrentStreams: 3)
        let transport = try transport()
        let baseURL = server.baseURL
        // The first answer comes after the server's SETTINGS: from then on its limit holds.
        // (Before them the limit is the protocol's initial one, none, and NIOHTTP2Handler's 100.)
        let first = await Self.post(transport, baseURL, "/first")
        XCTAssertEqual(first, .success("200 /first"))
        let answers = await withTaskGroup(of: (Int, Result<String, HTTP2TransportError>).self) { group in
            for number in 0..<30 { group.addTask { (number, await Self.post(transport, baseURL, "/later-\(number)")) } }
            return await group.reduce(into: [Int: Result<String, HTTP2TransportError>]()) { $0[$1.0] = $1.1 }
        }
        for number in 0..<30 { XCTAssertEqual(answers[number], .success("200 /later-\(number)")) }
        XCTAssertLessThanOrEqual(server.log.mostOpen, 3)
        XCTAssertEqual(transport.connectionsMade, 1)
    }
}
