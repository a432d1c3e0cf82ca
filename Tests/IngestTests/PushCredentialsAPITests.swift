import _CryptoExtras
import Contracts
import Crypto
import Foundation
import Hummingbird
import HummingbirdTesting
import Ingest
import Projections
import TestSupport
import WireCodec
import XCTest

/// `PUT/GET/DELETE /admin/v1/apps/{id}/credentials/{apns|fcm}`: keys are checked, sealed before
/// they become commands, and shown only without their secret.
final class PushCredentialsAPITests: XCTestCase {
    static let keys = TestPushKeys()
    let keys = PushCredentialsAPITests.keys
    let secretsKey = TestPushKeys.secretsKey()

    private func harness(secrets: Bool = true) throws -> Harness {
        var harness = Harness()
        if secrets { harness.configuration.secrets = try SecretsKeyring(current: secretsKey) }
        return harness
    }

    private let apnsPath = "/admin/v1/apps/\(Fixture.appId)/credentials/apns"
    private let fcmPath = "/admin/v1/apps/\(Fixture.appId)/credentials/fcm"

    private func apnsBody(_ overrides: [String: Any?] = [:]) throws -> String {
        var body: [String: Any] = ["teamId": "ABCDE12345", "keyId": "KEY1234567", "bundleId": "com.example.shop",
                                   "privateKey": keys.apnsPEM, "environment": "sandbox"]
        for (key, value) in overrides { body[key] = value }
        return try Fixture.json(body)
    }

    func testSettingAPNsCredentialsPublishesTheKeySealedForThatAppOnly() async throws {
        let harness = try harness()
        _ = await harness.seedApp()
        let (path, body) = (apnsPath, try apnsBody())
        let response = try await harness.test { client in try await client.admin(.put, path, json: body) }
        XCTAssertEqual(response.status, .accepted)
        let view = try decodeBody(AdminAPI.APNsCredentialsView.self, response)
        let keyring = try SecretsKeyring(current: secretsKey)
        let publicKey = try P256.Signing.PrivateKey(pemRepresentation: keys.apnsPEM).publicKey.derRepresentation
        let fingerprint = "SHA256:" + Data(SHA256.hash(data: publicKey)).base64EncodedString().replacingOccurrences(of: "=", with: "")
        XCTAssertEqual(view.teamId, "ABCDE12345")
        XCTAssertEqual(view.keyId, "KEY1234567")
        XCTAssertEqual(view.bundleId, "com.example.shop")
        XCTAssertEqual(view.environment, .sandbox)
        XCTAssertEqual(view.fingerprint, fingerprint)
        XCTAssertEqual(view.sealedWith, keyring.currentKeyId)
        XCTAssertFalse(String(decoding: Data(response.body.readableBytesView), as: UTF8.self).contains("PRIVATE KEY"))

        let command = try await harness.onlyPublished(PushCredentialsSet.self)
        XCTAssertNil(command.fcm)
        let apns = try XCTUnwrap(command.apns)
        XCTAssertEqual(AdminAPI.APNsCredentialsView(apns), view)
        let commands = await harness.publisher.commands
        let record = try XCTUnwrap(commands.first).value
        XCTAssertNil(String(decoding: record, as: UTF8.self).range(of: TestPushKeys.pemBody(keys.apnsPEM)),
                     "the key's text is not in the record")
        XCTAssertNil(String(decoding: record, as: UTF8.self).range(of: "PRIVATE KEY"))
        let opened = try keyring.open(apns.privateKey, context: SecretsKeyring.context(app: Fixture.appId, provider: .apns))
        XCTAssertEqual(String(decoding: opened, as: UTF8.self), keys.apnsPEM)
        XCTAssertThrowsError(try keyring.open(apns.privateKey, context: SecretsKeyring.context(app: Fixture.otherAppId, provider: .apns)),
                             "a seal moved to another app does not open")
        XCTAssertThrowsError(try keyring.open(apns.privateKey, context: SecretsKeyring.context(app: Fixture.appId, provider: .fcm)))
    }

    func testSettingFCMCredentialsSealsTheWholeServiceAccount() async throws {
        let harness = try harness()
        _ = await harness.seedApp()
        let (path, body) = (fcmPath, try Fixture.json(["serviceAccount": keys.serviceAccount()]))
        let response = try await harness.test { client in try await client.admin(.put, path, json: body) }
        XCTAssertEqual(response.status, .accepted)
        let view = try decodeBody(AdminAPI.FCMCredentialsView.self, response)
        XCTAssertEqual(view.projectId, keys.projectId)
        XCTAssertEqual(view.clientEmail, keys.clientEmail)
        XCTAssertEqual(view.privateKeyId, "0123456789abcdef")
        XCTAssertEqual(view.tokenUri, "https://oauth2.googleapis.com/token")
        let rsa = try _RSA.Signing.PrivateKey(pemRepresentation: keys.rsaPEM)
        XCTAssertEqual(view.fingerprint, "SHA256:" + Data(SHA256.hash(data: rsa.publicKey.derRepresentation)).base64EncodedString()
                        .replacingOccurrences(of: "=", with: ""))

        let command = try await harness.onlyPublished(PushCredentialsSet.self)
        let fcm = try XCTUnwrap(command.fcm)
        XCTAssertNil(command.apns)
        let commands = await harness.publisher.commands
        let record = String(decoding: try XCTUnwrap(commands.first).value, as: UTF8.self)
        XCTAssertNil(record.range(of: TestPushKeys.pemBody(keys.rsaPEM).prefix(64)), "no part of the key is in the record")
        let opened = try SecretsKeyring(current: secretsKey).open(fcm.serviceAccount,
                                                                  context: SecretsKeyring.context(app: Fixture.appId, provider: .fcm))
        let account = try JSONDecoder().decode(GoogleServiceAccount.self, from: opened)
        XCTAssertEqual(account.privateKey, keys.rsaPEM)
        XCTAssertEqual(account.clientEmail, keys.clientEmail)
        XCTAssertEqual(try JSONValue.parse(opened)["client_id"], .string("1234567890"), "the file is sealed whole")
    }

    func testBadCredentialsAreRefusedNamingTheFieldAndNeverQuotingTheKey() async throws {
        let harness = try harness()
        _ = await harness.seedApp()
        let ecKeyOfAnotherCurve = P384.Signing.PrivateKey().pemRepresentation
        let apnsCases: [(String, [String: Any?], String?)] = [
            ("no team", ["teamId": nil], "teamId"),
            ("short team", ["teamId": "ABC"], "teamId"),
            ("lower-case key id", ["keyId": "key1234567"], "keyId"),
            ("bundle with a slash", ["bundleId": "com/example"], "bundleId"),
            ("bundle starting with a dot", ["bundleId": ".example"], "bundleId"),
            ("no environment", ["environment": nil], "environment"),
            ("unknown environment", ["environment": "staging"], "environment"),
            ("no key", ["privateKey": nil], "privateKey"),
            ("not PEM", ["privateKey": "MIGTAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBHkwdwIBAQQg"], "privateKey"),
            ("a P-384 key", ["privateKey": ecKeyOfAnotherCurve], "privateKey"),
            ("an RSA key", ["privateKey": keys.rsaPEM], "privateKey"),
            ("a huge key", ["privateKey": String(repeating: "A", count: 20_000)], "privateKey"),
            ("a number for a key", ["privateKey": 5], nil),
            ("a field it does not list", ["topic": "com.example.shop"], "topic"),
        ]
        let accountCases: [(String, Any, String)] = [
            ("not an object", "text", "serviceAccount"),
            ("another type", keys.serviceAccount(extra: ["type": "authorized_user"]), "serviceAccount.type"),
            ("no project", keys.serviceAccount(extra: ["project_id": NSNull()]), "serviceAccount.project_id"),
            ("bad project", keys.serviceAccount(extra: ["project_id": "Has Spaces"]), "serviceAccount.project_id"),
            ("no email", keys.serviceAccount(extra: ["client_email": ""]), "serviceAccount.client_email"),
            ("not an email", keys.serviceAccount(extra: ["client_email": "nobody"]), "serviceAccount.client_email"),
            ("an EC key", keys.serviceAccount(extra: ["private_key": keys.apnsPEM]), "serviceAccount.private_key"),
            ("an http token URI", keys.serviceAccount(extra: ["token_uri": "http://oauth2.test/token"]), "serviceAccount.token_uri"),
            ("a number for the key", keys.serviceAccount(extra: ["private_key": 5]), "serviceAccount"),
        ]
        // (name, path, body, field): built here, where the non-Sendable JSON objects may live.
        let requests: [(String, String, String, String?)] =
            try apnsCases.map { ($0.0, apnsPath, try apnsBody($0.1), $0.2) }
            + accountCases.map { ($0.0, fcmPath, try Fixture.json(["serviceAccount": $0.1]), $0.2) }
            + [("an FCM field it does not list", fcmPath,
                try Fixture.json(["serviceAccount": keys.serviceAccount(extra: [:]), "projectId": "p"]), "projectId")]
        try await harness.test { client in
            for (name, path, body, field) in requests {
                let response = try await client.admin(.put, path, json: body)
                XCTAssertEqual(response.status, .badRequest, name)
                if let field { try assertProblem(response, .badRequest, field: field) }
                let text = String(decoding: Data(response.body.readableBytesView), as: UTF8.self)
                XCTAssertFalse(text.contains("BEGIN"), "\(name): the answer quotes no key")
            }
        }
        await assertNothingPublished(harness.publisher)
    }

    func testWithoutASecretsKeyCredentialsAreRefusedWith503() async throws {
        let harness = try harness(secrets: false)
        _ = await harness.seedApp()
        let (path, body) = (apnsPath, try apnsBody())
        let response = try await harness.test { client in try await client.admin(.put, path, json: body) }
        XCTAssertEqual(response.status, .serviceUnavailable)
        XCTAssertTrue(String(decoding: Data(response.body.readableBytesView), as: UTF8.self).contains("PUSHLINE_SECRETS_KEY"))
        await assertNothingPublished(harness.publisher)
    }

    func testCredentialsOfAnUnknownAppOrProviderAreNotFound() async throws {
        let harness = try harness()
        let (apnsPath, fcmPath, body) = (apnsPath, fcmPath, try apnsBody())
        try await harness.test { client in
            try assertProblem(try await client.admin(.put, apnsPath, json: body), .notFound, field: "mobileAppId")
            try assertProblem(try await client.admin(.get, apnsPath), .notFound, field: "mobileAppId")
            try assertProblem(try await client.admin(.delete, fcmPath), .notFound, field: "mobileAppId")
            try assertProblem(try await client.admin(.get, "/admin/v1/apps/\(Fixture.appId)/credentials/wns"), .notFound, field: "provider")
            let unauthenticated = try await client.execute(uri: apnsPath, method: .put, headers: [.contentType: "application/json"],
                                                           body: ByteBuffer(string: body))
            try assertProblem(unauthenticated, .unauthorized, field: "Authorization")
        }
        await assertNothingPublished(harness.publisher)
    }

    func testStoredCredentialsAreShownWithoutSecretsAndRemovedPerProvider() async throws {
        let harness = try harness()
        let keyring = try SecretsKeyring(current: secretsKey)
        let apns = APNsCredentials(teamId: "ABCDE12345", keyId: "KEY1234567", bundleId: "com.example.shop", environment: .production,
                                   fingerprint: "SHA256:abc", privateKey: keyring.seal(Data("secret".utf8), context: "x"))
        await harness.store.seed(app: AppRow(appId: Fixture.appId, orgId: Fixture.orgId, name: "app", createdAt: Date(),
                                             pushCredentials: PushCredentials(apns: apns)))
        let (apnsPath, fcmPath) = (apnsPath, fcmPath)
        try await harness.test { client in
            let shown = try await client.admin(.get, apnsPath)
            XCTAssertEqual(shown.status, .ok)
            XCTAssertEqual(try decodeBody(AdminAPI.APNsCredentialsView.self, shown), AdminAPI.APNsCredentialsView(apns))
            XCTAssertFalse(String(decoding: Data(shown.body.readableBytesView), as: UTF8.self).contains(apns.privateKey.box))
            let app = try decodeBody(AdminAPI.AppView.self, try await client.admin(.get, "/admin/v1/apps/\(Fixture.appId)"))
            XCTAssertEqual(app.pushCredentials, AdminAPI.PushCredentialsView(apns: AdminAPI.APNsCredentialsView(apns)))

            try assertProblem(try await client.admin(.get, fcmPath), .notFound, field: "provider")
            try assertProblem(try await client.admin(.delete, fcmPath), .notFound, field: "provider")
            let removal = try await client.admin(.delete, apnsPath)
            XCTAssertEqual(removal.status, .accepted)
        }
        let removed = try await harness.onlyPublished(PushCredentialsRemoved.self)
        XCTAssertEqual(removed, PushCredentialsRemoved(mobileAppId: Fixture.appId, provider: .apns, actor: .bootstrap,
                                                       requestId: removed.requestId))
    }
}
