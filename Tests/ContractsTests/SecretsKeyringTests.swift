import Contracts
import Crypto
import Foundation
import XCTest

/// The deployment's keys: seals open only under the key, app and provider they were made for.
final class SecretsKeyringTests: XCTestCase {
    func testASealOpensWithItsKeyAndContextOnly() throws {
        let keyring = SecretsKeyring(current: SymmetricKey(size: .bits256))
        let app = UUID()
        let context = SecretsKeyring.context(app: app, provider: .apns)
        let secret = Data("-----BEGIN PRIVATE KEY-----\nabc\n-----END PRIVATE KEY-----\n".utf8)
        let sealed = keyring.seal(secret, context: context)
        XCTAssertEqual(sealed.keyId, keyring.currentKeyId)
        XCTAssertEqual(try keyring.open(sealed, context: context), secret)
        XCTAssertNotEqual(keyring.seal(secret, context: context).box, sealed.box, "every seal has its own nonce")
        XCTAssertThrowsError(try keyring.open(sealed, context: SecretsKeyring.context(app: UUID(), provider: .apns)))
        XCTAssertThrowsError(try keyring.open(sealed, context: SecretsKeyring.context(app: app, provider: .fcm)))
        XCTAssertThrowsError(try SecretsKeyring(current: SymmetricKey(size: .bits256)).open(sealed, context: context)) { error in
            XCTAssertEqual(error as? SecretsKeyError, .unknownKey(sealed.keyId))
        }
        var altered = Data(base64Encoded: sealed.box)!
        altered[altered.count / 2] ^= 1
        XCTAssertThrowsError(try keyring.open(SealedSecret(keyId: sealed.keyId, box: altered.base64EncodedString()), context: context)) { error in
            XCTAssertEqual(error as? SecretsKeyError, .cannotOpen(sealed.keyId))
        }
        XCTAssertThrowsError(try keyring.open(SealedSecret(keyId: sealed.keyId, box: "not base64!"), context: context))
    }

    func testAfterARotationThePreviousKeyStillOpensAndTheNewOneSeals() throws {
        let old = SymmetricKey(size: .bits256), new = SymmetricKey(size: .bits256)
        let base64 = { (key: SymmetricKey) in key.withUnsafeBytes { Data($0) }.base64EncodedString() }
        let before = try SecretsKeyring(current: base64(old))
        let sealedBefore = before.seal(Data("k".utf8), context: "c")
        let after = try SecretsKeyring(current: base64(new), previous: " \(base64(SymmetricKey(size: .bits256))),\(base64(old))")
        XCTAssertEqual(try after.open(sealedBefore, context: "c"), Data("k".utf8))
        XCTAssertEqual(after.seal(Data("k".utf8), context: "c").keyId, SecretsKeyring.keyId(of: new))
        XCTAssertNotEqual(after.currentKeyId, before.currentKeyId)
    }

    func testKeysMustBeBase64Of32Bytes() {
        for bad in ["", "short", Data(count: 16).base64EncodedString(), Data(count: 33).base64EncodedString(), "!!!!"] {
            XCTAssertThrowsError(try SecretsKeyring(current: bad), bad) { XCTAssertEqual($0 as? SecretsKeyError, .badKey) }
        }
        XCTAssertThrowsError(try SecretsKeyring(current: Data(count: 32).base64EncodedString(), previous: "nope"))
        XCTAssertNoThrow(try SecretsKeyring(current: Data(count: 32).base64EncodedString(), previous: ""))
    }

    func testStoredCredentialsJSONIsTheSameForTheSameCredentials() throws {
        let sealed = SealedSecret(keyId: "0011", box: "AAAA/+==")
        let credentials = PushCredentials(
            apns: APNsCredentials(teamId: "T", keyId: "K", bundleId: "b", environment: .sandbox, fingerprint: "SHA256:x", privateKey: sealed),
            fcm: FCMCredentials(projectId: "p", clientEmail: "e@x", privateKeyId: nil, tokenUri: "https://t/token", fingerprint: "f",
                                serviceAccount: sealed))
        let json = try credentials.storedJSON()
        XCTAssertEqual(json, try PushCredentials.fromStoredJSON(json).storedJSON())
        XCTAssertEqual(try PushCredentials.fromStoredJSON(json), credentials)
        XCTAssertTrue(json.hasPrefix(#"{"apns":{"bundleId":"b","environment":"sandbox","fingerprint":"SHA256:x","keyId":"K","#), json)
        XCTAssertTrue(json.contains(#""tokenUri":"https://t/token""#), "slashes are not escaped: \(json)")
    }
}
