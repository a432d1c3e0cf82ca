import Contracts
import Foundation
import Logging
import OutboundRendering
import Projections
import XCTest
@testable import Processor
@testable import Handlers

/// The tracking rules (docs/API.md#engagement-tracking), decided in memory: what is counted, parked
/// or rejected.
final class TrackingHandlerTests: XCTestCase {
    // Fixed ids: a send settles its pairs in app id order.
    let appId = UUID(uuidString: "00000000-0000-0000-0000-00000000000a")!, otherApp = UUID(uuidString: "00000000-0000-0000-0000-00000000000b")!
    let deliveryId = UUID()
    let at = Date(timeIntervalSince1970: 1_800_000_000)
    var mine: TrackingPair { TrackingPair(deliveryId: deliveryId, appId: appId) }
    var theirs: TrackingPair { TrackingPair(deliveryId: deliveryId, appId: otherApp) }

    private func delivery(app: UUID? = nil, tracking: Bool = true, sent: Int = 3) -> DeliveryRow {
        DeliveryRow(appId: app ?? appId, deliveryId: deliveryId, kind: .alert, managed: false, tracking: tracking, sent: sent, createdAt: at)
    }

    /// A batch over these loaded rows, its clock at `at`; `parkedAt` marks every pair of
    /// `tracked` parked then.
    private func state(_ delivery: DeliveryRow? = nil, tracked: [TrackedEvent] = [], parkedAt: Date? = nil,
                       parkTime: Duration = .seconds(3600)) -> BatchState {
        var snapshot = StateSnapshot()
        if let delivery { snapshot.deliveries[delivery.key] = delivery }
        if !tracked.isEmpty { snapshot.trackedEvents[deliveryId] = tracked }
        for event in tracked {
            snapshot.parkedTracking[TrackingPair(deliveryId: deliveryId, appId: event.appId)] = parkedAt ?? at
        }
        var state = BatchState(snapshot, trackingParkTime: parkTime)
        state.advance(to: at, app: appId, part: 0)
        state.advance(to: at, app: otherApp, part: 0)
        return state
    }

    private func id(_ index: Int, of delivery: UUID? = nil) -> String { MessageId.make(deliveryId: delivery ?? deliveryId, index: index) }

    private func report(_ events: [(String, TrackingAction)], app: UUID? = nil) -> TrackingReported {
        TrackingReported(mobileAppId: app ?? appId, deliveryId: deliveryId,
                         events: events.map { TrackingEvent(broadlogId: $0.0, action: $0.1) })
    }

    /// The counts the batch writes (after `finishTracking`), as (index, action, reports).
    private func counted(_ s: BatchState) -> [TrackingCount] {
        var s = s
        s.finishTracking()
        return s.mutations.flatMap { mutation -> [TrackingCount] in
            guard case .countTracking(let batch) = mutation else { return [] }
            XCTAssertEqual(batch.appId, appId)
            XCTAssertEqual(batch.deliveryId, deliveryId)
            return batch.counts
        }
    }

    private func key(_ index: Int, _ action: TrackingAction, reports: Int = 1) -> TrackingCount {
        TrackingCount(action: action, messageIndex: index, reports: reports)
    }

    func testEventsOfAKnownTrackedDeliveryAreCountedByDeviceIndexRepeatsIncluded() {
        var s = state(delivery())
        let result = TrackingHandler().apply(report([(id(0), .impression), (id(2), .open), (id(0), .impression)]), CommandContext(at: at), to: &s)
        XCTAssertEqual(result, .applied)
        XCTAssertEqual(counted(s), [key(2, .open), key(0, .impression, reports: 2)],
                       "one count per (action, device) of the batch, with its number of reports")
        XCTAssertEqual(s.trackingOutcomes, [.counted: 3])
    }

    func testForeignBroadlogIdsAreRejectedOneByOne() {
        var s = state(delivery(sent: 3))
        let otherDelivery = UUID()
        let events: [(String, TrackingAction)] = [
            (id(1), .click),
            (id(3), .click),                        // well formed, but the delivery reached 3 devices
            (id(1, of: otherDelivery), .click),     // another delivery's id
            ("1-0000000000000000", .click),         // wrong check digits
            ("garbage", .click),
        ]
        XCTAssertEqual(TrackingHandler().apply(report(events), CommandContext(at: at), to: &s), .applied)
        XCTAssertEqual(counted(s), [key(1, .click)])
        XCTAssertEqual(s.trackingOutcomes, [.counted: 1, .rejected(.foreignBroadlog): 4])
    }

    func testTrackingOffRejectsEveryEventAndAnotherAppsDeliveryIsOneThisAppHasNotSent() {
        var off = state(delivery(tracking: false))
        XCTAssertEqual(TrackingHandler().apply(report([(id(0), .impression), (id(1), .open)]), CommandContext(at: at), to: &off), .rejected("tracking-off"))
        XCTAssertTrue(off.mutations.isEmpty)
        XCTAssertEqual(off.trackingOutcomes, [.rejected(.trackingOff): 2])

        var foreign = state(delivery(app: otherApp))
        XCTAssertEqual(TrackingHandler().apply(report([(id(0), .impression)]), CommandContext(at: at), to: &foreign), .applied)
        XCTAssertEqual(foreign.mutations, [.parkTracking(mine, at: at)],
                       "parked as if unknown: the other app's row is another processor's, and is not looked at")
        XCTAssertEqual(foreign.trackingOutcomes, [.parked: 1])
    }

    func testEventsBeforeTheirSendAreParkedUnlessTheIdCannotBeTheDeliverys() {
        var s = state()
        let result = TrackingHandler().apply(report([(id(5000), .open), (id(0, of: UUID()), .open)]), CommandContext(at: at), to: &s)
        XCTAssertEqual(result, .applied)
        XCTAssertEqual(counted(s), [key(5000, .open)], "the sent count is not known yet: the send settles it")
        XCTAssertEqual(s.trackingOutcomes, [.parked: 1, .rejected(.foreignBroadlog): 1])
        XCTAssertEqual(s.mutations, [.parkTracking(mine, at: at)], "parked since the first report, once")
    }

    func testASendSettlesWhatWasParkedBeforeIt() {
        let tracked = [
            TrackedEvent(appId: appId, action: .impression, messageIndex: 0, repeats: 0),
            TrackedEvent(appId: appId, action: .open, messageIndex: 2, repeats: 4),
            TrackedEvent(appId: appId, action: .click, messageIndex: 3, repeats: 1),  // past sent: 2 reports
            TrackedEvent(appId: otherApp, action: .click, messageIndex: 0, repeats: 0),
        ]
        var s = state(tracked: tracked)
        TrackingHandler.settle(delivery(sent: 3), state: &s)
        XCTAssertEqual(s.trackingOutcomes, [.rejected(.foreignBroadlog): 2])
        XCTAssertEqual(s.mutations, [.deleteTracking(mine, [TrackingRowKey(action: .click, messageIndex: 3)]), .unparkTracking(mine)],
                       "the rows it cannot own go by their keys; its own pair is its delivery's now; another app's is left to expire")

        var off = state(tracked: tracked)
        TrackingHandler.settle(delivery(tracking: false), state: &off)
        XCTAssertEqual(off.trackingOutcomes, [.rejected(.trackingOff): 1 + 5 + 2])
        XCTAssertEqual(off.mutations, [.dropTracking(mine)])
    }

    /// The reports a batch gathered before its send are written after it (`finishTracking`):
    /// the send settles them in memory, and the store is only told the outcome.
    func testASendSettlesTheReportsGatheredBeforeItInTheSameBatch() {
        var s = state()
        _ = TrackingHandler().apply(report([(id(0), .open), (id(5), .open), (id(0), .open)]), CommandContext(at: at), to: &s)
        _ = TrackingHandler().apply(report([(id(1), .click)], app: otherApp), CommandContext(at: at), to: &s)
        TrackingHandler.settle(delivery(sent: 3), state: &s)
        s.finishTracking()
        XCTAssertEqual(s.mutations, [
            .parkTracking(mine, at: at), .parkTracking(theirs, at: at), .unparkTracking(mine),
            .countTracking(TrackingCounts(appId: appId, deliveryId: deliveryId, counts: [key(0, .open, reports: 2)])),
            .countTracking(TrackingCounts(appId: otherApp, deliveryId: deliveryId, counts: [key(1, .click)])),
        ])
        XCTAssertEqual(s.trackingOutcomes, [.parked: 4, .rejected(.foreignBroadlog): 1])
    }

    /// Parked reports expire by the batch's clock (command times): at the first command more
    /// than the park time after the pair was parked, whatever the batch boundaries.
    func testParkedReportsExpireAtTheFirstCommandPastTheirParkTime() {
        let tracked = [TrackedEvent(appId: appId, action: .open, messageIndex: 0, repeats: 0)]
        let later = at.addingTimeInterval(3601)

        var send = state(tracked: tracked, parkedAt: at)
        send.advance(to: at.addingTimeInterval(3600), app: appId, part: 0)
        TrackingHandler.settle(delivery(sent: 3), state: &send)
        XCTAssertEqual(send.mutations, [.unparkTracking(mine)], "within the park time: the send takes them")

        var late = state(tracked: tracked, parkedAt: at)
        late.advance(to: later, app: appId, part: 0)
        TrackingHandler.settle(delivery(sent: 3), state: &late)
        XCTAssertEqual(late.mutations, [.dropTracking(mine)], "past it: gone before the send")

        var again = state(tracked: tracked, parkedAt: at)
        again.advance(to: later, app: appId, part: 0)
        _ = TrackingHandler().apply(report([(id(1), .click)]), CommandContext(at: later), to: &again)
        again.finishTracking()
        XCTAssertEqual(again.mutations, [
            .dropTracking(mine), .parkTracking(mine, at: later),
            .countTracking(TrackingCounts(appId: appId, deliveryId: deliveryId, counts: [key(1, .click)])),
        ], "a report past the park time parks anew, without the expired ones")

        var idle = state(tracked: tracked, parkedAt: at)
        idle.advance(to: later, app: appId, part: 0)
        idle.finishTracking()
        XCTAssertEqual(idle.mutations, [.dropTracking(mine)], "the app's last command expires what no command touched")

        var otherClock = state(tracked: tracked, parkedAt: at)
        otherClock.advance(to: later, app: otherApp, part: 0)
        otherClock.finishTracking()
        XCTAssertEqual(otherClock.mutations, [], "another app's commands move its own clock only")
    }
}

/// Tracking and the send it reports on travel on different topics, so either may be applied
/// first, or both in one batch. Through the real applier and a real SQLite store, every order
/// must end in the same tables and the same statistics.
final class TrackingOrderTests: ApplierTestCase {
    let appId = UUID(), otherApp = UUID(), org = UUID()

    private func run(_ batches: [[ConsumedRecord]], name: String, deliveries: [UUID]) async throws -> (dump: String, stats: [DeliveryStatsRow?]) {
        let store = try await apply(batches, name: name).store
        var stats: [DeliveryStatsRow?] = []
        for id in deliveries { stats.append(try await store.deliveryStats(app: appId, deliveryId: id)) }
        return (try await store.dump(), stats)
    }

    func testEveryOrderOfSendAndTrackingEndsInTheSameCounts() async throws {
        let tokenHash = ApiTokens.hash("t")
        let tokens = (0..<3).map { String(repeating: "a\($0)", count: 32) }
        let setup = try [record(AppCreated(orgId: org, mobileAppId: appId, name: "a", tokenId: UUID(), tokenHash: tokenHash), partition: 0, offset: 0)]
            + tokens.enumerated().map { i, token in
                try record(DeviceRegistrationRequested(registrationRequestId: UUID(), orgId: org, mobileAppId: appId, userId: "u",
                                                       platform: .ios, deviceToken: token, apiTokenHash: tokenHash, trackStatus: false,
                                                       callback: nil), partition: 1, offset: Int64(i))
            }
        let tracked = NotificationRequested(deliveryId: UUID(), mobileAppId: appId, target: NotificationTarget(userIds: ["u"]),
                                            content: NotificationContent(text: "hello"))
        let untracked = NotificationRequested(deliveryId: UUID(), mobileAppId: appId, target: NotificationTarget(userIds: ["u"]),
                                              content: NotificationContent(text: "quiet"), tracking: false)
        let sends = [try record(tracked, partition: 0, offset: 0), try record(untracked, partition: 0, offset: 1)]
        func id(_ i: Int, _ d: UUID = tracked.deliveryId) -> String { MessageId.make(deliveryId: d, index: i) }
        let reports = [
            TrackingReported(mobileAppId: appId, deliveryId: tracked.deliveryId, events: [
                TrackingEvent(broadlogId: id(0), action: .impression), TrackingEvent(broadlogId: id(1), action: .impression),
                TrackingEvent(broadlogId: id(1), action: .click), TrackingEvent(broadlogId: id(2), action: .open),  // open, no impression
                TrackingEvent(broadlogId: id(0), action: .impression), TrackingEvent(broadlogId: id(3), action: .click),  // past sent
            ]),
            TrackingReported(mobileAppId: appId, deliveryId: tracked.deliveryId, events: [
                TrackingEvent(broadlogId: id(0), action: .impression),  // a second repeat, another request
                TrackingEvent(broadlogId: id(0, untracked.deliveryId), action: .open),  // another delivery's id
            ]),
            TrackingReported(mobileAppId: otherApp, deliveryId: tracked.deliveryId, events: [TrackingEvent(broadlogId: id(1), action: .open)]),
            TrackingReported(mobileAppId: appId, deliveryId: untracked.deliveryId, events: [
                TrackingEvent(broadlogId: id(0, untracked.deliveryId), action: .impression),
            ]),
        ]
        let tracking = try reports.enumerated().map { i, r in try record(r, partition: 3, offset: Int64(i)) }
        let ids = [tracked.deliveryId, untracked.deliveryId]

        let sendFirst = try await run([setup, sends, tracking], name: "send-first.sqlite", deliveries: ids)
        let trackingFirst = try await run([setup, tracking, sends], name: "tracking-first.sqlite", deliveries: ids)
        let oneBatch = try await run([setup, tracking + sends], name: "one-batch.sqlite", deliveries: ids)
        let oneByOne = try await run([setup] + (tracking.prefix(2) + sends + tracking.suffix(2)).map { [$0] }, name: "interleaved.sqlite",
                                     deliveries: ids)

        let stats = try XCTUnwrap(sendFirst.stats[0])
        XCTAssertEqual(stats.delivery.sent, 3)
        XCTAssertEqual([stats.impressions, stats.clicks, stats.opens, stats.repeatsIgnored], [2, 1, 1, 2])
        let quiet = try XCTUnwrap(sendFirst.stats[1])
        XCTAssertEqual([quiet.delivery.sent, quiet.impressions, quiet.clicks, quiet.opens, quiet.repeatsIgnored], [3, 0, 0, 0, 0])
        for other in [trackingFirst, oneBatch, oneByOne] {
            XCTAssertEqual(other.stats, sendFirst.stats)
            XCTAssertEqual(other.dump, sendFirst.dump)
        }
        XCTAssertEqual(sendFirst.dump.components(separatedBy: "\n").filter { $0.hasPrefix("tracking_events ") }.count, 5,
                       "only the counted (device, action) rows are kept, and the other app's report, parked under that app")
    }
}
