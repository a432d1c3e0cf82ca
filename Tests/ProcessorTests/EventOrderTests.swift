import Contracts
import Foundation
@testable import Processor
@testable import Handlers
import Projections
import TestSupport
import XCTest

/// `EventOrder`: the order records are released in depends on the log alone, never on how the
/// partitions' records happen to arrive.
final class EventOrderTests: XCTestCase {
    private let topics = ["admin", "registration", "notification", "tracking"]

    /// A record that decoded with time `at` (nil: it did not decode).
    private func record(_ partition: PartitionKey, _ offset: Int64, at: Int64?) -> DecodedRecord {
        DecodedRecord(partition: partition, offset: offset, requestId: nil, outcome: .unknownType("x"), type: nil, value: Data(), at: at)
    }

    private func mark(_ partition: PartitionKey, _ offset: Int64, at: Int64) -> DecodedRecord {
        DecodedRecord(partition: partition, offset: offset, requestId: nil, outcome: .progressMark(at: EventTime.date(at)),
                      type: nil, value: Data(), at: at)
    }

    /// A log of a few partitions per topic whose `at`s mostly grow, some late, some undecodable.
    private func log(seed: UInt64) -> [PartitionKey: [DecodedRecord]] {
        var random = SplitMix64(seed: seed)
        var log: [PartitionKey: [DecodedRecord]] = [:]
        for topic in topics {
            for partition in 0..<Int32(3) {
                let key = PartitionKey(topic: topic, partition: partition)
                var time = Int64(random.next() % 50)
                log[key] = (0..<Int64(random.next() % 40)).map { offset in
                    time += Int64(random.next() % 20)
                    let roll = random.next() % 10
                    let at: Int64? = roll == 0 ? nil : roll == 1 ? time - Int64(random.next() % 30) : time
                    return record(key, offset, at: at)
                }
            }
        }
        return log
    }

    /// The order by definition: each record's time is the largest `at` of its partition so far;
    /// then by time, topic, partition, offset.
    private func expected(_ log: [PartitionKey: [DecodedRecord]]) -> [String] {
        var all: [(EventOrder.Key, String)] = []
        for (key, records) in log {
            var time: Int64 = 0
            for r in records {
                time = max(time, r.at ?? .min)
                all.append((EventOrder.Key(time: time, rank: topics.firstIndex(of: key.topic)!, partition: key.partition,
                                           offset: r.offset), "\(key)@\(r.offset)"))
            }
        }
        return all.sorted { $0.0 < $1.0 }.map(\.1)
    }

    func testAnyArrivalInterleavingReleasesTheSameOrder() {
        for seed in UInt64(1)...40 {
            let log = log(seed: seed)
            let reference = expected(log)
            for run in UInt64(0)..<5 {
                var random = SplitMix64(seed: seed &* 1_000 &+ run)
                var order = EventOrder(topics: topics)
                for key in log.keys { order.claim(key, next: 0, time: 0) }
                var pending = log.mapValues { $0[...] }
                var released: [String] = []
                while pending.values.contains(where: { !$0.isEmpty }) {
                    // A chunk of a random partition arrives; then whatever may go is released,
                    // in transactions of a random size.
                    let ready = pending.filter { !$0.value.isEmpty }.keys.sorted { $0.description < $1.description }
                    let key = ready[Int(random.next() % UInt64(ready.count))]
                    let take = 1 + Int(random.next() % 6)
                    order.add(Array(pending[key]!.prefix(take)))
                    pending[key] = pending[key]!.dropFirst(take)
                    let limit = 1 + Int(random.next() % 7)
                    while true {
                        let batch = order.release(limit: limit)
                        released += batch.map { "\($0.partition)@\($0.offset)" }
                        if batch.count < limit { break }
                    }
                }
                for key in log.keys { XCTAssertTrue(order.close(key)) }
                released += order.release(limit: .max).map { "\($0.partition)@\($0.offset)" }
                XCTAssertEqual(released, reference, "seed \(seed), run \(run)")
            }
        }
    }

    func testALaneWithNothingNewHoldsLaterRecordsBackUntilAMarkFreesIt() {
        let a = PartitionKey(topic: "admin", partition: 0), r = PartitionKey(topic: "registration", partition: 0)
        var order = EventOrder(topics: topics)
        order.claim(a, next: 3, time: 100)
        order.claim(r, next: 0, time: 0)
        order.add([record(r, 0, at: 90), record(r, 1, at: 150)])
        XCTAssertEqual(order.release(limit: 10).map(\.offset), [0], "90 is before anything admin may still receive")
        XCTAssertEqual(order.buffered, 1)

        // The admin partition was read to its end (offset 3): a mark there frees the record.
        let marks = order.marksNeeded(now: 120) { _, next in next >= 3 }
        XCTAssertEqual(marks.map(\.partition), [a])
        XCTAssertEqual(marks.first?.time, 151, "past the latest waiting record, even when the clock is behind")
        XCTAssertTrue(order.marksNeeded(now: 120) { _, _ in true }.isEmpty, "not asked twice while on its way")
        XCTAssertFalse(order.markAppended(mark(a, 4, at: 151)), "a record landed before the mark: it must be read first")
        XCTAssertTrue(order.release(limit: 10).isEmpty)
        order.add([record(a, 3, at: 140), mark(a, 4, at: 151)])
        XCTAssertEqual(order.release(limit: 10).map(\.offset), [3, 4, 1], "a mark at the head of its lane waits for nothing")
        XCTAssertTrue(order.marksNeeded(now: 200) { _, _ in true }.isEmpty, "no record waits: no mark begets another")
    }

    func testAMarkAppendedRightAfterTheLastRecordFreesTheLaneAtOnce() {
        let a = PartitionKey(topic: "admin", partition: 0), r = PartitionKey(topic: "registration", partition: 0)
        var order = EventOrder(topics: topics)
        order.claim(a, next: 3, time: 100)
        order.claim(r, next: 0, time: 0)
        order.add([record(r, 0, at: 150)])
        XCTAssertTrue(order.release(limit: 10).isEmpty)
        XCTAssertTrue(order.marksNeeded(now: 0) { _, _ in false }.isEmpty, "a lane with records still to fetch is waited for")
        let marks = order.marksNeeded(now: 0) { _, _ in true }
        XCTAssertTrue(order.markAppended(mark(a, 3, at: marks[0].time)))
        // The mark is taken as read: it goes first (it waits for nothing), then the record it freed.
        XCTAssertEqual(order.release(limit: 10).map(\.partition), [a, r])
        // When it is read back it is dropped as already received, and the lane may be marked again
        // for a later record without waiting for that.
        order.add([mark(a, 3, at: marks[0].time)])
        XCTAssertTrue(order.release(limit: 10).isEmpty)
        order.add([record(r, 1, at: 300)])
        let again = order.marksNeeded(now: 0) { _, next in next >= 4 }
        XCTAssertEqual(again.map(\.partition), [a])
        XCTAssertEqual(again.first?.time, 301)
        XCTAssertTrue(order.markAppended(mark(a, 4, at: 301)))
        XCTAssertEqual(order.release(limit: 10).map(\.offset), [4, 1])
    }

    func testAHeldShardKeepsItsRecordsWhileTheOtherShardsGoOnInTheirOrder() {
        // Shard 0 (partition 0 of each topic) holds after its notification at 20; shard 1 goes on.
        let keys = topics.flatMap { topic in (0..<Int32(2)).map { PartitionKey(topic: topic, partition: $0) } }
        var order = EventOrder(topics: topics)
        for key in keys { order.claim(key, next: 0, time: 0) }
        let n0 = PartitionKey(topic: "notification", partition: 0), r0 = PartitionKey(topic: "registration", partition: 0)
        let r1 = PartitionKey(topic: "registration", partition: 1), n1 = PartitionKey(topic: "notification", partition: 1)
        order.add([record(r0, 0, at: 10), record(r0, 1, at: 30), record(n0, 0, at: 20), record(n0, 1, at: 40)])
        order.add([record(r1, 0, at: 15), record(r1, 1, at: 35), record(n1, 0, at: 25)])
        // Every other lane shows it has nothing before 1000.
        for key in keys where ![n0, r0, r1, n1].contains(key) { order.add([mark(key, 0, at: 1_000)]) }
        order.add([mark(n1, 1, at: 1_000), mark(r1, 2, at: 1_000), mark(r0, 2, at: 1_000), mark(n0, 2, at: 1_000)])
        let isSend: (DecodedRecord) -> Bool = { $0.partition == n0 && $0.offset == 0 }
        let first = order.release(limit: 100, holdingAfter: isSend).filter { !$0.isProgressMark }
        XCTAssertEqual(first.map { "\($0.partition)@\($0.offset)" },
                       ["\(r0)@0", "\(r1)@0", "\(n0)@0", "\(n1)@0", "\(r1)@1"],
                       "shard 0 stops after its send; shard 1's later records are not held back by it")
        XCTAssertEqual(order.held, [0])
        XCTAssertTrue(order.release(limit: 100, holdingAfter: isSend).filter { !$0.isProgressMark }.isEmpty)
        XCTAssertTrue(order.marksNeeded(now: 0) { _, _ in true }.isEmpty, "a held shard's waiting records ask for no mark")
        order.resume(0)
        XCTAssertEqual(order.release(limit: 100, holdingAfter: isSend).filter { !$0.isProgressMark }.map { "\($0.partition)@\($0.offset)" },
                       ["\(r0)@1", "\(n0)@1"], "resumed, in its own order")

        // Topics of unequal partition counts are one shard: holding it holds every lane.
        var single = EventOrder(topics: topics)
        single.coPartitioned = false
        for key in [n0, r1] { single.claim(key, next: 0, time: 0) }
        single.add([record(n0, 0, at: 10), record(r1, 0, at: 20), mark(n0, 1, at: 1_000), mark(r1, 1, at: 1_000)])
        XCTAssertEqual(single.release(limit: 100, holdingAfter: isSend).map(\.partition), [n0])
        XCTAssertEqual(single.held, [0])
        single.drop(n0)
        single.drop(r1)
        XCTAssertTrue(single.held.isEmpty, "a shard given up is no longer held")
    }

    func testALateRecordCountsAsTheLatestTimeOfItsPartition() {
        let r = PartitionKey(topic: "registration", partition: 0)
        var order = EventOrder(topics: topics)
        order.claim(r, next: 0, time: 500)
        order.add([record(r, 0, at: 400), record(r, 1, at: 700), record(r, 2, at: 600), record(r, 3, at: nil)])
        _ = order.close(r)
        XCTAssertEqual(order.release(limit: 10).map(\.eventTime), [500, 700, 700, 700])
    }
}
