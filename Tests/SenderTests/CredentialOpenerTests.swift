import Contracts
import Crypto
import Foundation
import Sender
import TestSupport
import XCTest

/// Sealed credentials opened for sending: only for their app, only with a key the deployment holds.
final class CredentialOpenerTests: XCTestCase {
    static let keys = TestPushKeys()
    let keys = CredentialOpenerTests.keys
    let app = UUID()

    private func apns(_ keyring: SecretsKeyring, app: UUID? = nil, pem: String? = nil) -> APNsCredentials {
        APNsCredentials(teamId: "ABCDE12345", keyId: "KEY1234567", bundleId: "com.example.app", environment: .sandbox, fingerprint: "SHA256:x",
                        privateKey: keyring.seal(Data((pem ?? keys.apnsPEM).utf8), context: SecretsKeyring.context(app: app ?? self.app, provider: .apns)))
    }

    func testSealedKeysOpenForTheirAppWithTheDeploymentKey() throws {
        let keyring = try SecretsKeyring(current: TestPushKeys.secretsKey())
        let opener = CredentialOpener(keyring: keyring)
        let key = try opener.apnsKey(app: app, apns(keyring))
        XCTAssertEqual(key.teamId, "ABCDE12345")
        XCTAssertEqual(key.keyId, "KEY1234567")
        let account = try opener.fcmAccount(app: app, FCMCredentials(
            projectId: keys.projectId, clientEmail: keys.clientEmail, privateKeyId: nil, tokenUri: "https://t/token", fingerprint: "f",
            serviceAccount: keyring.seal(try JSONSerialization.data(withJSONObject: keys.serviceAccount()),
                                         context: SecretsKeyring.context(app: app, provider: .fcm))))
        XCTAssertEqual(account.clientEmail, keys.clientEmail)
    }

    func testCredentialsThatDoNotOpenOrParseAreACredentialsError() throws {
        let keyring = try SecretsKeyring(current: TestPushKeys.secretsKey())
        let opener = CredentialOpener(keyring: keyring)
        let cases: [(String, APNsCredentials)] = [
            ("another app's seal", apns(keyring, app: UUID())),
            ("another deployment's key", apns(try SecretsKeyring(current: TestPushKeys.secretsKey()))),
            ("not a key", apns(keyring, pem: "not a key")),
        ]
        for (name, credentials) in cases {
            XCTAssertThrowsError(try opener.apnsKey(app: app, credentials), name) { error in
                guard case SenderError.credentials(let why) = error else { return XCTFail("\(name): \(error)") }
                XCTAssertFalse(why.contains("PRIVATE KEY"), "\(name): the message quotes no key")
            }
        }
    }

    func testEndpointsAreApplesAndGooglesUnlessOverridden() {
        XCTAssertEqual(ProviderEndpoints().apns(.production), "https://api.push.apple.com")
        XCTAssertEqual(ProviderEndpoints().apns(.sandbox), "https://api.sandbox.push.apple.com")
        XCTAssertEqual(ProviderEndpoints().fcm, "https://fcm.googleapis.com")
        let local = ProviderEndpoints(apnsOverride: "https://127.0.0.1:1", fcm: "https://127.0.0.1:2")
        XCTAssertEqual(local.apns(.production), "https://127.0.0.1:1")
        XCTAssertEqual(local.apns(.sandbox), "https://127.0.0.1:1")
    }

    func testAServiceAccountsTokenURIMustBeGooglesOrOnTheConfiguredFCMHost() {
        let google = ProviderEndpoints()
        XCTAssertTrue(google.allowsTokenURI("https://oauth2.googleapis.com/token"))
        for uri in ["https://attacker.example/token", "http://oauth2.googleapis.com/token", "https://oauth2.googleapis.com:8443/token",
                    "https://oauth2.googleapis.com.attacker.example/token", "https://fcm.googleapis.com/token",
                    "https://169.254.169.254/latest/meta-data", "file:///etc/passwd", "not a url", ""] {
            XCTAssertFalse(google.allowsTokenURI(uri), uri)
        }
        // A deployment that names its FCM endpoint (the mock servers) also trusts that origin.
        let mock = ProviderEndpoints(fcm: "https://127.0.0.1:8443")
        XCTAssertTrue(mock.allowsTokenURI("https://127.0.0.1:8443/token"))
        XCTAssertTrue(mock.allowsTokenURI("https://oauth2.googleapis.com/token"))
        XCTAssertFalse(mock.allowsTokenURI("https://127.0.0.1:9443/token"))
        XCTAssertFalse(mock.allowsTokenURI("http://127.0.0.1:8443/token"))
    }
}
