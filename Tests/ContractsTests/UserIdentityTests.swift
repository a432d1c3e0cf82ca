import Contracts
import Crypto
import Foundation
import WireCodec
import XCTest

/// User assertions (docs/API.md#verified-user-identity): what the docs tell a backend to compute
/// is what ingest accepts, and nothing else is; registrations and cleanups record a checked
/// assertion, and records from before assertions read as not verified, byte for byte as before.
final class UserIdentityTests: XCTestCase {
    /// hmac.new(b"identity-secret-1", b"user-1", hashlib.sha256).hexdigest(), and what
    /// `printf %s user-1 | openssl dgst -sha256 -hmac identity-secret-1` prints.
    static let userOneAssertion = "08ccab596ee6a0825fb3c3b28d39c6333ad0dad43138a3ff2e1518cc47929b5d"

    func testTheAssertionIsTheHexHMACOfTheUserIdUnderTheSecretAsText() {
        XCTAssertEqual(UserIdentity.assertion(userId: "user-1", secret: "identity-secret-1"), Self.userOneAssertion)
        // A BW user id, as Pushline makes it of the phone number.
        XCTAssertEqual(UserIdentity.assertion(userId: "tel:+19883999901", secret: "identity-secret-1"),
                       "c96acfbce8072dd57d6dd420ff814693655fa3cb12dfa0813314576534cc66fa")
    }

    func testOnlyTheAssertionOfThatUserUnderThatSecretVerifies() {
        XCTAssertTrue(UserIdentity.verify(Self.userOneAssertion, userId: "user-1", secret: "identity-secret-1"))
        XCTAssertTrue(UserIdentity.verify(Self.userOneAssertion.uppercased(), userId: "user-1", secret: "identity-secret-1"))
        XCTAssertFalse(UserIdentity.verify(Self.userOneAssertion, userId: "user-2", secret: "identity-secret-1"))
        XCTAssertFalse(UserIdentity.verify(Self.userOneAssertion, userId: "user-1", secret: "identity-secret-2"))
        XCTAssertFalse(UserIdentity.verify(String(Self.userOneAssertion.dropLast()), userId: "user-1", secret: "identity-secret-1"))
        XCTAssertFalse(UserIdentity.verify("", userId: "user-1", secret: "identity-secret-1"))
    }

    func testANewSecretHas256BitsAndIsNeverTheSame() {
        let a = UserIdentity.generateSecret(), b = UserIdentity.generateSecret()
        XCTAssertNotEqual(a, b)
        XCTAssertEqual(a.count, 43, "32 bytes in base64url without padding")
    }

    func testASealedSecretOpensForItsAppOnly() throws {
        let keyring = SecretsKeyring(current: SymmetricKey(size: .bits256))
        let app = UUID()
        let sealed = keyring.seal(Data("s".utf8), context: UserIdentity.sealContext(app: app))
        XCTAssertEqual(try keyring.open(sealed, context: UserIdentity.sealContext(app: app)), Data("s".utf8))
        XCTAssertThrowsError(try keyring.open(sealed, context: UserIdentity.sealContext(app: UUID())))
        XCTAssertThrowsError(try keyring.open(sealed, context: SecretsKeyring.context(app: app, provider: .apns)))
    }

    func testACommandFromBeforeAssertionsReadsAsNotVerifiedAndIsWrittenAsBefore() throws {
        let old = #"{"apiTokenHash":"h","deviceToken":"t","mobileAppId":"00000000-0000-0000-0000-0000000000a1","orgId":"00000000-0000-0000-0000-0000000000b1","platform":"ios","registrationRequestId":"00000000-0000-0000-0000-0000000000c1","trackStatus":false,"userId":"u"}"#
        let registration = try WireJSON.decoder().decode(DeviceRegistrationRequested.self, from: Data(old.utf8))
        XCTAssertNil(registration.identityVerified)
        let encoded = try EncodedCommand(registration, topics: Topics(), encoder: WireJSON.encoder())
        XCTAssertTrue(String(decoding: encoded.value, as: UTF8.self).contains(#""payload":\#(old)"#))

        var verified = registration
        verified.identityVerified = true
        let written = String(decoding: try EncodedCommand(verified, topics: Topics(), encoder: WireJSON.encoder()).value, as: UTF8.self)
        XCTAssertTrue(written.contains(#""identityVerified":true"#), written)

        let cleanup = #"{"apiTokenHash":"h","mobileAppId":"00000000-0000-0000-0000-0000000000a1","orgId":"00000000-0000-0000-0000-0000000000b1","userId":"u"}"#
        XCTAssertNil(try WireJSON.decoder().decode(DeviceCleanupRequested.self, from: Data(cleanup.utf8)).identityVerified)
    }
}
