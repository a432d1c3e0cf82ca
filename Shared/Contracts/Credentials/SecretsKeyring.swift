import Crypto
import Foundation
import WireCodec

/// A secret sealed with AES-256-GCM under one of the deployment's keys.
public struct SealedSecret: Codable, Sendable, Equatable {
    /// Which key sealed it: `SecretsKeyring.keyId(of:)`, so that a keyring holding several
    /// keys (during a rotation) knows which one opens it.
    public var keyId: String
    /// AES-GCM's nonce, ciphertext and tag, in that order, base64.
    public var box: String

    public init(keyId: String, box: String) {
        self.keyId = keyId
        self.box = box
    }
}

/// The deployment's keys for push credentials (docs/DEPLOYMENT.md#push-credentials-and-the-secrets-key):
/// ingest seals with the current key, the sender opens with whichever key sealed. Each seal is
/// bound to its app and provider (authenticated data), so a sealed key cannot be moved to
/// another app's credentials.
public struct SecretsKeyring: Sendable {
    public let currentKeyId: String
    // Raw key bytes (swift-crypto's `SymmetricKey` is not `Sendable`); a key is made per use.
    private let current: Data
    private let keys: [String: Data]
    /// The ids of the keys it holds: the current key's first, then the previous ones in the
    /// order given.
    public let keyIds: [String]

    /// - Parameters:
    ///   - current: seals; opens too.
    ///   - previous: only open (secrets sealed before a rotation).
    public init(current: SymmetricKey, previous: [SymmetricKey] = []) {
        self.current = current.withUnsafeBytes { Data($0) }
        currentKeyId = Self.keyId(of: current)
        var keys: [String: Data] = [:]
        var keyIds = [currentKeyId]
        for key in previous {
            let id = Self.keyId(of: key)
            keys[id] = key.withUnsafeBytes { Data($0) }
            if !keyIds.contains(id) { keyIds.append(id) }
        }
        keys[currentKeyId] = self.current
        self.keys = keys
        self.keyIds = keyIds
    }

    /// Reads keys as the settings give them: base64 of 32 random bytes each, the previous ones
    /// separated by commas (`openssl rand -base64 32` makes one).
    public init(current: String, previous: String? = nil) throws(SecretsKeyError) {
        let previousKeys = try (previous ?? "").split(separator: ",").map { text throws(SecretsKeyError) in
            try Self.key(String(text))
        }
        self.init(current: try Self.key(current), previous: previousKeys)
    }

    /// Seals `secret` for `context` (`Self.context(app:provider:)`).
    public func seal(_ secret: Data, context: String) -> SealedSecret {
        // AES-GCM with a random 96-bit nonce per seal; sealing fails only on a bad key size,
        // which `init` rules out.
        let box = try! AES.GCM.seal(secret, using: SymmetricKey(data: current), authenticating: Data(context.utf8))
        return SealedSecret(keyId: currentKeyId, box: box.combined!.base64EncodedString())
    }

    /// Opens a seal made for `context` with any key of this keyring.
    public func open(_ sealed: SealedSecret, context: String) throws(SecretsKeyError) -> Data {
        guard let key = keys[sealed.keyId] else { throw .unknownKey(sealed.keyId) }
        guard let combined = Data(base64Encoded: sealed.box),
              let box = try? AES.GCM.SealedBox(combined: combined),
              let secret = try? AES.GCM.open(box, using: SymmetricKey(data: key), authenticating: Data(context.utf8))
        else { throw .cannotOpen(sealed.keyId) }
        return secret
    }

    /// A key for one purpose, derived from one of the keyring's keys with HKDF-SHA256 (info:
    /// `purpose`), so that each use of the deployment's key (deriving tokens, signing webhooks,
    /// message ids) has a key of its own and none of them reveals the others. `keyId` names the
    /// key to derive from (nil: the current one); nil when the keyring does not hold it. What
    /// is derived is stable for as long as that key stays in the keyring, current or previous.
    public func derivedKey(purpose: String, keyId: String? = nil) -> SymmetricKey? {
        guard let key = keys[keyId ?? currentKeyId] else { return nil }
        return HKDF<SHA256>.deriveKey(inputKeyMaterial: SymmetricKey(data: key), info: Data(purpose.utf8), outputByteCount: 32)
    }

    /// What a seal of an app's credentials for `provider` is bound to.
    public static func context(app: UUID, provider: PushProvider) -> String {
        "pushline/push-credentials/v1/\(app.lowercasedString)/\(provider.rawValue)"
    }

    /// The first 8 bytes of the key's SHA-256, hex: names a key without revealing it.
    public static func keyId(of key: SymmetricKey) -> String {
        let digest = key.withUnsafeBytes { SHA256.hash(data: $0) }
        return digest.prefix(8).map { String(format: "%02x", $0) }.joined()
    }

    private static func key(_ text: String) throws(SecretsKeyError) -> SymmetricKey {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard let bytes = Data(base64Encoded: trimmed), bytes.count == 32 else { throw .badKey }
        return SymmetricKey(data: bytes)
    }
}

public enum SecretsKeyError: Error, Equatable, CustomStringConvertible {
    /// A key that is not base64 of exactly 32 bytes.
    case badKey
    /// A seal made with a key this keyring does not hold (a key dropped too early in a rotation).
    case unknownKey(String)
    /// A seal that does not open: altered, or bound to another app or provider.
    case cannotOpen(String)

    public var description: String {
        switch self {
        case .badKey: "a secrets key must be base64 of 32 bytes (openssl rand -base64 32)"
        case .unknownKey(let id): "sealed with key \(id), which is neither PUSHLINE_SECRETS_KEY nor among PUSHLINE_SECRETS_PREVIOUS_KEYS"
        case .cannotOpen(let id): "the secret sealed with key \(id) does not open: altered, or not this app's"
        }
    }
}
