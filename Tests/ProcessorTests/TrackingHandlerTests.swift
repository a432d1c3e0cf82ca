import Contracts
import Foundation
import Logging
import Projections
import XCTest
@testable import Processor

/// The tracking rules (docs/API.md#engagement-tracking), decided in memory: what is counted, parked
/// or rejected.
final class TrackingHandlerTests: XCTestCase {
    let appId = UUID(), otherApp = UUID(), deliveryId = UUID()
    let at = Date(timeIntervalSince1970: 1_800_000_000)

    private func delivery(app: UUID? = nil, tracking: Bool = true, sent: Int = 3) -> DeliveryRow {
        DeliveryRow(appId: app ?? appId, deliveryId: deliveryId, kind: .alert, managed: false, tracking: tracking, sent: sent, createdAt: at)
    }

    private func state(_ delivery: DeliveryRow? = nil, tracked: [TrackedEvent] = []) -> BatchState {
        var snapshot = StateSnapshot()
        if let delivery { snapshot.deliveries[delivery.deliveryId] = delivery }
        if !tracked.isEmpty { snapshot.trackedEvents[deliveryId] = tracked }
        return BatchState(snapshot)
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

    func testTrackingOffAndAnotherAppsDeliveryRejectEveryEvent() {
        var off = state(delivery(tracking: false))
        XCTAssertEqual(TrackingHandler().apply(report([(id(0), .impression), (id(1), .open)]), CommandContext(at: at), to: &off), .rejected("tracking-off"))
        XCTAssertTrue(off.mutations.isEmpty)
        XCTAssertEqual(off.trackingOutcomes, [.rejected(.trackingOff): 2])

        var foreign = state(delivery(app: otherApp))
        XCTAssertEqual(TrackingHandler().apply(report([(id(0), .impression)]), CommandContext(at: at), to: &foreign), .rejected("unknown-delivery"))
        XCTAssertTrue(foreign.mutations.isEmpty)
        XCTAssertEqual(foreign.trackingOutcomes, [.rejected(.unknownDelivery): 1])
    }

    func testEventsBeforeTheirSendAreParkedUnlessTheIdCannotBeTheDeliverys() {
        var s = state()
        let result = TrackingHandler().apply(report([(id(5000), .open), (id(0, of: UUID()), .open)]), CommandContext(at: at), to: &s)
        XCTAssertEqual(result, .applied)
        XCTAssertEqual(counted(s), [key(5000, .open)], "the sent count is not known yet: the send settles it")
        XCTAssertEqual(s.trackingOutcomes, [.parked: 1, .rejected(.foreignBroadlog): 1])
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
        XCTAssertEqual(s.trackingOutcomes, [.rejected(.foreignBroadlog): 2, .rejected(.unknownDelivery): 1])
        XCTAssertEqual(s.mutations, [.discardTracking(deliveryId: deliveryId, appId: appId, validBelow: 3)])

        var off = state(tracked: tracked)
        TrackingHandler.settle(delivery(tracking: false), state: &off)
        XCTAssertEqual(off.trackingOutcomes, [.rejected(.trackingOff): 1 + 5 + 2, .rejected(.unknownDelivery): 1])
        XCTAssertEqual(off.mutations, [.discardTracking(deliveryId: deliveryId, appId: appId, validBelow: 0)])
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
        XCTAssertEqual(sendFirst.dump.components(separatedBy: "\n").filter { $0.hasPrefix("tracking_events ") }.count, 4,
                       "only the counted (device, action) rows are kept")
    }
}
