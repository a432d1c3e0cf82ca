import Contracts
import Foundation
import TestSupport
import XCTest

/// The relay attack on the real stack (docs/API.md#webhook-hosts): an attacker holding only the
/// app's client token (it ships in the app) tries to make Pushline POST where they choose. With
/// the app's webhook hosts listed, a callback URL elsewhere is refused and nothing arrives; a
/// made-up device token sends no webhook; and what does arrive carries a signature made with a
/// secret only the server holds, which a tampered body fails.
final class WebhookRelayTests: XCTestCase {
    typealias API = DeviceRegistrationAPI
    private var stack: PushlineStack!
    private var receiver: WebhookReceiver!
    private let secretsKey = TestPushKeys.secretsKey()

    override func setUp() async throws {
        let secrets = ["PUSHLINE_SECRETS_KEY": secretsKey]
        stack = try await PushlineStack.start(processorEnvironment: secrets, ingestEnvironment: secrets)
        receiver = WebhookReceiver()
        try await receiver.start()
    }

    override func tearDown() async throws {
        await receiver?.stop()
        await stack?.stop()
    }

    private func register(_ app: AdminAPI.AppCreatedAnswer, user: String, device: String, callback: String,
                          header: String = API.callbackURLHeader, extra: [String: String] = [:]) async throws -> HTTPClientHelpers.Answer {
        try await HTTPClientHelpers.post(stack.registrationURL(org: app.orgId, "devices"), json: API.Registration(
            MobileAppId: app.mobileAppId.uuidString, UserId: user, ApiToken: app.clientToken, ApnsDeviceToken: device),
            headers: [header: callback, API.trackRegistrationHeader: "true"].merging(extra) { $1 })
    }

    func testWithWebhookHostsTheClientTokenCannotRelayAndWhatArrivesIsSignedByTheServer() async throws {
        let app = try await stack.createApp()
        let appURL = "\(stack.ingestURL)/admin/v1/apps/\(app.mobileAppId)"
        let open = try await HTTPClientHelpers.get(appURL, headers: stack.adminHeaders).decode(AdminAPI.AppView.self)
        XCTAssertEqual(open.statusWebhooks, "open", "a new app says its status webhooks are open")
        XCTAssertNil(open.webhookHosts)
        XCTAssertTrue(app.note.contains("webhookHosts"), app.note)

        // The admin lists the app's own receiver; `localhost` (the same machine, another name) is not on it.
        let patch = try await HTTPClientHelpers.request(.PATCH, appURL, body: try JSONEncoder().encode(AdminAPI.UpdateApp(webhookHosts: ["127.0.0.1"])),
                                                        headers: stack.adminHeaders)
        XCTAssertEqual(patch.status, 202, patch.text)
        let restricted = try await HTTPClientHelpers.get(appURL, headers: stack.adminHeaders).decode(AdminAPI.AppView.self)
        XCTAssertEqual(restricted.statusWebhooks, "restricted")
        XCTAssertEqual(restricted.webhookHosts, ["127.0.0.1"])

        // 1. The relay: a registration with the client token and a callback URL to another host.
        for header in [API.callbackURLHeader, API.statusCallbackURLHeader] {
            let relayed = try await register(app, user: "victim", device: Tokens.apns(1),
                                             callback: "http://localhost:\(receiver.port)/relay", header: header)
            XCTAssertEqual(relayed.status, 400, relayed.text)
            XCTAssertEqual(try relayed.decode(Problem.self).field, header)
        }
        // 2. A made-up device token to an allowed host, then a genuine registration of the same user
        //    (same partition, so it is applied after the made-up one).
        let madeUp = try await register(app, user: "victim", device: "not-a-device-token", callback: "\(receiver.baseURL)/made-up")
        XCTAssertEqual(madeUp.status, 202, madeUp.text)
        let madeUpId = try madeUp.decode(API.RegistrationAccepted.self).RegistrationRequestId
        let hookSecret = "hook-secret-\(UUID())"
        let genuine = try await register(app, user: "victim", device: Tokens.apns(2), callback: "\(receiver.baseURL)/genuine",
                                         extra: [API.callbackURLHeadersHeader: #"{"X-App-Key": "\#(hookSecret)"}"#])
        let genuineId = try genuine.decode(API.RegistrationAccepted.self).RegistrationRequestId
        let statuses = try await stack.decidedStatuses(org: app.orgId, app: app.mobileAppId, token: app.clientToken, ids: [madeUpId, genuineId])
        XCTAssertEqual(statuses.map(\.FailureReason), [.DryRunSendingFailed, nil])
        try await receiver.waitFor(count: 1)
        XCTAssertEqual(receiver.requests.map(\.path), ["/genuine"], "neither the relay nor the made-up token's webhook arrived")
        let jobs = try await stack.sqlite("SELECT id FROM outbox")
        XCTAssertEqual(jobs, ["registration-status:\(genuineId.lowercasedString)"])
        // The receiver got its header; the store holds only its seal.
        XCTAssertEqual(receiver.requests.first?.headers["x-app-key"], hookSecret)
        let stored = try await stack.sqlite("SELECT headers FROM outbox")
        XCTAssertFalse(stored.joined().contains(hookSecret), "\(stored)")
        XCTAssertTrue(stored.joined().contains(SealedHeaders.prefix), "\(stored)")

        // 3. The genuine webhook's signature checks out with the secret the admin API shows, and
        //    fails for a tampered body.
        let secretAnswer = try await HTTPClientHelpers.get("\(appURL)/webhook-signing-secret", headers: stack.adminHeaders)
        XCTAssertEqual(secretAnswer.status, 200, secretAnswer.text)
        let secret = try secretAnswer.decode(AdminAPI.WebhookSigningSecretView.self).secret
        let delivered = try XCTUnwrap(receiver.requests.first)
        let signature = try XCTUnwrap(delivered.headers[WebhookSigning.header])
        XCTAssertTrue(WebhookSigning.verify(headerValue: signature, body: delivered.body, secret: secret, now: Date()), signature)
        let tampered = Data(String(decoding: delivered.body, as: UTF8.self).replacingOccurrences(of: "Success", with: "Failed").utf8)
        XCTAssertNotEqual(tampered, delivered.body)
        XCTAssertFalse(WebhookSigning.verify(headerValue: signature, body: tampered, secret: secret, now: Date()))
        // The seed's signature is still there, keyed with the (public) client token.
        let body = try JSONDecoder().decode(API.StatusWebhook.self, from: delivered.body)
        XCTAssertEqual(body.Signature, ApiTokens.webhookSignature(apiToken: app.clientToken, callbackURL: "\(receiver.baseURL)/genuine"))
    }
}
