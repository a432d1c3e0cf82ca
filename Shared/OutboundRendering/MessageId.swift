import Crypto
import Foundation
import WireCodec

/// Message ids (`_mId`, the broadlogId devices report in tracking): one per device of a delivery
/// (docs/API.md#outbound-payloads).
///
/// Derived from the delivery id and the device's position in it rather than drawn at random,
/// so a replay or retry writes the same id, and tracking can tell whether a broadlogId belongs
/// to a delivery without a stored row per device.
///
/// `"<index>-<16 lower-hex>"`: the hex is 64 check bits of the index under a per-delivery key.
/// - **Keyed** (a send stamped with a key id, `NotificationRequested.messageKeyId`): the
///   per-delivery key is HMAC-SHA256 of the delivery id under a key only the server holds
///   (`MessageIdKeys`), and the check bits are SipHash-2-4 of the index under it: a pseudorandom
///   function, so a recipient who holds its own id (and the delivery id) learns nothing of any
///   other recipient's, and cannot make one. One HMAC per delivery and one SipHash per device.
/// - **Unkeyed** (sends of logs written before keyed ids, or without `PUSHLINE_SECRETS_KEY`): a
///   64-bit mix (SplitMix64's finaliser) of the index with a seed, the first 8 bytes of
///   SHA-256(`"pushline/message/<deliveryId>"`). Anyone who knows the delivery id can compute
///   them; they make a typo or an id of another delivery fail, they do not stop a forger. Kept
///   so that an existing log rebuilds byte for byte.
public enum MessageId {
    /// The ids of one delivery.
    public struct Series: Sendable {
        private enum Mode: Sendable {
            case unkeyed(seed: UInt64)
            case keyed(k0: UInt64, k1: UInt64)
        }

        private let mode: Mode

        /// The unkeyed ids of `deliveryId` (a send without a key id).
        public init(deliveryId: UUID) {
            self.init(deliveryId: deliveryId, key: nil)
        }

        /// The ids of `deliveryId` under `key`; unkeyed when `key` is nil.
        public init(deliveryId: UUID, key: MessageIdKey?) {
            var input = Array("pushline/message/".utf8)
            UUIDHex.append(deliveryId, to: &input)
            if let key {
                let mac = HMAC<SHA256>.authenticationCode(for: input, using: SymmetricKey(data: key.bytes))
                let (k0, k1) = mac.withUnsafeBytes { raw in
                    (raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self).littleEndian,
                     raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self).littleEndian)
                }
                mode = .keyed(k0: k0, k1: k1)
            } else {
                let seed = SHA256.hash(data: input).withUnsafeBytes { raw in
                    raw.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                }
                mode = .unkeyed(seed: seed)
            }
        }

        /// The id of the device at `index` (0-based).
        public func make(index: Int) -> String {
            var out: [UInt8] = []
            out.reserveCapacity(40)
            append(index: index, to: &out)
            return String(decoding: out, as: UTF8.self)
        }

        /// Appends the id's bytes, without allocating a string.
        public func append(index: Int, to out: inout [UInt8]) {
            precondition(index >= 0, "a message index is a position in the delivery")
            let start = out.count
            var n = index
            repeat {
                out.append(UInt8(truncatingIfNeeded: 0x30 &+ n % 10))
                n /= 10
            } while n > 0
            out[start...].reverse()
            out.append(0x2d)
            var mixed = check(index)
            for _ in 0..<16 {
                out.append(UUIDHex.digit(UInt8(truncatingIfNeeded: mixed >> 60)))
                mixed <<= 4
            }
        }

        /// The index whose id is exactly `messageId`, else nil (an id of another delivery, a
        /// typo, or not a message id at all).
        ///
        /// Reads the bytes in place (tracking checks every reported id, so nothing is allocated):
        /// the index in canonical decimal (no sign, no leading zero), a dash, then the 16 check
        /// digits this series gives that index.
        public func index(of messageId: String) -> Int? {
            var text = messageId
            return text.withUTF8 { bytes -> Int? in
                guard let dash = bytes.firstIndex(of: 0x2d), (1...19).contains(dash), bytes.count == dash + 17,
                      bytes[0] != 0x30 || dash == 1 else { return nil }
                var index = 0
                for byte in bytes[..<dash] {
                    guard (0x30...0x39).contains(byte) else { return nil }
                    let (times10, o1) = index.multipliedReportingOverflow(by: 10)
                    let (next, o2) = times10.addingReportingOverflow(Int(byte &- 0x30))
                    guard !o1, !o2 else { return nil }
                    index = next
                }
                var mixed = check(index)
                for position in (dash + 1)..<bytes.count {
                    guard bytes[position] == UUIDHex.digit(UInt8(truncatingIfNeeded: mixed >> 60)) else { return nil }
                    mixed <<= 4
                }
                return index
            }
        }

        private func check(_ index: Int) -> UInt64 {
            switch mode {
            case .unkeyed(let seed):
                var z = seed &+ UInt64(index) &* 0x9E37_79B9_7F4A_7C15
                z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
                z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
                return z ^ (z >> 31)
            case .keyed(let k0, let k1):
                return SipHash24.hash(word: UInt64(index), k0: k0, k1: k1)
            }
        }
    }

    public static func make(deliveryId: UUID, index: Int, key: MessageIdKey? = nil) -> String {
        Series(deliveryId: deliveryId, key: key).make(index: index)
    }

    /// The index whose `make(deliveryId:index:key:)` is exactly `messageId`, else nil.
    public static func index(of messageId: String, deliveryId: UUID, key: MessageIdKey? = nil) -> Int? {
        Series(deliveryId: deliveryId, key: key).index(of: messageId)
    }

    /// The message id of the badge update sent after the ack `ackId`.
    public static func badgeUpdate(ackId: UUID) -> String {
        "badge-" + ackId.lowercasedString
    }
}
