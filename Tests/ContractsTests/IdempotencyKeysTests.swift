import Contracts
import Foundation
import WireCodec
import XCTest

/// The ids a key names must never change: ingest instances of different versions, and a rebuild
/// of an old log, agree on them only if the derivation stays the same.
final class IdempotencyKeysTests: XCTestCase {
    let app = UUID(uuidString: "00000000-0000-0000-0000-0000000000a1")!

    func testTheDerivedIdsArePinned() {
        let first = IdempotencyKeys.deliveryId(app: app, key: "order-42")
        XCTAssertEqual(first.lowercasedString, "9e6e24a8-57ed-8853-baa5-2621bd1b392e")
        XCTAssertEqual(IdempotencyKeys.nextId(after: first, key: "order-42").lowercasedString, "5e839139-cba5-8347-a536-5d7f4c1ece45")
    }

    func testIdsAreVersion8AndDifferByAppKeyAndReuse() {
        let first = IdempotencyKeys.deliveryId(app: app, key: "k")
        let text = first.lowercasedString
        XCTAssertEqual(Array(text)[14], "8", "version 8 (RFC 9562)")
        XCTAssertTrue("89ab".contains(Array(text)[19]), "RFC 9562 variant")
        XCTAssertEqual(IdempotencyKeys.deliveryId(app: app, key: "k"), first)
        let others = [IdempotencyKeys.deliveryId(app: UUID(), key: "k"), IdempotencyKeys.deliveryId(app: app, key: "K"),
                      IdempotencyKeys.nextId(after: first, key: "k")]
        XCTAssertEqual(Set(others + [first]).count, 4)
    }

    func testValidKeysAreVisibleASCIIUpTo255Bytes() {
        for key in ["a", "order-42", "2f1c8a9e-2b8c-4b8e-9d4f-7c3a1e5b6d70", String(repeating: "~", count: 255), "!\"#{}"] {
            XCTAssertTrue(IdempotencyKeys.isValid(key), key)
        }
        for key in ["", " a", "a b", String(repeating: "k", count: 256), "é", "a\u{7f}", "a\n"] {
            XCTAssertFalse(IdempotencyKeys.isValid(key), key.debugDescription)
        }
    }

    func testTheRequestHashIsTheSHA256OfTheBodysBytes() {
        XCTAssertEqual(IdempotencyKeys.requestHash(Array("abc".utf8)),
                       "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }
}
