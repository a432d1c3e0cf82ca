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
