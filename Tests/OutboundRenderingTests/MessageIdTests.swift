import Contracts
import Foundation
import OutboundRendering
import XCTest

final class MessageIdTests: XCTestCase {
    let delivery = UUID(uuidString: "0A1868E6-04C9-4D3B-8125-2F9597F68E78")!

    func testMatchesAnIndependentComputation() {
        // Python: seed = first 8 bytes (big-endian) of sha256(b"pushline/message/0a1868e6-04c9-4d3b-8125-2f9597f68e78"),
        // then SplitMix64's finaliser of seed + index * 0x9E3779B97F4A7C15 (mod 2^64), as 16 hex digits.
        XCTAssertEqual(MessageId.make(deliveryId: delivery, index: 0), "0-a9a7cfeaf8da1fa1")
        XCTAssertEqual(MessageId.make(deliveryId: delivery, index: 1817), "1817-e969ec2abe2e38f6")
    }

    func testKeyedIdsMatchAnIndependentComputation() {
        // Python: k = hmac.new(bytes([7]*32), b"pushline/message/0a1868e6-04c9-4d3b-8125-2f9597f68e78", sha256).digest();
        // SipHash-2-4 under (k[0:8], k[8:16] little-endian) of the index as one little-endian word, as 16 hex digits.
        let key = MessageIdKey(id: "k", bytes: Data(repeating: 7, count: 32))
        XCTAssertEqual(MessageId.make(deliveryId: delivery, index: 0, key: key), "0-5d2c7f82f09b2968")
        XCTAssertEqual(MessageId.make(deliveryId: delivery, index: 1817, key: key), "1817-f4156e3e6f6335a0")
    }

    func testAKeyedIdCannotBeMadeFromTheDeliveryIdOrAnotherRecipientsId() {
        let key = MessageIdKey(id: "k", bytes: Data(repeating: 7, count: 32))
        let mine = MessageId.make(deliveryId: delivery, index: 3, key: key)
        let theirs = MessageId.make(deliveryId: delivery, index: 4, key: key)
        // What anyone can compute from `_dId` alone is not the keyed id, nor accepted as one.
        XCTAssertNotEqual(MessageId.make(deliveryId: delivery, index: 4), theirs)
        XCTAssertNil(MessageId.index(of: MessageId.make(deliveryId: delivery, index: 4), deliveryId: delivery, key: key))
        // Under another key (a forger's guess) the ids differ too.
        let guess = MessageIdKey(id: "k", bytes: Data(repeating: 8, count: 32))
        XCTAssertNil(MessageId.index(of: MessageId.make(deliveryId: delivery, index: 4, key: guess), deliveryId: delivery, key: key))
        // The unkeyed series is invertible: from one id, SplitMix64's finaliser gives the seed and
        // every other id. The keyed one is not: one recipient's id does not lead to the next.
        XCTAssertEqual(MessageId.index(of: mine, deliveryId: delivery, key: key), 3)
        XCTAssertEqual(MessageId.index(of: theirs, deliveryId: delivery, key: key), 4)
        XCTAssertNotEqual(Self.unkeyedSuccessor(of: mine), theirs)
        XCTAssertEqual(Self.unkeyedSuccessor(of: MessageId.make(deliveryId: delivery, index: 3)), MessageId.make(deliveryId: delivery, index: 4),
                       "the attack this closes: the next unkeyed id from one unkeyed id")
    }

    /// The id of index i+1 computed from the id of index i, inverting SplitMix64's finaliser:
    /// works on unkeyed ids only.
    private static func unkeyedSuccessor(of id: String) -> String {
        let parts = id.split(separator: "-")
        let index = UInt64(parts[0])!
        var z = UInt64(parts[1], radix: 16)!
        z = unshift(z, 31); z &*= 0x319642B2D24D8EC3; z = unshift(z, 27); z &*= 0x96DE1B173F119089; z = unshift(z, 30)
        let seed = z &- index &* 0x9E37_79B9_7F4A_7C15
        var next = seed &+ (index + 1) &* 0x9E37_79B9_7F4A_7C15
        next = (next ^ (next >> 30)) &* 0xBF58_476D_1CE4_E5B9
        next = (next ^ (next >> 27)) &* 0x94D0_49BB_1331_11EB
        next ^= next >> 31
        let hex = String(next, radix: 16)
        return "\(index + 1)-" + String(repeating: "0", count: 16 - hex.count) + hex
    }

    private static func unshift(_ value: UInt64, _ shift: UInt64) -> UInt64 {
        var result = value
        var step = shift
        while step < 64 {
            result = value ^ (result >> shift)
            step += shift
        }
        return value ^ (result >> shift)
    }

    func testMessageIdKeysDeriveOneKeyPerDeploymentKeyAndKeepPreviousOnes() throws {
        let old = SymmetricKeyBytes.random(), new = SymmetricKeyBytes.random()
        let before = MessageIdKeys(keyring: try SecretsKeyring(current: old))
        let after = MessageIdKeys(keyring: try SecretsKeyring(current: new, previous: old))
        let oldId = try XCTUnwrap(before.keys.first?.id)
        XCTAssertEqual(before.keys.count, 1)
        XCTAssertEqual(after.keys.count, 2)
        // A send stamped with the old key makes the same ids after the rotation.
        XCTAssertEqual(MessageId.make(deliveryId: delivery, index: 9, key: before.key(oldId)),
                       MessageId.make(deliveryId: delivery, index: 9, key: after.key(oldId)))
        XCTAssertTrue(MessageIdKeys(keyring: nil).isEmpty)
    }

    func testIsDeterministicAndDistinctPerIndexAndDelivery() {
        XCTAssertEqual(MessageId.make(deliveryId: delivery, index: 42), MessageId.make(deliveryId: delivery, index: 42))
        let ids = (0..<10_000).map { MessageId.make(deliveryId: delivery, index: $0) }
        XCTAssertEqual(Set(ids).count, 10_000)
        // The hash part alone is distinct too (the prefix is not doing all the work).
        XCTAssertEqual(Set(ids.map { $0.split(separator: "-")[1] }).count, 10_000)
        XCTAssertNotEqual(MessageId.make(deliveryId: UUID(), index: 0), ids[0])
    }

    func testIndexRoundTrips() {
        for index in [0, 1, 9, 10, 99, 1000, 9999, 123_456, Int.max] {
            XCTAssertEqual(MessageId.index(of: MessageId.make(deliveryId: delivery, index: index), deliveryId: delivery), index)
        }
        for index in 0..<2000 {
            XCTAssertEqual(MessageId.index(of: MessageId.make(deliveryId: delivery, index: index), deliveryId: delivery), index)
        }
    }

    func testIndexRejectsEverythingElse() {
        let id = MessageId.make(deliveryId: delivery, index: 5)
        let hash = String(id.dropFirst(2))
        var tampered = Array(id)
        tampered[tampered.count - 1] = tampered.last == "0" ? "1" : "0"
        let rejected = [
            String(tampered),
            "6-" + hash,                       // another index's prefix
            "05-" + hash, "+5-" + hash, " 5-" + hash,
            "-5-" + hash, "-1-" + hash,
            "99999999999999999999-" + hash, "9223372036854775808-" + hash,
            "9223372036854775807-" + hash,
            id.uppercased(), id + "0", String(id.dropLast()), id + " ",
            "", "-", "5", "5-", "abc", "x-" + hash, "5-" + String(repeating: "z", count: 16),
            "h1685a5", "badge-" + delivery.uuidString.lowercased(),
        ]
        for candidate in rejected {
            XCTAssertNil(MessageId.index(of: candidate, deliveryId: delivery), candidate)
        }
        XCTAssertNil(MessageId.index(of: id, deliveryId: UUID()), "an id of another delivery")
        XCTAssertEqual(MessageId.index(of: id, deliveryId: delivery), 5)
    }

    func testBadgeUpdateIds() {
        let ack = UUID(uuidString: "B8BA7A54-92DC-4978-B125-53BFE57DAA6C")!
        XCTAssertEqual(MessageId.badgeUpdate(ackId: ack), "badge-b8ba7a54-92dc-4978-b125-53bfe57daa6c")
        XCTAssertNil(MessageId.index(of: MessageId.badgeUpdate(ackId: ack), deliveryId: ack))
    }
}

/// Base64 of 32 random bytes, as `PUSHLINE_SECRETS_KEY` takes a key.
private enum SymmetricKeyBytes {
    static func random() -> String {
        Data((0..<32).map { _ in UInt8.random(in: 0 ... .max) }).base64EncodedString()
    }
}
