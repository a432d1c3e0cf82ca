import Crypto
import Foundation

/// API token generation, hashing and the status webhook signature (docs/API.md#status-webhook).
///
/// Tokens are 32 random bytes, base64url without padding. Only `hash(_:)` of a token is
/// stored or sent through Kafka: SHA-256 is enough because tokens carry 256 bits of entropy
/// (no dictionary to attack), and it lets the processor compare without any secret.
public enum ApiTokens {
    public static func generate() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        return base64url(Data(bytes))
    }

    /// `bytes` in base64url without padding: the form of every raw token.
    public static func base64url(_ bytes: Data) -> String {
        bytes.base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// Lower-case hex SHA-256 of the token's UTF-8 bytes.
    public static func hash(_ token: String) -> String {
        hex(SHA256.hash(data: Data(token.utf8)))
    }

    /// Lower-case hex SHA-256 of `bytes`.
    public static func hash(bytes: [UInt8]) -> String {
        hex(SHA256.hash(data: bytes))
    }

    /// `base64(HMAC-SHA256(key: UTF-8 of apiToken, message: UTF-8 of callbackURL))`.
    public static func webhookSignature(apiToken: String, callbackURL: String) -> String {
        let mac = HMAC<SHA256>.authenticationCode(for: Data(callbackURL.utf8), using: SymmetricKey(data: Data(apiToken.utf8)))
        return Data(mac).base64EncodedString()
    }

    /// Compares two strings in time independent of where they differ. Their lengths are not
    /// hidden (strings of different lengths return at once): compare digests, which all have
    /// one length, never raw tokens.
    public static func constantTimeEquals(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        guard x.count == y.count else { return false }
        var diff: UInt8 = 0
        for i in 0..<x.count { diff |= x[i] ^ y[i] }
        return diff == 0
    }

    private static func hex<D: Sequence>(_ digest: D) -> String where D.Element == UInt8 {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(64)
        for byte in digest {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
