import Contracts
import Foundation
@testable import Processor
@testable import Handlers
import Projections
import XCTest

/// The consumer's offset book, and the rebuild's progress arithmetic.
final class RebalanceAndRebuildTests: XCTestCase {
    private let p0 = PartitionKey(topic: "t", partition: 0)
    private let p1 = PartitionKey(topic: "t", partition: 1)

    private func record(_ partition: PartitionKey, _ offset: Int64) -> DecodedRecord {
        DecodedRecord(partition: partition, offset: offset, requestId: nil, outcome: .unknownType("-"), type: nil, value: Data())
    }

    func testTheBookAdmitsOnlyOwnedRecordsNotAppliedYet() {
        let book = OffsetBook()
        book.assign([p0, p1], stored: [p0: 5])
        let (admitted, expected) = book.admit([record(p0, 4), record(p0, 5), record(p1, 0)])
        XCTAssertEqual(admitted.map(\.offset), [5, 0], "below the stored offset is applied already")
        XCTAssertEqual(expected, [p0: 5])

        book.revoke([p0])
        let (later, _) = book.admit([record(p0, 6), record(p1, 1)])
        XCTAssertEqual(later.map(\.partition), [p1], "nothing of a revoked partition is admitted")
        XCTAssertEqual(book.positions, [p1: 0])
    }

    func testProgressCountsRecordsAppliedSinceTheStartAgainstTheTargets() {
        let progress = RebuildProgress(start: [p0: 100], target: [p0: 1_100, p1: 500])
        progress.record([p0: 600, p1: 50])
        progress.record([p0: 400])  // an older reading never moves it back

        XCTAssertEqual(progress.done, 550)
        XCTAssertEqual(RebuildProgress.grouped(1_234_567), "1,234,567")
        XCTAssertEqual(RebuildProgress.grouped(999), "999")
        XCTAssertEqual(RebuildProgress.duration(9.2), "10s")
        XCTAssertEqual(RebuildProgress.duration(75), "1m15s")
        XCTAssertEqual(RebuildProgress.duration(3_725), "1h02m")
    }

    func testStoreTagsAreStableAndDifferPerStore() {
        XCTAssertEqual(Rebuild.storeTag("sqlite:a.sqlite"), Rebuild.storeTag("sqlite:a.sqlite"))
        XCTAssertNotEqual(Rebuild.storeTag("sqlite:a.sqlite"), Rebuild.storeTag("sqlite:b.sqlite"))
    }
}
