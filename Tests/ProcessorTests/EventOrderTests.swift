import Contracts
import Foundation
@testable import Processor
@testable import Handlers
import Projections
import TestSupport
import WireCodec
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
                        released += batch.records.map { "\($0.partition)@\($0.offset)" }
                        if batch.count < limit { break }
                    }
                }
                for key in log.keys { XCTAssertTrue(order.close(key)) }
                released += order.release(limit: .max).records.map { "\($0.partition)@\($0.offset)" }
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
        XCTAssertEqual(order.release(limit: 10).records.map(\.offset), [0], "90 is before anything admin may still receive")
        XCTAssertEqual(order.buffered, 1)

        // The admin partition was read to its end (offset 3): a mark there frees the record.
        let marks = order.marksNeeded(now: 120) { _, next in next >= 3 }
        XCTAssertEqual(marks.map(\.partition), [a])
        XCTAssertEqual(marks.first?.time, 151, "past the latest waiting record, even when the clock is behind")
        XCTAssertTrue(order.marksNeeded(now: 120) { _, _ in true }.isEmpty, "not asked twice while on its way")
        XCTAssertFalse(order.appended(mark(a, 4, at: 151)), "a record landed before the mark: it must be read first")
        XCTAssertTrue(order.release(limit: 10).isEmpty)
        order.add([record(a, 3, at: 140), mark(a, 4, at: 151)])
        XCTAssertEqual(order.release(limit: 10).records.map(\.offset), [3, 4, 1], "a mark at the head of its lane waits for nothing")
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
        XCTAssertTrue(order.appended(mark(a, 3, at: marks[0].time)))
        // The mark is taken as read: it goes first (it waits for nothing), then the record it freed.
        XCTAssertEqual(order.release(limit: 10).records.map(\.partition), [a, r])
        // When it is read back it is dropped as already received, and the lane may be marked again
        // for a later record without waiting for that.
        order.add([mark(a, 3, at: marks[0].time)])
        XCTAssertTrue(order.release(limit: 10).isEmpty)
        order.add([record(r, 1, at: 300)])
        let again = order.marksNeeded(now: 0) { _, next in next >= 4 }
        XCTAssertEqual(again.map(\.partition), [a])
        XCTAssertEqual(again.first?.time, 301)
        XCTAssertTrue(order.appended(mark(a, 4, at: 301)))
        XCTAssertEqual(order.release(limit: 10).records.map(\.offset), [4, 1])
    }

    private let decoder = CommandDecoder(registry: .standard())

    /// A command of `app` at time `at`: a send to its audience (`send`), or a registration.
    private func command(_ partition: PartitionKey, _ offset: Int64, at: Int64, app: UUID, send: Bool = false) -> DecodedRecord {
        let payload: any Command = send
            ? NotificationRequested(deliveryId: UUID(), mobileAppId: app, target: NotificationTarget(audience: "all"),
                                    content: NotificationContent(title: "t"), managed: false, businessId: nil, tracking: false, kind: .alert)
            : DeviceRegistrationRequested(registrationRequestId: UUID(), orgId: UUID(), mobileAppId: app, userId: "u", platform: .ios,
                                          deviceToken: String(repeating: "a", count: 64), apiTokenHash: "h", trackStatus: false, callback: nil)
        let encoded = try! EncodedCommand(payload, topics: Topics(), id: UUID(), at: EventTime.date(at), encoder: WireJSON.encoder())
        return DecodedRecord(partition: partition, offset: offset, requestId: nil,
                             outcome: decoder.decode(type: encoded.type, version: encoded.version, value: encoded.value), type: encoded.type,
                             value: encoded.value, at: at)
    }

    private func isSend(_ record: DecodedRecord) -> Bool {
        guard case .command(let c) = record.outcome else { return false }
        return c.payload is NotificationRequested
    }

    private func names(_ records: [DecodedRecord]) -> [String] {
        records.filter { !$0.isProgressMark }.map { "\($0.partition)@\($0.offset)" }
    }

    func testAHeldAppPartsRecordsAreReleasedApartWhileTheOtherAppsGoOnInTheirOrder() {
        // One shard: apps A and B share every lane. A's send at 20 holds A; B goes on.
        let r = PartitionKey(topic: "registration", partition: 0), n = PartitionKey(topic: "notification", partition: 0)
        let (a, b) = (UUID(), UUID())
        var order = EventOrder(topics: topics)
        for key in topics.map({ PartitionKey(topic: $0, partition: 0) }) { order.claim(key, next: 0, time: 0) }
        order.add([command(r, 0, at: 10, app: a), command(r, 1, at: 30, app: b), command(r, 2, at: 35, app: a), command(r, 3, at: 45, app: b)])
        order.add([command(n, 0, at: 20, app: a, send: true), command(n, 1, at: 40, app: b, send: true)])
        for topic in topics { order.add([mark(PartitionKey(topic: topic, partition: 0), topic == "registration" ? 4 : topic == "notification" ? 2 : 0,
                                              at: 1_000)]) }

        let first = order.release(limit: 100, startsHold: isSend)
        XCTAssertEqual(names(first.records), ["\(r)@0"], "the records before the send")
        XCTAssertEqual(names(first.diverted), ["\(n)@0"], "the send begins its app's hold, and is the last released")
        let admin = PartitionKey(topic: "admin", partition: 0), tracking = PartitionKey(topic: "tracking", partition: 0)
        let (heldA, heldB) = (HeldApp(app: a, part: 0), HeldApp(app: b, part: 0))
        XCTAssertEqual(Set(first.started), [
            HeldLane(held: heldA, lane: n, next: 0, eventTime: 0), HeldLane(held: heldA, lane: r, next: 1, eventTime: 10),
            HeldLane(held: heldA, lane: admin, next: 1, eventTime: 1_000), HeldLane(held: heldA, lane: tracking, next: 1, eventTime: 1_000),
        ], "one row per lane of the shard: where A's records stop being applied, with the lane's time there")
        XCTAssertEqual(order.held, [heldA: 0])

        let second = order.release(limit: 100, startsHold: isSend)
        XCTAssertEqual(names(second.records), ["\(r)@1"], "B's records go on in their order")
        XCTAssertEqual(names(second.diverted), ["\(r)@2", "\(n)@1"], "A's later record is released apart; B's send begins B's hold")
        XCTAssertEqual(Set(second.started), [
            HeldLane(held: heldB, lane: n, next: 1, eventTime: 20), HeldLane(held: heldB, lane: r, next: 3, eventTime: 35),
            HeldLane(held: heldB, lane: admin, next: 1, eventTime: 1_000), HeldLane(held: heldB, lane: tracking, next: 1, eventTime: 1_000),
        ])
        let third = order.release(limit: 100, startsHold: isSend)
        XCTAssertEqual(names(third.diverted), ["\(r)@3"])
        XCTAssertTrue(names(third.records).isEmpty)
        XCTAssertEqual(order.held, [heldA: 0, heldB: 0])

        order.resume(heldA)
        XCTAssertEqual(order.held, [heldB: 0])
        order.add([command(r, 5, at: 1_100, app: a), mark(r, 6, at: 2_000)])
        for topic in topics where topic != "registration" { order.add([mark(PartitionKey(topic: topic, partition: 0), topic == "notification" ? 3 : 1, at: 2_000)]) }
        XCTAssertEqual(names(order.release(limit: 100).records), ["\(r)@5"], "let go, A's records flow with the others'")
    }

    func testALaneClaimedWithAHeldAppPartReleasesOnlyItsRecordsBelowTheStoredOffset() {
        // The log of one shard, as the hold above left it: the partitions' offsets are past A's
        // send and later registration; A's rows say they are not applied.
        let r = PartitionKey(topic: "registration", partition: 0), n = PartitionKey(topic: "notification", partition: 0)
        let (a, b) = (UUID(), UUID()), held = HeldApp(app: a, part: 0)
        let log: [PartitionKey: [DecodedRecord]] = [
            r: [command(r, 0, at: 10, app: a), command(r, 1, at: 30, app: b), command(r, 2, at: 25, app: a), command(r, 3, at: 45, app: b),
                command(r, 4, at: 50, app: a)],
            n: [command(n, 0, at: 20, app: a, send: true), command(n, 1, at: 40, app: b)],
        ]
        // Applied: r up to 4 (B's 1 and 3), n up to 2 (B's 1); A's rows: r from 1 at time 10, n from 0.
        var order = EventOrder(topics: topics)
        order.claim(r, next: 4, time: 45, held: [HeldLane(held: held, lane: r, next: 1, eventTime: 10),
                                                 HeldLane(held: held, lane: n, next: 0, eventTime: 0)])
        order.claim(n, next: 2, time: 40, held: [HeldLane(held: held, lane: r, next: 1, eventTime: 10),
                                                 HeldLane(held: held, lane: n, next: 0, eventTime: 0)])
        XCTAssertEqual(order.next(r), 1, "the lane is read again from A's row")
        XCTAssertEqual(order.next(n), 0)
        XCTAssertEqual(order.held, [held: 0])
        XCTAssertTrue(order.caughtUp(HeldApp(app: b, part: 0)), "an app part not held has nothing to catch up")

        order.add(Array(log[r]![1...]))
        XCTAssertFalse(order.caughtUp(held), "A's records below the stored offsets are not all released yet")
        order.add(log[n]!)
        order.add([mark(r, 5, at: 1_000), mark(n, 2, at: 1_000)])
        let out = order.release(limit: 100)
        XCTAssertEqual(names(out.diverted), ["\(n)@0", "\(r)@2", "\(r)@4"], "A's records, in their order, again")
        XCTAssertEqual(out.diverted.map(\.eventTime), [20, 30, 50], "with the times their lanes gave them the first time")
        XCTAssertTrue(names(out.records).isEmpty, "B's records below the offsets are applied: not released again")
        XCTAssertTrue(order.caughtUp(held))
    }

    func testAHoldBegunWhileAnotherIsCaughtUpStartsAtTheStoredOffsetsNotBelow() {
        // A is held from r@0 (recovered); B's send at n@1, past the stored offsets, holds B from
        // there: B's records below the stored offsets are applied, so its row on r is not below them.
        let r = PartitionKey(topic: "registration", partition: 0), n = PartitionKey(topic: "notification", partition: 0)
        let (a, b) = (UUID(), UUID()), heldA = HeldApp(app: a, part: 0)
        let rows = [HeldLane(held: heldA, lane: r, next: 0, eventTime: 0), HeldLane(held: heldA, lane: n, next: 1, eventTime: 5)]
        var order = EventOrder(topics: topics)
        order.claim(r, next: 3, time: 30, held: rows)
        order.claim(n, next: 1, time: 5, held: rows)
        order.add([command(r, 0, at: 10, app: a), command(r, 1, at: 20, app: b), command(r, 2, at: 30, app: a)])
        order.add([command(n, 1, at: 15, app: b, send: true)])
        let out = order.release(limit: 100, startsHold: isSend)
        XCTAssertEqual(names(out.diverted), ["\(r)@0", "\(n)@1"], "A's record at 10, then B's send at 15, the last")
        XCTAssertEqual(Set(out.started.map { "\($0.lane)@\($0.next)/\($0.eventTime)" }), ["\(r)@3/30", "\(n)@1/5"])
    }

    /// The protocol of holds (`ApplyLoop.Holds`) in miniature, over random logs of three apps in
    /// one shard, with random arrivals, releases, queue steps, let-gos and crashes: whatever
    /// happens, each app's records are applied once each, in the order and with the event times
    /// they have without any hold. What survives a crash is what the store would hold: the
    /// partitions' offsets and times, and the held rows.
    func testHoldsApplyEachAppsRecordsOnceInItsOrderThroughRandomCrashes() {
        let lanes = topics.map { PartitionKey(topic: $0, partition: 0) }
        // Fixed ids, so that a seed repeats its history (queues are picked in the ids' order).
        let apps = (1...3).map { UUID(uuidString: "00000000-0000-4000-8000-00000000000\($0)")! }
        var holdsBegun = 0, crashesWhileHeld = 0, letGo = 0
        for seed in UInt64(1)...30 {
            var random = SplitMix64(seed: seed)
            var log: [PartitionKey: [DecodedRecord]] = [:]
            for lane in lanes {
                var time = Int64(random.next() % 20)
                log[lane] = (0..<Int64(5 + random.next() % 25)).map { offset in
                    time += Int64(random.next() % 15)
                    let app = apps[Int(random.next() % 3)]
                    let at = random.next() % 6 == 0 ? time - Int64(random.next() % 20) : time
                    return command(lane, offset, at: at, app: app, send: lane.topic == "notification" && random.next() % 3 == 0)
                }
            }
            // The reference: everything released at once, no hold.
            var plain = EventOrder(topics: topics)
            for lane in lanes { plain.claim(lane, next: 0, time: 0) }
            for lane in lanes { plain.add(log[lane]!) }
            for lane in lanes { _ = plain.close(lane) }
            var expected: [UUID: [String]] = [:]
            for record in plain.release(limit: .max).records { expected[record.heldApp!.app, default: []].append("\(record.partition)@\(record.offset)/\(record.eventTime)") }

            // The store: offsets with their times, and the held rows.
            var offsets: [PartitionKey: (next: Int64, time: Int64)] = [:]
            var rows: [HeldApp: [PartitionKey: (next: Int64, time: Int64)]] = [:]
            var applied: [UUID: [String]] = [:]
            func apply(_ record: DecodedRecord) { applied[record.heldApp!.app, default: []].append("\(record.partition)@\(record.offset)/\(record.eventTime)") }

            var order = EventOrder(topics: topics)
            var read: [PartitionKey: Int64] = [:]
            var queues: [HeldApp: [DecodedRecord]] = [:]
            func start() {
                order = EventOrder(topics: topics)
                let held = rows.flatMap { app, lanes in lanes.map { HeldLane(held: app, lane: $0.key, next: $0.value.next, eventTime: $0.value.time) } }
                for lane in lanes { order.claim(lane, next: offsets[lane]?.next ?? 0, time: offsets[lane]?.time ?? 0, held: held) }
                for lane in lanes {
                    read[lane] = order.next(lane)!
                    // A lane read to its end holds nothing back (a progress mark's part, in the log).
                    if read[lane]! == Int64(log[lane]!.count) { _ = order.close(lane) }
                }
                queues = Dictionary(uniqueKeysWithValues: rows.keys.map { ($0, []) })
            }
            start()
            var steps = 0
            while true {
                steps += 1
                XCTAssertLessThan(steps, 100_000, "seed \(seed): no end")
                if steps >= 100_000 { break }
                let unread = lanes.filter { read[$0]! < Int64(log[$0]!.count) }
                if unread.isEmpty && queues.values.allSatisfy(\.isEmpty) && order.buffered == 0 && rows.isEmpty { break }
                switch random.next() % 10 {
                case 0, 1, 2:
                    // A chunk of a lane arrives; at its end the lane is closed (nothing more comes).
                    guard let lane = unread.isEmpty ? nil : unread[Int(random.next() % UInt64(unread.count))] else { continue }
                    let from = Int(read[lane]!), take = 1 + Int(random.next() % 4)
                    let chunk = Array(log[lane]![from..<min(from + take, log[lane]!.count)])
                    order.add(chunk)
                    read[lane] = chunk.last!.offset + 1
                    if read[lane]! == Int64(log[lane]!.count) { _ = order.close(lane) }
                case 3, 4, 5:
                    // The loop's turn: the main records are committed with their offsets; then a new
                    // hold's rows and the offsets past the diverted records, in one transaction.
                    let out = order.release(limit: 1 + Int(random.next() % 5), startsHold: isSend)
                    for record in out.records {
                        apply(record)
                        offsets[record.partition] = (record.offset + 1, record.eventTime)
                    }
                    for row in out.started { rows[row.held, default: [:]][row.lane] = (row.next, row.eventTime) }
                    if !out.started.isEmpty { holdsBegun += 1 }
                    if let first = out.started.first { queues[first.held] = [] }
                    for record in out.diverted {
                        if record.offset + 1 > offsets[record.partition]?.next ?? 0 { offsets[record.partition] = (record.offset + 1, record.eventTime) }
                        queues[record.heldApp!]!.append(record)
                    }
                case 6, 7:
                    // A queue's step: some of its records, its rows moved past them.
                    let ready = queues.filter { !$0.value.isEmpty }.keys.sorted { $0.description < $1.description }
                    guard !ready.isEmpty else { continue }
                    let app = ready[Int(random.next() % UInt64(ready.count))]
                    for record in queues[app]!.prefix(1 + Int(random.next() % 3)) {
                        apply(record)
                        rows[app]![record.partition] = (record.offset + 1, record.eventTime)
                        queues[app]!.removeFirst()
                    }
                case 8:
                    // The loop lets go of the holds that are drained and caught up.
                    for (app, queue) in queues where queue.isEmpty && order.caughtUp(app) {
                        rows[app] = nil
                        queues[app] = nil
                        order.resume(app)
                        letGo += 1
                    }
                default:
                    // A crash: what was not committed is gone; the next processor starts from the store.
                    if random.next() % 3 == 0 {
                        if !rows.isEmpty { crashesWhileHeld += 1 }
                        start()
                    }
                }
            }
            XCTAssertEqual(applied, expected, "seed \(seed)")
        }
        // The histories did what they are for.
        XCTAssertGreaterThan(holdsBegun, 30)
        XCTAssertGreaterThan(crashesWhileHeld, 30)
        XCTAssertGreaterThan(letGo, 30)
    }

    func testALateRecordCountsAsTheLatestTimeOfItsPartition() {
        let r = PartitionKey(topic: "registration", partition: 0)
        var order = EventOrder(topics: topics)
        order.claim(r, next: 0, time: 500)
        order.add([record(r, 0, at: 400), record(r, 1, at: 700), record(r, 2, at: 600), record(r, 3, at: nil)])
        _ = order.close(r)
        XCTAssertEqual(order.release(limit: 10).records.map(\.eventTime), [500, 700, 700, 700])
    }
}
