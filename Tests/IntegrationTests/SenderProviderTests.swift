import Contracts
import Crypto
import Foundation
import OutboundRendering
import Sender
import TestSupport
import XCTest

/// The sender's core against the mock APNs and FCM servers: real HTTP/2 over TLS, trusting the
/// run's CA through a CA file as `PUSHLINE_SENDER_CA_FILE` gives it, every JWT checked by the
/// mock with swift-crypto.
final class SenderProviderTests: XCTestCase {
    private var stops: [@Sendable () async -> Void] = []

    override func tearDown() async throws {
        for stop in stops { await stop() }
    }

    private func client(_ ca: TestCA) throws -> ProviderClient {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("sender-ca-\(UUID().uuidString).pem").path
        try ca.writeCertificate(to: file)
        let client = try ProviderClient(caFile: file, timeout: .seconds(10))
        stops.append { try? await client.shutdown(); try? FileManager.default.removeItem(atPath: file) }
        return client
    }

    /// A mock APNs that trusts the test key of team ABCDE12345 for com.example.app, stopped after the test.
    private func startAPNs() async throws -> (TestCA, TestPushKeys, MockAPNsServer) {
        let ca = try TestCA()
        let keys = TestPushKeys()
        let publicKey = try P256.Signing.PrivateKey(pemRepresentation: keys.apnsPEM).publicKey
        let apns = MockAPNsServer(ca: ca, trustedKeys: [.init(teamId: "ABCDE12345", keyId: "KEY1234567", bundleId: "com.example.app",
                                                               publicKey: publicKey)])
        try await apns.start()
        stops.append { await apns.stop() }
        return (ca, keys, apns)
    }

    private static func record(_ token: String, platform: Platform, messageId: String = "m-1") throws -> OutboundPush {
        let send = NotificationRequested(deliveryId: UUID(), mobileAppId: UUID(), target: NotificationTarget(userIds: ["u"]),
                                         content: NotificationContent(title: "Hello", body: "there", priority: .high))
        return try OutboundPush.read(OutboundRecord.notification(send, deviceToken: token, platform: platform, messageId: messageId,
                                                                 sentAt: Date(), managedBadge: nil))
    }

    func testAPNsPushesShareOneProviderTokenAndEachAnswerIsRead() async throws {
        let (ca, keys, apns) = try await startAPNs()
        let client = try client(ca)
        let tokens = APNsProviderTokens()
        let key = try APNsSigningKey(teamId: "ABCDE12345", keyId: "KEY1234567", fingerprint: "f", pem: keys.apnsPEM)
        let (alive, dead, busy) = (String(repeating: "a1", count: 32), String(repeating: "d2", count: 32), String(repeating: "b3", count: 32))
        apns.setBehaviour(.unregistered(timestampMs: 1_800_000_000_123), for: dead)
        apns.setBehaviour(.tooManyRequests(retryAfterSeconds: 9), forNext: 1, requestsTo: busy)

        func send(_ token: String) async throws -> AttemptOutcome {
            let request = try APNsRequest.make(try Self.record(token, platform: .ios), bundleId: "com.example.app")
            return await client.send(request, baseURL: apns.baseURL, jwt: try await tokens.token(for: key))
        }
        let delivered = try await send(alive)
        XCTAssertEqual(delivered, .delivered)
        let unregistered = try await send(dead)
        XCTAssertEqual(unregistered, .unregistered(reason: "Unregistered", since: Date(timeIntervalSince1970: 1_800_000_000.123)))
        let throttled = try await send(busy)
        XCTAssertEqual(throttled, .retry(reason: "TooManyRequests", retryAfter: 9))
        let retried = try await send(busy)
        XCTAssertEqual(retried, .delivered, "the next attempt goes through")

        XCTAssertEqual(apns.distinctJWTs, 1, "one provider token for every push")
        let signed = tokens.signed
        XCTAssertEqual(signed, 1)
        let first = try XCTUnwrap(apns.requests(for: alive).first)
        XCTAssertEqual(first.headers["apns-topic"], "com.example.app")
        XCTAssertEqual(first.headers["apns-push-type"], "alert")
        XCTAssertEqual(first.headers["apns-id"], APNsRequest.apnsId(messageId: "m-1"))
        XCTAssertEqual(first.apnsId, APNsRequest.apnsId(messageId: "m-1"), "APNs answers with the id the push carried")

        // A key APNs does not know: the app's credentials are refused, the device is not at fault.
        let stranger = try APNsSigningKey(teamId: "ABCDE12345", keyId: "OTHERKEY12", fingerprint: "g",
                                          pem: P256.Signing.PrivateKey().pemRepresentation)
        let refused = await client.send(try APNsRequest.make(try Self.record(alive, platform: .ios), bundleId: "com.example.app"),
                                        baseURL: apns.baseURL, jwt: try await tokens.token(for: stranger))
        XCTAssertEqual(refused, .credentialsRejected(reason: "InvalidProviderToken"))
    }

    func testFCMMessagesShareOneAccessTokenUntilItIsRefused() async throws {
        let ca = try TestCA()
        let keys = TestPushKeys()
        let fcm = MockFCMServer(ca: ca, accounts: [try .init(keys)])
        try await fcm.start()
        stops.append { await fcm.stop() }
        // The account as Google hands it out, its token URI the mock's.
        let accountJSON = try JSONSerialization.data(withJSONObject: keys.serviceAccount(extra: ["token_uri": fcm.tokenURI]))
        let account = try FCMServiceAccount(json: accountJSON, fingerprint: "f")
        let client = try client(ca)
        let tokens = FCMAccessTokens()
        let (alive, gone) = (String(repeating: "Ab1_", count: 40), String(repeating: "Zz9-", count: 40))
        fcm.setBehaviour(.unregistered, for: gone)

        let send: @Sendable (String) async throws -> AttemptOutcome = { token in
            guard case .token(let access, _) = await tokens.token(for: account, client: client) else {
                return .failed(status: 0, reason: "no access token")
            }
            return await client.send(try FCMRequest.make(try Self.record(token, platform: .android), projectId: account.projectId),
                                     baseURL: fcm.baseURL, accessToken: access)
        }
        // Concurrent first sends make one exchange.
        let a = Task { try await send(alive) }
        let b = Task { try await send(alive) }
        let (first, second) = (try await a.value, try await b.value)
        XCTAssertEqual([first, second], [.delivered, .delivered])
        let unregistered = try await send(gone)
        XCTAssertEqual(unregistered, .unregistered(reason: "UNREGISTERED", since: nil))
        let exchanges = tokens.exchanges
        XCTAssertEqual(exchanges, 1)
        XCTAssertEqual(fcm.issuedAccessTokenCount, 1)
        let body = try XCTUnwrap(fcm.requests(for: alive).first?.json)
        XCTAssertEqual(body["message"]?["android"]?["priority"], .string("HIGH"))
        XCTAssertEqual(body["message"]?["data"]?["title"], .string("Hello"))

        // Google stops honouring the token: refused as the account's fault, then a new exchange works.
        fcm.revokeAccessTokens()
        let refused = try await send(alive)
        XCTAssertEqual(refused, .credentialsRejected(reason: "UNAUTHENTICATED"))
        tokens.invalidate(account)
        let again = try await send(alive)
        XCTAssertEqual(again, .delivered)
        XCTAssertEqual(fcm.issuedAccessTokenCount, 2)

        // An account Google does not know: the exchange is refused.
        let strangerJSON = try JSONSerialization.data(withJSONObject: TestPushKeys().serviceAccount(extra: ["token_uri": fcm.tokenURI]))
        let stranger = try FCMServiceAccount(json: strangerJSON, fingerprint: "g")
        guard case .refused = await tokens.token(for: stranger, client: client) else { return XCTFail("expected a refusal") }
    }

    func testAnIdleLanesConnectionIsClosedAndTheNextPushConnectsAgain() async throws {
        let (ca, keys, apns) = try await startAPNs()
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("sender-ca-\(UUID().uuidString).pem").path
        try ca.writeCertificate(to: file)
        let keyring = try SecretsKeyring(current: TestPushKeys.secretsKey())
        let pusher = try Pusher(keyring: keyring, endpoints: ProviderEndpoints(apnsOverride: apns.baseURL), caFile: file, timeout: .seconds(10),
                                concurrency: 8, appConcurrency: 4)
        stops.append { await pusher.shutdown(); try? FileManager.default.removeItem(atPath: file) }
        let record = try Self.record(String(repeating: "a1", count: 32), platform: .ios)
        let credentials = PushCredentials(apns: APNsCredentials(
            teamId: "ABCDE12345", keyId: "KEY1234567", bundleId: "com.example.app", environment: .production, fingerprint: "f",
            privateKey: keyring.seal(Data(keys.apnsPEM.utf8), context: SecretsKeyring.context(app: record.mobileAppId, provider: .apns))))
        let expiresAt = Date().addingTimeInterval(60)

        let first = await pusher.attempt(record, credentials: credentials, expiresAt: expiresAt)
        XCTAssertEqual(first, .outcome(.delivered))
        XCTAssertEqual(pusher.laneCount, 1)
        await pusher.closeIdleLanes(idle: .seconds(3600))
        XCTAssertEqual(pusher.laneCount, 1, "used a moment ago: kept")
        await pusher.closeIdleLanes(idle: .zero)
        XCTAssertEqual(pusher.laneCount, 0, "idle: closed")
        let second = await pusher.attempt(record, credentials: credentials, expiresAt: expiresAt)
        XCTAssertEqual(second, .outcome(.delivered), "a new lane, a new connection")
        XCTAssertEqual(pusher.laneCount, 1)
        XCTAssertEqual(apns.requests(for: record.deviceToken).map(\.status), [200, 200])
    }

}
