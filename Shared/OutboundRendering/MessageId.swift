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
/// `"<index>-<16 lower-hex>"`: the hex is a 64-bit mix (SplitMix64's finaliser) of the index
/// with a per-delivery seed, the first 8 bytes of SHA-256(`"pushline/message/<deliveryId>"`).
/// One hash per delivery and a few multiplications per device: a 100,000-device send spends
/// milliseconds on its ids. The check digits are not a secret (the devices see them); they make
/// a typo or an id of another delivery fail, they do not stop a forger.
public enum MessageId {
    /// The ids of one delivery.
    public struct Series: Sendable {
        private let seed: UInt64

        public init(deliveryId: UUID) {
            var input = Array("pushline/message/".utf8)
            UUIDHex.append(deliveryId, to: &input)
            seed = SHA256.hash(data: input).withUnsafeBytes { raw in
                raw.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
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
            var z = seed &+ UInt64(index) &* 0x9E37_79B9_7F4A_7C15
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    public static func make(deliveryId: UUID, index: Int) -> String {
        Series(deliveryId: deliveryId).make(index: index)
    }

    /// The index whose `make(deliveryId:index:)` is exactly `messageId`, else nil.
    public static func index(of messageId: String, deliveryId: UUID) -> Int? {
        Series(deliveryId: deliveryId).index(of: messageId)
    }

    /// The message id of the badge update sent after the ack `ackId`.
    public static func badgeUpdate(ackId: UUID) -> String {
        "badge-" + ackId.lowercasedString
    }
}
