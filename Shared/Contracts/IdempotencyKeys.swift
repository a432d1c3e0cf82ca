import Crypto
import Foundation
import WireCodec

/// The `Idempotency-Key` of a send (docs/API.md#idempotency-keys): its rules, the delivery id it
/// names, and the hash that tells a retry from a different request with the same key.
///
/// The delivery id is derived from the key, so every ingest instance gives a retry the id of the
/// first request without sharing any state. The processor applies the first send of a delivery
/// id and counts every later one as a duplicate or a conflict (`requestHash` differs), so a key
/// reaches each device at most once, whatever the order or the number of copies in the log.
public enum IdempotencyKeys {
    /// The header that carries the key.
    public static let header = "Idempotency-Key"

    /// The longest key, in bytes.
    public static let maxBytes = 255

    /// How long a key names its first request, measured in the log's time from that request
    /// (`PUSHLINE_IDEMPOTENCY_WINDOW_HOURS`); after it, the key names a new request.
    public static let defaultWindowHours = 24

    /// Whether `key` is 1…255 visible ASCII characters (0x21…0x7e): what fits a header unchanged.
    public static func isValid(_ key: String) -> Bool {
        let utf8 = key.utf8
        return !utf8.isEmpty && utf8.count <= maxBytes && utf8.allSatisfy { (0x21...0x7e).contains($0) }
    }

    /// The delivery id of the first send with `key` in `app`: a name-based UUID (version 8,
    /// RFC 9562) of SHA-256 over the app and the key.
    public static func deliveryId(app: UUID, key: String) -> UUID {
        nameBased("pushline send\n\(app.lowercasedString)\n\(key)")
    }

    /// The id (of a delivery, an app or a token) the key names once the window of the request
    /// that created `previous` has passed: each reuse of a key after its window derives from the
    /// one before, so retries of the reuse again agree on one id.
    public static func nextId(after previous: UUID, key: String) -> UUID {
        nameBased("pushline send after\n\(previous.lowercasedString)\n\(key)")
    }

    /// The id of what the first admin create with `key` creates (an app, a token): `scope` names
    /// the caller and the route (`IdempotencyStamp.scope`).
    public static func resourceId(scope: String, key: String) -> UUID {
        nameBased("pushline admin create\n\(scope)\n\(key)")
    }

    /// An id derived from another one for one of its parts (an app's server token, its org).
    public static func derivedId(of parent: UUID, _ part: String) -> UUID {
        nameBased("pushline part\n\(parent.lowercasedString)\n\(part)")
    }

    /// The purpose under which the key of `derivedToken` is derived from the deployment's
    /// secrets key (`SecretsKeyring.derivedKey(purpose:)`).
    public static let tokenKeyPurpose = "pushline/admin-create-tokens/v1"

    /// The raw token a keyed create gives the token `tokenId`: base64url of HMAC-SHA256(key: a
    /// key only the server holds, message: the token id and the SHA-256 of the caller's admin
    /// token). A retry by the same caller gets the same raw token back, from any ingest instance
    /// holding the same key; neither the log nor the store holds anything it could be derived
    /// from, and neither does the caller: an admin token, once revoked or rotated, derives
    /// nothing.
    public static func derivedToken(key: SymmetricKey, tokenId: UUID, callerDigest: String) -> String {
        let message = "pushline api token\n\(tokenId.lowercasedString)\n\(callerDigest)"
        return ApiTokens.base64url(Data(HMAC<SHA256>.authenticationCode(for: Data(message.utf8), using: key)))
    }

    /// Lower-case hex SHA-256 of a request body's bytes: a retry sends the same bytes.
    public static func requestHash<Bytes: Sequence>(_ body: Bytes) -> String where Bytes.Element == UInt8 {
        ApiTokens.hash(bytes: Array(body))
    }

    private static func nameBased(_ name: String) -> UUID {
        var bytes = Array(SHA256.hash(data: Data(name.utf8)).prefix(16))
        bytes[6] = (bytes[6] & 0x0f) | 0x80  // version 8
        bytes[8] = (bytes[8] & 0x3f) | 0x80  // RFC 9562 variant
        return bytes.withUnsafeBytes { UUID(uuid: $0.loadUnaligned(as: uuid_t.self)) }
    }
}

/// What an admin create with an `Idempotency-Key` carries into the log, for the processor to
/// record (`idempotency_keys`) when it applies the create.
public struct IdempotencyStamp: Codable, Sendable, Equatable {
    /// Whose key it is and on which route: `admin:<admin token id or bootstrap>:apps`, or
    /// `…:apps/<app id>/tokens`. Keys of different callers never meet.
    public var scope: String
    public var key: String
    /// `IdempotencyKeys.requestHash` of the request body.
    public var requestHash: String

    public init(scope: String, key: String, requestHash: String) {
        self.scope = scope
        self.key = key
        self.requestHash = requestHash
    }
}
