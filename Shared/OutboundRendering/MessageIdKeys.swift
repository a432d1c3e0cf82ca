import Contracts
import Crypto
import Foundation

/// One server-held key message ids are made with (`MessageId.Series`): derived from one of the
/// deployment's keys for that purpose alone, named by that key's id.
public struct MessageIdKey: Sendable, Equatable {
    /// The id of the deployment key it derives from (`SecretsKeyring.keyId(of:)`): what a send
    /// command names (`NotificationRequested.messageKeyId`).
    public let id: String
    let bytes: Data

    public init(id: String, bytes: Data) {
        self.id = id
        self.bytes = bytes
    }
}

/// The message-id keys a processor holds: one per key of its keyring (`PUSHLINE_SECRETS_KEY` and
/// `PUSHLINE_SECRETS_PREVIOUS_KEYS`), each `SecretsKeyring.derivedKey(purpose:keyId:)` with
/// `purpose`. A send names the key its ids are made with, so a rebuild makes the same ids after
/// a rotation as long as that key stays among the previous keys.
public struct MessageIdKeys: Sendable, Equatable {
    public static let purpose = "pushline/message-id/v1"
    /// A processor without `PUSHLINE_SECRETS_KEY`: it can make no keyed id.
    public static let none = MessageIdKeys(keys: [])

    /// By id, in id order (tracking tries them in this order).
    public let keys: [MessageIdKey]

    public init(keys: [MessageIdKey]) {
        self.keys = keys.sorted { $0.id < $1.id }
    }

    /// Every key of `keyring` (none without one).
    public init(keyring: SecretsKeyring?) {
        guard let keyring else {
            self.init(keys: [])
            return
        }
        self.init(keys: keyring.keyIds.compactMap { id in
            keyring.derivedKey(purpose: Self.purpose, keyId: id).map { key in MessageIdKey(id: id, bytes: key.withUnsafeBytes { Data($0) }) }
        })
    }

    public var isEmpty: Bool { keys.isEmpty }

    /// The key named `id`, nil when not held.
    public func key(_ id: String) -> MessageIdKey? {
        keys.first { $0.id == id }
    }

    /// The series a report of `deliveryId` may name: one per key held when its ids are keyed (a
    /// report cannot tell which key its send used), else the unkeyed one.
    public func candidates(for deliveryId: UUID, keyed: Bool) -> [MessageId.Series] {
        keyed ? keys.map { MessageId.Series(deliveryId: deliveryId, key: $0) } : [MessageId.Series(deliveryId: deliveryId)]
    }
}

/// SipHash-2-4 (Aumasson and Bernstein) of one 64-bit word: the pseudorandom function of keyed
/// message ids, cheap enough to run once per device of a fan-out.
enum SipHash24 {
    static func hash(word m: UInt64, k0: UInt64, k1: UInt64) -> UInt64 {
        var v0: UInt64 = 0x736F_6D65_7073_6575 ^ k0
        var v1: UInt64 = 0x646F_7261_6E64_6F6D ^ k1
        var v2: UInt64 = 0x6C79_6765_6E65_7261 ^ k0
        var v3: UInt64 = 0x7465_6462_7974_6573 ^ k1
        func round() {
            v0 &+= v1; v1 = rotl(v1, 13); v1 ^= v0; v0 = rotl(v0, 32)
            v2 &+= v3; v3 = rotl(v3, 16); v3 ^= v2
            v0 &+= v3; v3 = rotl(v3, 21); v3 ^= v0
            v2 &+= v1; v1 = rotl(v1, 17); v1 ^= v2; v2 = rotl(v2, 32)
        }
        v3 ^= m
        round(); round()
        v0 ^= m
        // The last block: the message's length (8 bytes) in the top byte, no bytes left over.
        let last: UInt64 = 8 << 56
        v3 ^= last
        round(); round()
        v0 ^= last
        v2 ^= 0xFF
        round(); round(); round(); round()
        return v0 ^ v1 ^ v2 ^ v3
    }

    private static func rotl(_ x: UInt64, _ b: UInt64) -> UInt64 { (x << b) | (x >> (64 - b)) }
}
