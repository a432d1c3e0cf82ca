import Contracts
import Foundation
import XCTest

/// `AppParts`: where an app's parts and a device token's part are.
final class AppPartsTests: XCTestCase {
    func testOnePartHoldsEveryToken() {
        for token in ["", "a", String(repeating: "f", count: 4_096), "東京"] { XCTAssertEqual(AppParts.one.part(ofToken: token), 0) }
    }

    func testATokensPartIsTheCRC32OfItsBytesAndTheTokensSpreadEvenly() {
        for count in [2, 3, 7] {
            let parts = AppParts(count)
            var held = [Int](repeating: 0, count: count)
            for n in 0..<30_000 {
                let token = String(format: "%064x", n)
                let part = parts.part(ofToken: token)
                XCTAssertEqual(part, Int(CRC32.checksum(token.utf8) % UInt32(count)))
                held[part] += 1
            }
            let even = 30_000 / count
            for n in held { XCTAssertTrue(abs(n - even) < even / 20, "\(count) parts: \(held)") }
        }
    }

    func testAPartIsThePartitionAfterItsKeysAndWrapsAround() {
        let key = "9f3a1c52-0d7e-4b8a-9c61-2f4e5d6a7b8c"
        let first = RecordKey.partition(of: key, partitions: 12)
        XCTAssertEqual(AppParts.partition(key: key, part: 0, partitions: 12), first)
        let partitions = (0..<12).map { AppParts.partition(key: key, part: $0, partitions: 12) }
        XCTAssertEqual(Set(partitions).count, 12, "an app's parts are on different partitions")
        XCTAssertEqual(partitions.firstIndex(of: 0), (12 - Int(first)) % 12)
        XCTAssertEqual(AppParts.partition(key: key, part: 3, partitions: 1), 0)
    }

    func testAnEncodedCommandsPartitionIsItsParts() throws {
        let app = UUID()
        let command = NotificationAcknowledged(mobileAppId: app, notificationId: "n", deviceToken: "t")
        for part in 0..<3 {
            let encoded = try EncodedCommand(command, topics: Topics(), part: part, encoder: JSONEncoder())
            XCTAssertEqual(encoded.key, app.lowercasedString)
            XCTAssertEqual(encoded.partition(partitions: 12), AppParts.partition(key: app.lowercasedString, part: part, partitions: 12))
        }
    }
}
