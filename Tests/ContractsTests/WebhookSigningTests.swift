import Contracts
import Crypto
import Foundation
import XCTest

/// The server-held signature of webhooks and callbacks (docs/API.md#webhook-signatures).
final class WebhookSigningTests: XCTestCase {
    let app = UUID(uuidString: "6F9619FF-8B86-D011-B42D-00C04FC964FF")!

    func testTheSignatureIsTheHMACOfTheTimestampAndTheBodyUnderTheSecretsText() throws {
        let body = Data(#"{"Status":"Success"}"#.utf8)
        let secret = "whsec_0123"
        let expected = HMAC<SHA256>.authenticationCode(for: Data("1795000000.".utf8) + body, using: SymmetricKey(data: Data(secret.utf8)))
            .map { String(format: "%02x", $0) }.joined()
        XCTAssertEqual(WebhookSigning.signature(secret: secret, timestamp: 1_795_000_000, body: body), expected)
        XCTAssertEqual(WebhookSigning.headerValue(secrets: [secret], timestamp: 1_795_000_000, body: body), "t=1795000000,v1=\(expected)")
    }

    func testEachAppHasItsOwnSecretDerivedFromTheKeyAndStableForIt() throws {
        let keyring = SecretsKeyring(current: SymmetricKey(size: .bits256))
        let secret = try XCTUnwrap(WebhookSigning.secret(app: app, keyring: keyring))
        XCTAssertTrue(secret.hasPrefix("whsec_") && secret.count == 6 + 64, secret)
        XCTAssertEqual(WebhookSigning.secret(app: app, keyring: keyring), secret)
        XCTAssertNotEqual(WebhookSigning.secret(app: UUID(), keyring: keyring), secret)
        XCTAssertNotEqual(WebhookSigning.secret(app: app, keyring: SecretsKeyring(current: SymmetricKey(size: .bits256))), secret)
        XCTAssertNil(WebhookSigning.secret(app: app, keyring: keyring, keyId: "0000000000000000"))
    }

    func testDuringARotationBothKeysSecretsSignAndTheCurrentComesFirst() throws {
        let old = SymmetricKey(size: .bits256), new = SymmetricKey(size: .bits256)
        let rotating = SecretsKeyring(current: new, previous: [old])
        XCTAssertEqual(rotating.keyIds, [SecretsKeyring.keyId(of: new), SecretsKeyring.keyId(of: old)])
        let secrets = WebhookSigning.secrets(app: app, keyring: rotating)
        XCTAssertEqual(secrets, [WebhookSigning.secret(app: app, keyring: SecretsKeyring(current: new)),
                                 WebhookSigning.secret(app: app, keyring: SecretsKeyring(current: old))].compactMap { $0 })
        let body = Data("{}".utf8), now = Date(timeIntervalSince1970: 1_795_000_000)
        let header = WebhookSigning.headerValue(secrets: secrets, timestamp: 1_795_000_000, body: body)
        for secret in secrets {
            XCTAssertTrue(WebhookSigning.verify(headerValue: header, body: body, secret: secret, now: now))
        }
    }

    func testVerificationFailsForATamperedBodyAnotherSecretOrAnOldTimestamp() {
        let body = Data(#"{"Status":"Failed"}"#.utf8), now = Date(timeIntervalSince1970: 1_795_000_000)
        let header = WebhookSigning.headerValue(secrets: ["whsec_a"], timestamp: 1_795_000_000, body: body)
        XCTAssertTrue(WebhookSigning.verify(headerValue: header, body: body, secret: "whsec_a", now: now.addingTimeInterval(299)))
        XCTAssertFalse(WebhookSigning.verify(headerValue: header, body: Data(#"{"Status":"Success"}"#.utf8), secret: "whsec_a", now: now))
        XCTAssertFalse(WebhookSigning.verify(headerValue: header, body: body, secret: "whsec_b", now: now))
        XCTAssertFalse(WebhookSigning.verify(headerValue: header, body: body, secret: "whsec_a", now: now.addingTimeInterval(301)))
        XCTAssertFalse(WebhookSigning.verify(headerValue: "v1=" + WebhookSigning.signature(secret: "whsec_a", timestamp: 0, body: body),
                                             body: body, secret: "whsec_a", now: now), "no timestamp")
    }
}
