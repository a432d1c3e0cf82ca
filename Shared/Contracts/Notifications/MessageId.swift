import Crypto
import Foundation

/// Message ids (`_mId`, the seed 001/003 broadlogId): one per device of a delivery.
///
/// Derived from the delivery id and the device's position in it rather than drawn at random,
/// so a replay or retry writes the same id, and tracking can tell whether a broadlogId belongs
/// to a delivery without a stored row per device.
public enum MessageId {
    private static let prefix: [UInt8] = Array("pushline/message/".utf8)

    /// `"<index>-"` + the first 16 lower-hex characters of
    /// SHA-256(`"pushline/message/<deliveryId lower-cased>/<index>"`). `index` is 0-based.
    public static func make(deliveryId: UUID, index: Int) -> String {
        precondition(index >= 0, "a message index is a position in the delivery")
        var input = prefix
        input.reserveCapacity(prefix.count + 36 + 1 + 20)
        UUIDHex.append(deliveryId, to: &input)
        input.append(0x2f)
        let digits = Array(String(index).utf8)
        input.append(contentsOf: digits)

        let digest = SHA256.hash(data: input)
        var out = digits
        out.reserveCapacity(digits.count + 17)
        out.append(0x2d)
        UUIDHex.append(hex: digest.prefix(8), to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// The index whose `make(deliveryId:index:)` is exactly `messageId`, else nil.
    public static func index(of messageId: String, deliveryId: UUID) -> Int? {
        let utf8 = messageId.utf8
        guard utf8.count <= 40, let dash = utf8.firstIndex(of: 0x2d),
              utf8.distance(from: dash, to: utf8.endIndex) == 17,
              let index = Int(Substring(messageId.utf8[..<dash])), index >= 0 else { return nil }
        return make(deliveryId: deliveryId, index: index) == messageId ? index : nil
    }

    /// The message id of the badge update sent after the ack `ackId`.
    public static func badgeUpdate(ackId: UUID) -> String {
        "badge-" + ackId.lowercasedString
    }
}
