import Crypto
import Foundation

/// Verified user identity (docs/API.md#verified-user-identity): an app's backend proves to
/// Pushline that a device acts for one of its users by giving the device a *user assertion*,
/// `hex(HMAC-SHA256(key: the app's identity secret, message: the user id))`, which the device
/// presents with its registrations, cleanups and pending-list reads. Whoever holds only the
/// client token (it ships in every copy of the app) cannot make one, so it cannot bind a device
/// to another user.
///
/// The secret is 32 random bytes in base64url, shown once by the admin API; the HMAC key is the
/// UTF-8 of that text as shown, so `openssl dgst -sha256 -hmac "$SECRET"` makes an assertion.
/// The message is the UTF-8 of the user id as Pushline stores it: `UserId` of the registration
/// API, `userToken` of KF5, and for the BW service the id made of the phone or e-mail
/// (`BWDeviceAPI.userId`: `tel:+…` or `mailto:…`). The secret is sealed with the deployment's
/// keyring (`SecretsKeyring`) in commands and the store; ingest opens it to check.
public enum UserIdentity {
    /// A new identity secret: 32 random bytes, base64url without padding.
    public static func generateSecret() -> String { ApiTokens.generate() }

    /// The assertion of `userId` under `secret`: lower-case hex of the HMAC-SHA256.
    public static func assertion(userId: String, secret: String) -> String {
        let mac = HMAC<SHA256>.authenticationCode(for: Data(userId.utf8), using: SymmetricKey(data: Data(secret.utf8)))
        return hex(Data(mac))
    }

    /// Whether `presented` is the assertion of `userId` under `secret` (hex, either case). The
    /// comparison is of digests of both, so its time tells nothing of the expected value.
    public static func verify(_ presented: String, userId: String, secret: String) -> Bool {
        let expected = assertion(userId: userId, secret: secret)
        return ApiTokens.constantTimeEquals(ApiTokens.hash(presented.lowercased()), ApiTokens.hash(expected))
    }

    /// What a seal of an app's identity secret is bound to, so that it opens for that app only.
    public static func sealContext(app: UUID) -> String {
        "pushline/user-identity-secret/v1/\(app.lowercasedString)"
    }

    /// The header a device presents its assertion in (every dialect; the registration API's
    /// bodies also take a field per registration).
    public static let assertionHeader = "X-Pushline-User-Assertion"
    /// The header naming the user an assertion is for, where the request itself names none (the
    /// BW pending list).
    public static let userIdHeader = "X-Pushline-User-Id"

    private static func hex<D: Sequence>(_ bytes: D) -> String where D.Element == UInt8 {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(64)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
