import _CryptoExtras
import AsyncHTTPClient
import Contracts
import Crypto
import Foundation
import NIOCore
import NIOHTTP1
import NIOSSL
import TestSupport
import WireCodec
import XCTest

/// The mock APNs and FCM servers answer as Apple's and Google's documentation says, over real
/// HTTP/2 and TLS that a client trusts only through the run's CA. The JWTs here are made with
/// swift-crypto directly, independently of the mocks' own checking.
final class PushMocksTests: XCTestCase {
    private static let teamId = "TEAM123456"
    private static let keyId = "KEY1234567"
    private static let bundleId = "com.example.pushline"
    private static let deviceToken = String(repeating: "ab12", count: 16)
    private static let alert = #"{"aps":{"alert":"hello"}}"#

    private var ca: TestCA!
    private var caFile: String!
    private var trustingTheCA: TLSConfiguration!
    private var client: HTTPClient!
    private var keys: TestPushKeys!
    private var apnsKey: P256.Signing.PrivateKey!
    private var apns: MockAPNsServer!
    private var fcm: MockFCMServer!

    override func setUp() async throws {
        ca = try TestCA()
        caFile = NSTemporaryDirectory() + "pushline-test-ca-\(UUID().uuidString).pem"
        try ca.writeCertificate(to: caFile)
        // Trust the run's CA and nothing else, read from the file a sender would be given.
        trustingTheCA = TLSConfiguration.makeClientConfiguration()
        trustingTheCA.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(caFile))
        var configuration = HTTPClient.Configuration(tlsConfiguration: trustingTheCA)
        configuration.httpVersion = .automatic
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)

        keys = TestPushKeys()
        apnsKey = try P256.Signing.PrivateKey(pemRepresentation: keys.apnsPEM)
        apns = MockAPNsServer(ca: ca, trustedKeys: [
            .init(teamId: Self.teamId, keyId: Self.keyId, bundleId: Self.bundleId, publicKey: apnsKey.publicKey),
        ])
        fcm = MockFCMServer(ca: ca, accounts: [try .init(keys)])
        try await apns.start()
        try await fcm.start()
    }

    override func tearDown() async throws {
        await apns?.stop()
        await fcm?.stop()
        try await client?.shutdown()
        if let caFile { try? FileManager.default.removeItem(atPath: caFile) }
    }

    // MARK: TLS

    func testTheServersSpeakHTTP2OverTLSThatOnlyTheRunsCAVouchesFor() async throws {
        let viaIP = try await call(.POST, "\(fcm.baseURL)/token", body: "")
        XCTAssertEqual(viaIP.version, .http2)
        let viaName = try await call(.POST, "https://localhost:\(fcm.port)/token", body: "")
        XCTAssertEqual(viaName.version, .http2)

        // The client retries a failed handshake until its connect timeout: keep that short.
        let systemRootsOnly = HTTPClient(eventLoopGroupProvider: .singleton,
                                         configuration: .init(timeout: .init(connect: .milliseconds(500))))
        var request = HTTPClientRequest(url: "\(apns.baseURL)/3/device/\(Self.deviceToken)")
        request.method = .POST
        do {
            _ = try await systemRootsOnly.execute(request, timeout: .seconds(30))
            XCTFail("a client that does not trust the run's CA was answered")
        } catch {
            XCTAssertTrue(error is NIOSSLError, "\(error)")
        }
        try await systemRootsOnly.shutdown()

        var http1Only = HTTPClient.Configuration(tlsConfiguration: trustingTheCA)
        http1Only.httpVersion = .http1Only
        let http1Client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: http1Only)
        do {
            _ = try await http1Client.execute(request, timeout: .seconds(30))
            XCTFail("an HTTP/1.1 client was answered")
        } catch {}
        try await http1Client.shutdown()
    }

    // MARK: APNs

    func testASignedPushGetsOKWithItsAPNsIdEchoedAndIsRecorded() async throws {
        let jwt = try providerToken()
        let apnsId = UUID().uuidString.lowercased()
        let reply = try await push(jwt: jwt, extraHeaders: ["apns-id": apnsId, "apns-priority": "10", "apns-expiration": "0",
                                                           "apns-collapse-id": "news"])
        XCTAssertEqual(reply.version, .http2)
        XCTAssertEqual(reply.status, 200)
        XCTAssertEqual(reply.headers.first(name: "apns-id"), apnsId)
        XCTAssertNotNil(reply.headers.first(name: "apns-unique-id").flatMap(UUID.init(uuidString:)))
        XCTAssertTrue(reply.body.isEmpty)

        let withoutId = try await push(jwt: jwt)
        XCTAssertEqual(withoutId.status, 200)
        let newId = try XCTUnwrap(withoutId.headers.first(name: "apns-id"))
        XCTAssertNotNil(UUID(uuidString: newId))
        XCTAssertNotEqual(newId, apnsId)

        let recorded = apns.requests(for: Self.deviceToken)
        XCTAssertEqual(recorded.count, 2)
        XCTAssertEqual(recorded.first?.status, 200)
        XCTAssertEqual(recorded.first?.apnsId, apnsId)
        XCTAssertEqual(recorded.first?.headers["apns-topic"], Self.bundleId)
        XCTAssertEqual(recorded.first?.headers["apns-collapse-id"], "news")
        XCTAssertEqual(recorded.first?.body, Data(Self.alert.utf8))
        XCTAssertEqual(recorded.first?.bearerToken, jwt)
        XCTAssertEqual(recorded.first?.providerToken?.headerString("kid"), Self.keyId)
        XCTAssertEqual(recorded.first?.providerToken?.claimString("iss"), Self.teamId)
        XCTAssertEqual(apns.distinctJWTs, 1)
    }

    func testProviderTokenProblemsGetApplesReasons() async throws {
        let otherKey = P256.Signing.PrivateKey()
        let now = Date()
        let cases: [(name: String, jwt: String?, reason: String)] = [
            ("signed by another key", try providerToken(key: otherKey), "InvalidProviderToken"),
            ("unknown key id", try providerToken(keyId: "UNKNOWN123"), "InvalidProviderToken"),
            ("another team", try providerToken(teamId: "OTHERTEAM1"), "InvalidProviderToken"),
            ("DER signature instead of r‖s", try providerToken(derSignature: true), "InvalidProviderToken"),
            ("not a JWT", "not-a-jwt", "InvalidProviderToken"),
            ("issued two hours ago", try providerToken(issuedAt: now - 7200), "ExpiredProviderToken"),
            ("missing", nil, "MissingProviderToken"),
        ]
        for c in cases {
            let reply = try await push(jwt: c.jwt)
            XCTAssertEqual(reply.status, 403, c.name)
            XCTAssertEqual(reply.json?["reason"], .string(c.reason), c.name)
            XCTAssertNotNil(reply.headers.first(name: "apns-id"), c.name)
        }
        XCTAssertEqual(apns.requests.map(\.status), Array(repeating: 403, count: cases.count))
    }

    func testHeaderPathAndPayloadProblemsGetApplesReasons() async throws {
        let jwt = try providerToken()
        let cases: [(name: String, token: String, headers: [String: String], body: String, status: Int, reason: String)] = [
            ("topic of another app", Self.deviceToken, ["apns-topic": "com.example.other"], Self.alert, 400, "TopicDisallowed"),
            ("VoIP push to the bare bundle id", Self.deviceToken, ["apns-push-type": "voip"], Self.alert, 400, "TopicDisallowed"),
            ("no topic", Self.deviceToken, ["apns-topic": ""], Self.alert, 400, "MissingTopic"),
            ("unknown push type", Self.deviceToken, ["apns-push-type": "loud"], Self.alert, 400, "InvalidPushType"),
            ("priority 7", Self.deviceToken, ["apns-priority": "7"], Self.alert, 400, "BadPriority"),
            ("expiration not a number", Self.deviceToken, ["apns-expiration": "soon"], Self.alert, 400, "BadExpirationDate"),
            ("collapse id of 65 bytes", Self.deviceToken, ["apns-collapse-id": String(repeating: "c", count: 65)], Self.alert,
             400, "BadCollapseId"),
            ("apns-id not a UUID", Self.deviceToken, ["apns-id": "123"], Self.alert, 400, "BadMessageId"),
            ("device token not hex", "not-hex", [:], Self.alert, 400, "BadDeviceToken"),
            ("empty payload", Self.deviceToken, [:], "", 400, "PayloadEmpty"),
            ("payload of 4097 bytes", Self.deviceToken, [:], Self.payload(bytes: 4097), 413, "PayloadTooLarge"),
            ("VoIP payload of 5121 bytes", Self.deviceToken, ["apns-push-type": "voip", "apns-topic": Self.bundleId + ".voip"],
             Self.payload(bytes: 5121), 413, "PayloadTooLarge"),
        ]
        for c in cases {
            let reply = try await push(token: c.token, jwt: jwt, extraHeaders: c.headers, body: c.body)
            XCTAssertEqual(reply.status, c.status, c.name)
            XCTAssertEqual(reply.json?["reason"], .string(c.reason), c.name)
        }

        let largest = try await push(jwt: jwt, body: Self.payload(bytes: 4096))
        XCTAssertEqual(largest.status, 200, "a payload may have 4096 bytes")
        let voip = try await push(jwt: jwt, extraHeaders: ["apns-push-type": "voip", "apns-topic": Self.bundleId + ".voip"],
                                  body: Self.payload(bytes: 5120))
        XCTAssertEqual(voip.status, 200, "a VoIP push to <bundle id>.voip may have 5120 bytes")
        let get = try await call(.GET, "\(apns.baseURL)/3/device/\(Self.deviceToken)", headers: ["authorization": "bearer \(jwt)"])
        XCTAssertEqual(get.status, 405)
        XCTAssertEqual(get.json?["reason"], .string("MethodNotAllowed"))
    }

    func testScriptedAPNsAnswers() async throws {
        let jwt = try providerToken()
        let gone = "0a0b", busy = "0c0d", flaky = "0e0f", slow = "1a1b", broken = "1c1d"
        apns.setBehaviour(.unregistered(timestampMs: 1_700_000_000_123), for: gone)
        apns.setBehaviour(.tooManyRequests(retryAfterSeconds: 7), for: busy)
        apns.setBehaviour(.status(500, reason: "InternalServerError"), forNext: 2, requestsTo: flaky)
        apns.setBehaviour(.slow(.milliseconds(200)), for: slow)
        apns.setBehaviour(.status(403, reason: "Forbidden"), for: broken)

        let unregistered = try await push(token: gone, jwt: jwt)
        XCTAssertEqual(unregistered.status, 410)
        XCTAssertEqual(unregistered.json, try JSONValue.parse(#"{"reason":"Unregistered","timestamp":1700000000123}"#))

        let tooMany = try await push(token: busy, jwt: jwt)
        XCTAssertEqual(tooMany.status, 429)
        XCTAssertEqual(tooMany.json?["reason"], .string("TooManyRequests"))
        XCTAssertEqual(tooMany.headers.first(name: "retry-after"), "7")

        var flakyStatuses: [Int] = []
        for _ in 0..<4 { flakyStatuses.append(try await push(token: flaky, jwt: jwt).status) }
        XCTAssertEqual(flakyStatuses, [500, 500, 200, 200])
        XCTAssertEqual(apns.requests(for: flaky).map(\.reason), ["InternalServerError", "InternalServerError", nil, nil])

        let slowReply = try await push(token: slow, jwt: jwt)
        XCTAssertEqual(slowReply.status, 200)
        let forbidden = try await push(token: broken, jwt: jwt)
        XCTAssertEqual(forbidden.json?["reason"], .string("Forbidden"))

        // A scripted answer is given only to a request that is otherwise valid.
        let unauthenticated = try await push(token: gone, jwt: nil)
        XCTAssertEqual(unauthenticated.json?["reason"], .string("MissingProviderToken"))

        apns.setBehaviour(nil, for: gone)
        let restored = try await push(token: gone, jwt: jwt)
        XCTAssertEqual(restored.status, 200)

        apns.responseDelay = .milliseconds(100)
        let delayed = try await push(jwt: jwt)
        XCTAssertEqual(delayed.status, 200)
    }

    func testRecordsCountDistinctProviderTokensAndResetForgetsThem() async throws {
        let first = try providerToken(issuedAt: Date() - 60)
        let second = try providerToken()
        XCTAssertNotEqual(first, second)
        for jwt in [first, first, second] { _ = try await push(jwt: jwt) }
        _ = try await push(token: "ffff", jwt: second)
        XCTAssertEqual(apns.requests.count, 4)
        XCTAssertEqual(apns.requests(for: Self.deviceToken).count, 3)
        XCTAssertEqual(apns.distinctJWTs, 2)

        apns.setBehaviour(.status(503, reason: "ServiceUnavailable"), for: "ffff")
        apns.reset()
        XCTAssertTrue(apns.requests.isEmpty)
        XCTAssertEqual(apns.distinctJWTs, 0)
        let afterReset = try await push(token: "ffff", jwt: second)
        XCTAssertEqual(afterReset.status, 200, "reset forgets scripted answers")
    }

    func testABehaviourRuleAnswersEveryDeviceTokenWithoutABehaviourOfItsOwn() async throws {
        let jwt = try providerToken()
        apns.setBehaviourRule { token in
            token.hasPrefix("dead") ? .unregistered(timestampMs: Int64(Date().timeIntervalSince1970 * 1000)) : nil
        }
        let overridden = "dead0002"
        apns.setBehaviour(.status(500, reason: "InternalServerError"), for: overridden)

        let before = Int64(Date().timeIntervalSince1970 * 1000)
        let dead = try await push(token: "dead0001", jwt: jwt)
        let after = Int64(Date().timeIntervalSince1970 * 1000)
        XCTAssertEqual(dead.status, 410)
        XCTAssertEqual(dead.json?["reason"], .string("Unregistered"))
        guard case .number(let timestamp)? = dead.json?["timestamp"] else { return XCTFail("no timestamp: \(dead.text)") }
        XCTAssertTrue((before...after).contains(Int64(timestamp)), "the rule's timestamp is the time of the request")
        let alive = try await push(token: "0dead001", jwt: jwt)
        XCTAssertEqual(alive.status, 200, "only the prefix counts")
        let scripted = try await push(token: overridden, jwt: jwt)
        XCTAssertEqual(scripted.status, 500, "a token's own behaviour comes before the rule")
        let unauthenticated = try await push(token: "dead0001", jwt: nil)
        XCTAssertEqual(unauthenticated.json?["reason"], .string("MissingProviderToken"), "the rule answers valid requests only")

        apns.setBehaviourRule(nil)
        let removed = try await push(token: "dead0001", jwt: jwt)
        XCTAssertEqual(removed.status, 200, "a removed rule answers nothing")
        apns.setBehaviourRule { _ in .status(503, reason: "ServiceUnavailable") }
        apns.reset()
        let afterReset = try await push(token: "dead0001", jwt: jwt)
        XCTAssertEqual(afterReset.status, 200, "reset forgets the rule")
    }

    func testAServerThatKeepsNoRequestsCountsThemByStatusOnTheGivenPort() async throws {
        await apns.stop()
        apns = MockAPNsServer(ca: ca, trustedKeys: [
            .init(teamId: Self.teamId, keyId: Self.keyId, bundleId: Self.bundleId, publicKey: apnsKey.publicKey),
        ], keepsRequests: false)
        let port = TestBroker.freePort()
        try await apns.start(port: port)
        XCTAssertEqual(apns.port, port)
        XCTAssertEqual(apns.baseURL, "https://127.0.0.1:\(port)")

        let jwt = try providerToken()
        apns.setBehaviourRule { $0.hasPrefix("dead") ? .status(410, reason: "Unregistered") : nil }
        for token in [Self.deviceToken, Self.deviceToken, "dead01"] { _ = try await push(token: token, jwt: jwt) }
        _ = try await push(jwt: nil)
        XCTAssertEqual(apns.answeredByStatus, [200: 2, 410: 1, 403: 1])
        XCTAssertTrue(apns.requests.isEmpty, "no request is kept")
        XCTAssertEqual(apns.distinctJWTs, 0)
        apns.reset()
        XCTAssertEqual(apns.answeredByStatus, [:])

        // The default server keeps its requests and counts them too.
        let accessToken = try await accessToken()
        _ = try await send(accessToken: accessToken, token: "registration-1")
        _ = try await send(accessToken: nil, token: "registration-1")
        XCTAssertEqual(fcm.answeredByStatus, [200: 1, 401: 1], "token requests are not counted among sends")
        XCTAssertEqual(fcm.requests.count, 2)
    }

    func testAPushLogGetsALineForEveryPushAnsweredEvenWhenNoRequestIsKept() async throws {
        await apns.stop()
        await fcm.stop()
        apns = MockAPNsServer(ca: ca, trustedKeys: [
            .init(teamId: Self.teamId, keyId: Self.keyId, bundleId: Self.bundleId, publicKey: apnsKey.publicKey),
        ], keepsRequests: false)
        fcm = MockFCMServer(ca: ca, accounts: [try .init(keys)], keepsRequests: false)
        try await apns.start()
        try await fcm.start()
        let path = NSTemporaryDirectory() + "pushline-push-log-\(UUID().uuidString).jsonl"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let log = try PushLog(path: path)
        apns.setPushObserver { log.append($0) }
        fcm.setPushObserver { log.append($0) }
        apns.setBehaviourRule { $0.hasPrefix("dead") ? .status(410, reason: "Unregistered") : nil }

        let delivery = UUID().uuidString.lowercased()
        let apnsId = UUID().uuidString.lowercased()
        let tracked = #"{"aps":{"alert":"hi"},"_dId":"\#(delivery)","_mId":"0-abc"}"#
        _ = try await push(jwt: try providerToken(), extraHeaders: ["apns-id": apnsId], body: tracked)
        _ = try await push(jwt: try providerToken(), extraHeaders: ["apns-id": apnsId], body: tracked)
        _ = try await push(token: "dead01", jwt: try providerToken())
        _ = try await push(jwt: nil)
        let accessToken = try await accessToken()
        _ = try await send(accessToken: accessToken, token: "registration-1",
                           extra: #","data":{"_dId":"\#(delivery)","_mId":"1-def"}"#)
        _ = try await send(accessToken: nil, token: "registration-1")
        XCTAssertTrue(apns.requests.isEmpty && fcm.requests.isEmpty, "no request is kept")

        let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n")
        let pushes = try lines.map { try XCTUnwrap(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
        XCTAssertEqual(pushes.count, 6, "one line per push answered, whatever the answer:\n\(lines.joined(separator: "\n"))")
        XCTAssertEqual(pushes.map { $0["provider"] as? String }, ["apns", "apns", "apns", "apns", "fcm", "fcm"])
        XCTAssertEqual(pushes.map { $0["status"] as? Int }, [200, 200, 410, 403, 200, 401])
        XCTAssertEqual(pushes[0]["deviceToken"] as? String, Self.deviceToken)
        XCTAssertEqual(pushes[0]["apnsId"] as? String, apnsId)
        XCTAssertEqual(pushes[1]["apnsId"] as? String, apnsId, "a repeat carries its apns-id")
        XCTAssertEqual(pushes[0]["deliveryId"] as? String, delivery)
        XCTAssertEqual(pushes[0]["messageId"] as? String, "0-abc")
        XCTAssertNil(pushes[2]["messageId"], "a payload without _mId has none")
        XCTAssertEqual(pushes[2]["deviceToken"] as? String, "dead01")
        XCTAssertEqual(pushes[4]["deviceToken"] as? String, "registration-1")
        XCTAssertEqual(pushes[4]["deliveryId"] as? String, delivery)
        XCTAssertEqual(pushes[4]["messageId"] as? String, "1-def")
        XCTAssertTrue((pushes[4]["messageName"] as? String)?.hasPrefix("projects/\(keys.projectId)/messages/") ?? false)
        XCTAssertNil(pushes[5]["messageName"], "a refused send has no message name")
        XCTAssertTrue(pushes.allSatisfy { ($0["at"] as? Double).map { abs($0 - Date().timeIntervalSince1970) < 60 } ?? false })
    }

    // MARK: FCM

    func testASignedAssertionGetsAnAccessTokenThatSendsAMessage() async throws {
        let exchange = try await exchangeToken(assertion: try assertion())
        XCTAssertEqual(exchange.version, .http2)
        XCTAssertEqual(exchange.status, 200)
        XCTAssertEqual(exchange.json?["token_type"], .string("Bearer"))
        XCTAssertEqual(exchange.json?["expires_in"], .number(3599))
        guard case .string(let accessToken)? = exchange.json?["access_token"] else { return XCTFail("no access token") }
        XCTAssertEqual(fcm.issuedAccessTokenCount, 1)
        XCTAssertEqual(fcm.tokenRequests.first?.assertion?.claimString("iss"), keys.clientEmail)

        let sent = try await send(accessToken: accessToken, token: "registration-1", extra: #","data":{"k":"v"}"#)
        XCTAssertEqual(sent.version, .http2)
        XCTAssertEqual(sent.status, 200)
        guard case .string(let name)? = sent.json?["name"] else { return XCTFail("no message name: \(sent.text)") }
        XCTAssertTrue(name.hasPrefix("projects/\(keys.projectId)/messages/"), name)

        let recorded = fcm.requests(for: "registration-1")
        XCTAssertEqual(recorded.count, 1)
        XCTAssertEqual(recorded.first?.accessToken, accessToken)
        XCTAssertEqual(recorded.first?.projectId, keys.projectId)
        XCTAssertEqual(recorded.first?.json?["message"]?["data"], .object(["k": .string("v")]))
        XCTAssertEqual(fcm.distinctAccessTokens, 1)

        let validateOnly = try await call(.POST, sendURL(), headers: ["authorization": "Bearer \(accessToken)"],
                                          body: #"{"validate_only":true,"message":{"token":"registration-1"}}"#)
        XCTAssertEqual(validateOnly.json?["name"], .string("projects/\(keys.projectId)/messages/fake_message_id"))
    }

    func testBadAssertionsAreRefusedAsGoogleDoes() async throws {
        let now = Date()
        let cases: [(name: String, assertion: String, error: String)] = [
            ("signed with another key", try assertion(key: _RSA.Signing.PrivateKey(keySize: .bits2048)), "invalid_grant"),
            ("unknown account", try assertion(clientEmail: "someone@else.iam.gserviceaccount.com"), "invalid_grant"),
            ("Google's audience, not the token URI used", try assertion(audience: "https://oauth2.googleapis.com/token"),
             "invalid_grant"),
            ("expired", try assertion(issuedAt: now - 7200), "invalid_grant"),
            ("valid for two hours", try assertion(lifetime: 7200), "invalid_grant"),
            ("no FCM scope", try assertion(scope: "https://www.googleapis.com/auth/userinfo.email"), "invalid_scope"),
        ]
        for c in cases {
            let reply = try await exchangeToken(assertion: c.assertion)
            XCTAssertEqual(reply.status, 400, c.name)
            XCTAssertEqual(reply.json?["error"], .string(c.error), c.name)
            guard case .string? = reply.json?["error_description"] else { return XCTFail("\(c.name): no error_description") }
        }
        let wrongGrant = try await call(.POST, fcm.tokenURI, headers: ["content-type": "application/x-www-form-urlencoded"],
                                        body: "grant_type=client_credentials&assertion=\(try assertion())")
        XCTAssertEqual(wrongGrant.json?["error"], .string("unsupported_grant_type"))
        XCTAssertEqual(fcm.issuedAccessTokenCount, 0)
    }

    func testSendsWithoutAValidAccessTokenAreRefused() async throws {
        let unauthenticated = try await send(accessToken: nil, token: "registration-1")
        XCTAssertEqual(unauthenticated.status, 401)
        XCTAssertEqual(unauthenticated.json?["error"]?["status"], .string("UNAUTHENTICATED"))
        XCTAssertEqual(unauthenticated.json?["error"]?["code"], .number(401))
        let madeUp = try await send(accessToken: "ya29.made-up", token: "registration-1")
        XCTAssertEqual(madeUp.status, 401)

        let revoked = try await accessToken()
        fcm.revokeAccessTokens()
        let withRevoked = try await send(accessToken: revoked, token: "registration-1")
        XCTAssertEqual(withRevoked.status, 401)

        fcm.accessTokenLifetime = 0
        let expired = try await exchangeToken(assertion: try assertion())
        XCTAssertEqual(expired.json?["expires_in"], .number(0))
        guard case .string(let expiredToken)? = expired.json?["access_token"] else { return XCTFail("no access token") }
        let withExpired = try await send(accessToken: expiredToken, token: "registration-1")
        XCTAssertEqual(withExpired.status, 401)

        fcm.accessTokenLifetime = 3599
        let fresh = try await accessToken()
        let otherProject = try await send(accessToken: fresh, token: "registration-1", project: "someone-elses")
        XCTAssertEqual(otherProject.status, 403)
        XCTAssertEqual(otherProject.json?["error"]?["status"], .string("PERMISSION_DENIED"))
        let withFresh = try await send(accessToken: fresh, token: "registration-1")
        XCTAssertEqual(withFresh.status, 200)
        XCTAssertEqual(fcm.issuedAccessTokenCount, 3)
    }

    func testMalformedSendsAreInvalidArgument() async throws {
        let accessToken = try await accessToken()
        let bodies = [
            #"{"message":{"data":{"k":"v"}}}"#,
            #"{"message":{"token":"registration-1","data":{"badge":3}}}"#,
            #"{"message":{"token":"registration-1","topic":"news"}}"#,
            #"{"message":{"token":"registration-1","priority":"high"}}"#,
            #"{"message":{"token":"registration-1"},"dry_run":true}"#,
            #"{"to":"registration-1"}"#,
            "not json",
        ]
        for body in bodies {
            let reply = try await call(.POST, sendURL(), headers: ["authorization": "Bearer \(accessToken)"], body: body)
            XCTAssertEqual(reply.status, 400, body)
            XCTAssertEqual(reply.json?["error"]?["status"], .string("INVALID_ARGUMENT"), body)
        }
    }

    func testScriptedFCMAnswers() async throws {
        let accessToken = try await accessToken()
        fcm.setBehaviour(.unregistered, for: "gone")
        fcm.setBehaviour(.invalidToken, for: "garbled")
        fcm.setBehaviour(.tooManyRequests(retryAfterSeconds: 30), for: "busy")
        fcm.setBehaviour(.status(403, status: "PERMISSION_DENIED", errorCode: "SENDER_ID_MISMATCH"), for: "foreign")
        fcm.setBehaviour(.status(503, status: "UNAVAILABLE", errorCode: "UNAVAILABLE"), forNext: 1, requestsTo: "flaky")
        fcm.setBehaviour(.slow(.milliseconds(200)), for: "slow")

        let gone = try await send(accessToken: accessToken, token: "gone")
        XCTAssertEqual(gone.status, 404)
        XCTAssertEqual(gone.json, try JSONValue.parse("""
            {"error":{"code":404,"message":"Requested entity was not found.","status":"NOT_FOUND","details":[
              {"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"UNREGISTERED"}]}}
            """))

        let garbled = try await send(accessToken: accessToken, token: "garbled")
        XCTAssertEqual(garbled.status, 400)
        XCTAssertEqual(garbled.json?["error"]?["status"], .string("INVALID_ARGUMENT"))
        XCTAssertEqual(fcmErrorCode(garbled), "INVALID_ARGUMENT")

        let busy = try await send(accessToken: accessToken, token: "busy")
        XCTAssertEqual(busy.status, 429)
        XCTAssertEqual(busy.json?["error"]?["status"], .string("RESOURCE_EXHAUSTED"))
        XCTAssertEqual(fcmErrorCode(busy), "QUOTA_EXCEEDED")
        XCTAssertEqual(busy.headers.first(name: "retry-after"), "30")

        let foreign = try await send(accessToken: accessToken, token: "foreign")
        XCTAssertEqual(foreign.status, 403)
        XCTAssertEqual(fcmErrorCode(foreign), "SENDER_ID_MISMATCH")

        let firstFlaky = try await send(accessToken: accessToken, token: "flaky")
        XCTAssertEqual(firstFlaky.status, 503)
        let secondFlaky = try await send(accessToken: accessToken, token: "flaky")
        XCTAssertEqual(secondFlaky.status, 200)
        XCTAssertEqual(fcm.requests(for: "flaky").map(\.errorStatus), ["UNAVAILABLE", nil])

        let slowReply = try await send(accessToken: accessToken, token: "slow")
        XCTAssertEqual(slowReply.status, 200)

        fcm.responseDelay = .milliseconds(100)
        let delayed = try await send(accessToken: accessToken, token: "registration-1")
        XCTAssertEqual(delayed.status, 200)
        fcm.reset()
        XCTAssertTrue(fcm.requests.isEmpty)
        let afterReset = try await send(accessToken: accessToken, token: "gone")
        XCTAssertEqual(afterReset.status, 200, "reset forgets scripted answers")
    }

    func testAnFCMBehaviourRuleAnswersEveryRegistrationTokenWithoutABehaviourOfItsOwn() async throws {
        await fcm.stop()
        fcm = MockFCMServer(ca: ca, accounts: [try .init(keys)], keepsRequests: false)
        try await fcm.start()
        let accessToken = try await accessToken()
        fcm.setBehaviourRule { $0.hasPrefix("dead") ? .unregistered : nil }
        fcm.setBehaviour(.invalidToken, for: "dead-but-garbled")

        let dead = try await send(accessToken: accessToken, token: "dead-1")
        XCTAssertEqual(dead.status, 404)
        XCTAssertEqual(dead.json?["error"]?["status"], .string("NOT_FOUND"))
        XCTAssertEqual(fcmErrorCode(dead), "UNREGISTERED")
        let alive = try await send(accessToken: accessToken, token: "alive-dead-1")
        XCTAssertEqual(alive.status, 200, "only the prefix counts")
        let scripted = try await send(accessToken: accessToken, token: "dead-but-garbled")
        XCTAssertEqual(scripted.status, 400, "a token's own behaviour comes before the rule")
        XCTAssertEqual(fcm.answeredByStatus, [404: 1, 200: 1, 400: 1])
        XCTAssertTrue(fcm.requests.isEmpty, "no send is kept")
        XCTAssertEqual(fcm.tokenRequests.count, 1, "token requests are still recorded")

        fcm.reset()
        XCTAssertEqual(fcm.answeredByStatus, [:])
        let afterReset = try await send(accessToken: accessToken, token: "dead-1")
        XCTAssertEqual(afterReset.status, 200, "reset forgets the rule")
    }

    // MARK: Requests

    /// An answer, with the HTTP version it came over.
    private struct Reply {
        var status: Int
        var headers: HTTPHeaders
        var body: Data
        var version: HTTPVersion

        var json: JSONValue? { try? JSONValue.parse(body) }
        var text: String { String(decoding: body, as: UTF8.self) }
    }

    private func call(_ method: HTTPMethod, _ url: String, headers: [String: String] = [:], body: String? = nil) async throws -> Reply {
        var request = HTTPClientRequest(url: url)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body { request.body = .bytes(ByteBuffer(string: body)) }
        let response = try await client.execute(request, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 1 << 20)
        return Reply(status: Int(response.status.code), headers: response.headers, body: Data(buffer: body), version: response.version)
    }

    /// A push as Apple's provider API takes it; `extraHeaders` replace the defaults (an empty
    /// value drops the header).
    private func push(token: String = PushMocksTests.deviceToken, jwt: String?, extraHeaders: [String: String] = [:],
                      body: String = PushMocksTests.alert) async throws -> Reply {
        var headers = ["apns-topic": Self.bundleId, "apns-push-type": "alert"]
        if let jwt { headers["authorization"] = "bearer \(jwt)" }
        headers.merge(extraHeaders) { $1 }
        return try await call(.POST, "\(apns.baseURL)/3/device/\(token)", headers: headers.filter { !$0.value.isEmpty }, body: body)
    }

    /// A JSON object of exactly `bytes` bytes.
    private static func payload(bytes: Int) -> String {
        let frame = #"{"aps":{},"x":""}"#
        return #"{"aps":{},"x":""# + String(repeating: "x", count: bytes - frame.utf8.count) + #""}"#
    }

    private func exchangeToken(assertion: String) async throws -> Reply {
        try await call(.POST, fcm.tokenURI, headers: ["content-type": "application/x-www-form-urlencoded"],
                       body: "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(assertion)")
    }

    /// An access token from a correctly signed assertion.
    private func accessToken() async throws -> String {
        let reply = try await exchangeToken(assertion: try assertion())
        guard case .string(let token)? = reply.json?["access_token"] else { throw TestFailure("no access token: \(reply.text)") }
        return token
    }

    private func sendURL(project: String? = nil) -> String {
        "\(fcm.baseURL)/v1/projects/\(project ?? keys.projectId)/messages:send"
    }

    private func send(accessToken: String?, token: String, project: String? = nil, extra: String = "") async throws -> Reply {
        var headers = ["content-type": "application/json"]
        if let accessToken { headers["authorization"] = "Bearer \(accessToken)" }
        return try await call(.POST, sendURL(project: project), headers: headers,
                              body: #"{"message":{"token":"\#(token)","notification":{"title":"hi"}\#(extra)}}"#)
    }

    /// The `errorCode` of the FCM error in a Google error's details.
    private func fcmErrorCode(_ reply: Reply) -> String? {
        guard case .array(let details)? = reply.json?["error"]?["details"] else { return nil }
        for detail in details where detail["@type"] == .string("type.googleapis.com/google.firebase.fcm.v1.FcmError") {
            if case .string(let code)? = detail["errorCode"] { return code }
        }
        return nil
    }

    // MARK: JWTs, made as Apple and Google specify them

    private func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    private func base64URLJSON(_ object: [String: Any]) throws -> String {
        base64URL(try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]))
    }

    /// An APNs provider token: ES256, `kid` in the header, `iss` and `iat` in the claims.
    private func providerToken(key: P256.Signing.PrivateKey? = nil, keyId: String = PushMocksTests.keyId,
                               teamId: String = PushMocksTests.teamId, issuedAt: Date = Date(),
                               derSignature: Bool = false) throws -> String {
        let header = try base64URLJSON(["alg": "ES256", "kid": keyId])
        let claims = try base64URLJSON(["iss": teamId, "iat": Int(issuedAt.timeIntervalSince1970)])
        let signature = try (key ?? apnsKey!).signature(for: Data("\(header).\(claims)".utf8))
        return "\(header).\(claims).\(base64URL(derSignature ? signature.derRepresentation : signature.rawRepresentation))"
    }

    /// A service account's assertion for Google's token endpoint: RS256 over the claims Google lists.
    private func assertion(key: _RSA.Signing.PrivateKey? = nil, clientEmail: String? = nil, audience: String? = nil,
                           scope: String = "https://www.googleapis.com/auth/firebase.messaging", issuedAt: Date = Date(),
                           lifetime: Int = 3600) throws -> String {
        let iat = Int(issuedAt.timeIntervalSince1970)
        let header = try base64URLJSON(["alg": "RS256", "typ": "JWT", "kid": "0123456789abcdef"])
        let claims = try base64URLJSON(["iss": clientEmail ?? keys.clientEmail, "scope": scope, "aud": audience ?? fcm.tokenURI,
                                        "iat": iat, "exp": iat + lifetime])
        let signingKey = try key ?? _RSA.Signing.PrivateKey(pemRepresentation: keys.rsaPEM)
        let signature = try signingKey.signature(for: Data("\(header).\(claims)".utf8), padding: .insecurePKCS1v1_5)
        return "\(header).\(claims).\(base64URL(signature.rawRepresentation))"
    }
}
