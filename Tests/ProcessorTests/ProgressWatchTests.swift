import Projections
import XCTest
@testable import Processor
@testable import Handlers

/// Which owned partitions count as stalled for `/health`: records waiting and no progress for
/// the stall time, with made-up instants.
final class ProgressWatchTests: XCTestCase {
    let p0 = PartitionKey(topic: "t", partition: 0), p1 = PartitionKey(topic: "t", partition: 1)
    let start = ContinuousClock.now

    func testAPartitionWithRecordsWaitingAndNoProgressStallsAfterTheStallTime() {
        var watch = ProgressWatch(stallAfter: .seconds(10))
        let ends = [p0: Int64(100), p1: 50]
        XCTAssertEqual(watch.observe(positions: [p0: 10, p1: 50], highWatermark: { ends[$0] }, now: start), [])
        XCTAssertEqual(watch.observe(positions: [p0: 10, p1: 50], highWatermark: { ends[$0] }, now: start + .seconds(9)), [])
        XCTAssertEqual(watch.observe(positions: [p0: 10, p1: 50], highWatermark: { ends[$0] }, now: start + .seconds(10)), [p0],
                       "p0 has 90 records waiting and did not move; p1 is caught up")
    }

    func testProgressStartsTheClockAgain() {
        var watch = ProgressWatch(stallAfter: .seconds(10))
        let end: (PartitionKey) -> Int64? = { _ in 100 }
        _ = watch.observe(positions: [p0: 10], highWatermark: end, now: start)
        XCTAssertEqual(watch.observe(positions: [p0: 11], highWatermark: end, now: start + .seconds(9)), [])
        XCTAssertEqual(watch.observe(positions: [p0: 11], highWatermark: end, now: start + .seconds(18)), [])
        XCTAssertEqual(watch.observe(positions: [p0: 11], highWatermark: end, now: start + .seconds(19)), [p0])
    }

    func testAPartitionWhoseSendMakesProgressBesideTheLoopDoesNotStall() {
        var watch = ProgressWatch(stallAfter: .seconds(10))
        let end: (PartitionKey) -> Int64? = { _ in 100 }
        _ = watch.observe(positions: [p0: 10], highWatermark: end, now: start)
        for second in stride(from: 5, through: 60, by: 5) {
            XCTAssertEqual(watch.observe(positions: [p0: 10], highWatermark: end, moving: [p0], now: start + .seconds(second)), [],
                           "its send reads pages and publishes windows: progress, though its offset waits for the commit")
        }
        XCTAssertEqual(watch.observe(positions: [p0: 10], highWatermark: end, now: start + .seconds(69)), [])
        XCTAssertEqual(watch.observe(positions: [p0: 10], highWatermark: end, now: start + .seconds(70)), [p0],
                       "once the send stops making progress, the stall time runs from its last step")
    }

    func testAnIdlePartitionOrOneWithoutAKnownEndNeverStalls() {
        var watch = ProgressWatch(stallAfter: .seconds(1))
        _ = watch.observe(positions: [p0: 5, p1: 5], highWatermark: { $0 == self.p0 ? 5 : nil }, now: start)
        XCTAssertEqual(watch.observe(positions: [p0: 5, p1: 5], highWatermark: { $0 == self.p0 ? 5 : nil }, now: start + .seconds(60)), [])
    }

    func testRecordsArrivingAtAnIdlePartitionGetTheFullStallTime() {
        var watch = ProgressWatch(stallAfter: .seconds(10))
        _ = watch.observe(positions: [p0: 5], highWatermark: { _ in 5 }, now: start)
        XCTAssertEqual(watch.observe(positions: [p0: 5], highWatermark: { _ in 8 }, now: start + .seconds(60)), [],
                       "the records just arrived: the clock starts now, not when the partition went idle")
        XCTAssertEqual(watch.observe(positions: [p0: 5], highWatermark: { _ in 8 }, now: start + .seconds(70)), [p0])
    }

    func testAPartitionTakenOverGetsTheFullStallTimeAndOneLetGoIsForgotten() {
        var watch = ProgressWatch(stallAfter: .seconds(10))
        let end: (PartitionKey) -> Int64? = { _ in 100 }
        _ = watch.observe(positions: [p0: 1], highWatermark: end, now: start)
        XCTAssertEqual(watch.observe(positions: [p1: 1], highWatermark: end, now: start + .seconds(20)), [], "p1 was just assigned")
        XCTAssertEqual(watch.observe(positions: [p0: 1, p1: 1], highWatermark: end, now: start + .seconds(25)), [],
                       "p0 was let go and assigned again: watched anew")
        XCTAssertEqual(watch.observe(positions: [p0: 1, p1: 1], highWatermark: end, now: start + .seconds(35)), [p0, p1])
    }

    func testExistingLogRefusalChecksOnlyPartitionsWithoutAStoredOffset() throws {
        let created = Date(timeIntervalSince1970: 1_800_000_000)
        func record(_ p: PartitionKey, _ offset: Int64, at seconds: TimeInterval) -> DecodedRecord {
            DecodedRecord(partition: p, offset: offset, requestId: nil, outcome: .unknownType("-"), type: nil, value: Data(),
                          timestamp: created.addingTimeInterval(seconds))
        }
        // Older than the store, but the partition has a stored offset: already consumed by this store.
        XCTAssertNoThrow(try ExistingLogRefused.check([record(p0, 4, at: -3600)], expected: [p0: 4], storeCreatedAt: created))
        // Written after the store was created (or within the allowed skew): normal work.
        XCTAssertNoThrow(try ExistingLogRefused.check([record(p0, 0, at: 1), record(p1, 0, at: -4)], expected: [:], storeCreatedAt: created))
        XCTAssertThrowsError(try ExistingLogRefused.check([record(p0, 0, at: 1), record(p1, 0, at: -3600)], expected: [:],
                                                          storeCreatedAt: created)) { error in
            let refusal = error as? ExistingLogRefused
            XCTAssertEqual(refusal?.partition, p1)
            XCTAssertTrue("\(error)".contains("pushline-processor rebuild"), "the message names the way out: \(error)")
            XCTAssertTrue("\(error)".contains("PUSHLINE_ACCEPT_EXISTING_LOG=true"))
        }
    }
}
