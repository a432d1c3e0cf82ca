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
        XCTAssertEqual(ProgressText.grouped(1_234_567), "1,234,567")
        XCTAssertEqual(ProgressText.grouped(999), "999")
        XCTAssertEqual(ProgressText.duration(9.2), "10s")
        XCTAssertEqual(ProgressText.duration(75), "1m15s")
        XCTAssertEqual(ProgressText.duration(3_725), "1h02m")
    }

    /// A lone rebuild stops following the store's offsets by cancellation once its consumer is
    /// done; a cancelled read of the store ends the following, it does not fail the rebuild.
    func testFollowingTheOffsetsEndsQuietlyWhenCancelledInARead() async throws {
        let (reads, reading) = AsyncStream<Void>.makeStream()
        let progress = RebuildProgress(start: [:], target: [p0: 10])
        let following = Task {
            try await Rebuild.followOffsets({
                reading.yield()
                try await Task.sleep(for: .seconds(3_600))
                return [:]
            }, until: nil, progress: progress)
        }
        var iterator = reads.makeAsyncIterator()
        _ = await iterator.next()
        following.cancel()
        let ended = try await following.value
        XCTAssertNil(ended)
    }

    func testFollowingTheOffsetsOfAJoinEndsWhenTheStoreHoldsTheTarget() async throws {
        let progress = RebuildProgress(start: [:], target: [p0: 10])
        let reads = Reads()
        let p0 = p0
        let ended = try await Rebuild.followOffsets({ [p0: Int64(5 * (await reads.next()))] }, until: [p0: 10], progress: progress)
        XCTAssertEqual(ended, 0)
        let count = await reads.count
        XCTAssertEqual(count, 2, "the second read found the target")
        XCTAssertEqual(progress.done, 10)
    }

    func testStoreTagsAreStableAndDifferPerStore() {
        XCTAssertEqual(Rebuild.storeTag("sqlite:a.sqlite"), Rebuild.storeTag("sqlite:a.sqlite"))
        XCTAssertNotEqual(Rebuild.storeTag("sqlite:a.sqlite"), Rebuild.storeTag("sqlite:b.sqlite"))
    }
}

private actor Reads {
    private(set) var count = 0

    func next() -> Int {
        count += 1
        return count
    }
}
