import Contracts
import Foundation
@testable import Projections
import Testing

/// The tracking rows (docs/API.md#delivery-statistics) in a real store: counting, repeats,
/// discarding what a delivery cannot own, settling a count against a stored delivery, statistics,
/// loading, dumping.
@Suite(.serialized) struct TrackingStoreTests {
    /// One report of (action, device) as a mutation of its own.
    private func key(_ app: UUID, _ delivery: UUID, _ action: TrackingAction, _ index: Int) -> TrackingCounts {
        TrackingCounts(appId: app, deliveryId: delivery, counts: [TrackingCount(action: action, messageIndex: index)])
    }

    @Test(arguments: StoreBackend.allCases)
    func testCountingStoresEachDeviceActionOnceAndCountsRepeats(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let app = UUID()
            let delivery = Fixture.delivery(app: app, tracking: true, sent: 10)
            let d = delivery.deliveryId
            try await store.commit(mutations: [.putDelivery(delivery)], offsets: [])
            try await store.commit(mutations: [
                .countTracking(key(app, d, .impression, 0)), .countTracking(key(app, d, .impression, 1)),
                .countTracking(key(app, d, .impression, 0)), .countTracking(key(app, d, .click, 1)),
                .countTracking(key(app, d, .open, 4)),
            ], offsets: [])
            try await store.commit(mutations: [.countTracking(key(app, d, .impression, 0)), .countTracking(key(app, d, .open, 4))], offsets: [])

            let stats = try await store.deliveryStats(app: app, deliveryId: d)
            #expect(stats == DeliveryStatsRow(delivery: delivery, impressions: 2, clicks: 1, opens: 1, repeatsIgnored: 3))

            // Several reports of one (action, device) in one count: the first stores, the rest repeat.
            try await store.commit(mutations: [.countTracking(TrackingCounts(appId: app, deliveryId: d, counts: [
                TrackingCount(action: .click, messageIndex: 1, reports: 3), TrackingCount(action: .click, messageIndex: 7, reports: 4),
            ]))], offsets: [])
            let after = try await store.deliveryStats(app: app, deliveryId: d)
            #expect(after == DeliveryStatsRow(delivery: delivery, impressions: 2, clicks: 2, opens: 1, repeatsIgnored: 3 + 3 + 3))
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testManyCountsOfOneDeliveryInOneMutation(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let app = UUID()
            let delivery = Fixture.delivery(app: app, tracking: true, sent: 1000)
            let d = delivery.deliveryId
            // More rows than one multi-row statement takes, and a remainder; some rows exist already.
            let n = 3 * SQLiteMutationWriter.trackingRowsPerStatement + 5
            try await store.commit(mutations: [.putDelivery(delivery), .countTracking(TrackingCounts(appId: app, deliveryId: d, counts: [
                TrackingCount(action: .open, messageIndex: 0), TrackingCount(action: .open, messageIndex: n - 1),
            ]))], offsets: [])
            try await store.commit(mutations: [.countTracking(TrackingCounts(appId: app, deliveryId: d, counts: (0..<n).map {
                TrackingCount(action: .open, messageIndex: $0, reports: 1 + $0 % 3)
            }))], offsets: [])

            let stats = try await store.deliveryStats(app: app, deliveryId: d)
            let repeats = (0..<n).map { $0 % 3 }.reduce(0, +) + 2
            #expect(stats == DeliveryStatsRow(delivery: delivery, opens: n, repeatsIgnored: repeats))
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testStatsAreBoundedByTheDeliveryAndZeroWithTrackingOff(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let app = UUID(), other = UUID()
            let tracked = Fixture.delivery(app: app, tracking: true, sent: 2)
            let quiet = Fixture.delivery(app: app, tracking: false, sent: 2)
            try await store.commit(mutations: [
                // Rows a send would discard, parked before their deliveries and left in place (no
                // discard follows), as if a report raced its send.
                .countTracking(key(app, tracked.deliveryId, .open, 1)), .countTracking(key(app, tracked.deliveryId, .open, 2)),
                .countTracking(key(other, tracked.deliveryId, .open, 0)),
                .countTracking(key(app, quiet.deliveryId, .open, 0)),
                .putDelivery(tracked), .putDelivery(quiet),
            ], offsets: [])
            let parked = try await store.load(StateQuery(trackedDeliveries: [tracked.deliveryId, quiet.deliveryId]))
            #expect(parked.trackedEvents.values.map(\.count).reduce(0, +) == 4, "a count settles against the deliveries before it only")

            let trackedStats = try await store.deliveryStats(app: app, deliveryId: tracked.deliveryId)
            let quietStats = try await store.deliveryStats(app: app, deliveryId: quiet.deliveryId)
            #expect(trackedStats == DeliveryStatsRow(delivery: tracked, opens: 1))
            #expect(quietStats == DeliveryStatsRow(delivery: quiet))
            let foreign = try await store.deliveryStats(app: other, deliveryId: tracked.deliveryId)
            let unknown = try await store.deliveryStats(app: app, deliveryId: UUID())
            #expect(foreign == nil, "another app's delivery is not found")
            #expect(unknown == nil)
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testDiscardDeletesOtherAppsRowsAndRowsPastTheBoundOfThatDeliveryOnly(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let app = UUID(), other = UUID(), d = UUID(), neighbour = UUID()
            try await store.commit(mutations: [
                .countTracking(key(app, d, .impression, 0)), .countTracking(key(app, d, .impression, 3)),
                .countTracking(key(app, d, .click, 2)), .countTracking(key(other, d, .click, 0)),
                .countTracking(key(app, neighbour, .click, 9)),
            ], offsets: [])
            try await store.commit(mutations: [.discardTracking(deliveryId: d, appId: app, validBelow: 3)], offsets: [])

            let kept = try await store.load(StateQuery(trackedDeliveries: [d, neighbour]))
            #expect(kept.trackedEvents[d]?.sorted { $0.messageIndex < $1.messageIndex } == [
                TrackedEvent(appId: app, action: .impression, messageIndex: 0, repeats: 0),
                TrackedEvent(appId: app, action: .click, messageIndex: 2, repeats: 0),
            ])
            #expect(kept.trackedEvents[neighbour] == [TrackedEvent(appId: app, action: .click, messageIndex: 9, repeats: 0)])

            try await store.commit(mutations: [.discardTracking(deliveryId: d, appId: app, validBelow: 0)], offsets: [])
            let none = try await store.load(StateQuery(trackedDeliveries: [d]))
            #expect(none.trackedEvents[d] == nil, "tracking off: nothing of the delivery stays")
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testLoadFindsDeliveriesByIdWhicheverAppSentThem(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let a = Fixture.delivery(app: UUID(), tracking: true, sent: 5), b = Fixture.delivery(app: UUID())
            try await store.commit(mutations: [.putDelivery(a), .putDelivery(b)], offsets: [])
            let ids = Set((0..<600).map { _ in UUID() }).union([a.deliveryId, b.deliveryId])
            let snapshot = try await store.load(StateQuery(deliveryIds: ids))
            #expect(snapshot.deliveries == [a.deliveryId: a, b.deliveryId: b])
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testDumpListsTrackingRowsByKey(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let app = UUID(uuidString: "00000000-0000-0000-0000-0000000000a1")!
            let d = UUID(uuidString: "00000000-0000-0000-0000-0000000000d1")!
            try await store.commit(mutations: [
                .countTracking(key(app, d, .impression, 10)), .countTracking(key(app, d, .open, 2)), .countTracking(key(app, d, .open, 2)),
            ], offsets: [])
            let lines = try await store.dump().split(separator: "\n").filter { $0.hasPrefix("tracking_events ") }
            #expect(lines == [
                #"tracking_events delivery_id="00000000-0000-0000-0000-0000000000d1" app_id="00000000-0000-0000-0000-0000000000a1" action=1 message_index=2 repeats=1"#,
                #"tracking_events delivery_id="00000000-0000-0000-0000-0000000000d1" app_id="00000000-0000-0000-0000-0000000000a1" action=7 message_index=10 repeats=0"#,
            ])
        }
    }

    // MARK: - Settling a count against its stored delivery

    @Test(arguments: StoreBackend.allCases)
    func testACountAfterItsDeliveryDeletesTheRowsTheDeliveryCannotOwn(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let app = UUID(), other = UUID()
            let tracked = Fixture.delivery(app: app, tracking: true, sent: 3)
            let quiet = Fixture.delivery(app: app, tracking: false, sent: 3)
            try await store.commit(mutations: [.putDelivery(tracked), .putDelivery(quiet)], offsets: [])

            // As a batch that loaded "no delivery yet" would write them, after another processor
            // committed the sends: past the sent count, another app's, tracking off.
            try await store.commit(mutations: [
                .countTracking(TrackingCounts(appId: app, deliveryId: tracked.deliveryId, counts: [
                    TrackingCount(action: .open, messageIndex: 2), TrackingCount(action: .open, messageIndex: 3),
                    TrackingCount(action: .click, messageIndex: 7, reports: 2),
                ])),
                .countTracking(key(other, tracked.deliveryId, .open, 0)),
                .countTracking(key(app, quiet.deliveryId, .impression, 0)),
            ], offsets: [])

            let rows = try await store.load(StateQuery(trackedDeliveries: [tracked.deliveryId, quiet.deliveryId]))
            #expect(rows.trackedEvents[tracked.deliveryId] == [TrackedEvent(appId: app, action: .open, messageIndex: 2, repeats: 0)])
            #expect(rows.trackedEvents[quiet.deliveryId] == nil, "tracking off: no row of the delivery stays")
            let stats = try await store.deliveryStats(app: app, deliveryId: tracked.deliveryId)
            #expect(stats == DeliveryStatsRow(delivery: tracked, opens: 1))
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testACountWithoutItsDeliveryStaysParkedUntilTheSend(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let app = UUID(), other = UUID(), d = UUID(), unrelated = UUID()
            try await store.commit(mutations: [.putDelivery(Fixture.delivery(app: app, id: unrelated, tracking: false))], offsets: [])

            try await store.commit(mutations: [
                .countTracking(key(app, d, .open, 0)), .countTracking(key(app, d, .open, 9)), .countTracking(key(other, d, .click, 1)),
            ], offsets: [])

            let parked = try await store.load(StateQuery(trackedDeliveries: [d]))
            #expect(parked.trackedEvents[d]?.count == 3, "no delivery row: every row stays")
            // The send arrives: its discard settles them.
            let delivery = Fixture.delivery(app: app, id: d, tracking: true, sent: 5)
            try await store.commit(mutations: [.putDelivery(delivery), .discardTracking(deliveryId: d, appId: app, validBelow: 5)],
                                   offsets: [])
            let settled = try await store.load(StateQuery(trackedDeliveries: [d]))
            #expect(settled.trackedEvents[d] == [TrackedEvent(appId: app, action: .open, messageIndex: 0, repeats: 0)])
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testParkedReportsWhoseSendNeverCameExpireAndOthersStay(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let app = UUID(), lost = UUID(), late = UUID(), recent = UUID()
            try await store.commit(mutations: [
                .countTracking(key(app, lost, .open, 0)), .parkTracking(deliveryId: lost, appId: app, at: Fixture.at(10)),
                .countTracking(key(app, late, .open, 0)), .parkTracking(deliveryId: late, appId: app, at: Fixture.at(10)),
                .countTracking(key(app, recent, .open, 0)), .parkTracking(deliveryId: recent, appId: app, at: Fixture.at(100)),
                // A second mark keeps the first time.
                .parkTracking(deliveryId: recent, appId: app, at: Fixture.at(200)),
            ], offsets: [])
            // The send of `late` came before the expiry: its reports are its own now.
            try await store.commit(mutations: [.putDelivery(Fixture.delivery(app: app, id: late, tracking: true, sent: 5))], offsets: [])

            try await store.commit(mutations: [.expireParkedTracking(before: Fixture.at(50))], offsets: [])

            let rows = try await store.load(StateQuery(trackedDeliveries: [lost, late, recent]))
            #expect(rows.trackedEvents[lost] == nil, "parked past the time and no send: gone")
            #expect(rows.trackedEvents[late]?.count == 1, "its send came: kept")
            #expect(rows.trackedEvents[recent]?.count == 1, "parked recently: kept")
            try await store.commit(mutations: [.expireParkedTracking(before: Fixture.at(150))], offsets: [])
            let later = try await store.load(StateQuery(trackedDeliveries: [recent]))
            #expect(later.trackedEvents[recent] == nil, "parked at its first report, not its last mark")
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testADiscardAfterACountInOneCommitDeletesWhatTheCountWrote(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let app = UUID(), d = UUID()
            try await store.commit(mutations: [
                .countTracking(key(app, d, .open, 4)), .countTracking(key(app, d, .open, 1)),
                .discardTracking(deliveryId: d, appId: app, validBelow: 2),
                .countTracking(key(app, d, .open, 1)), .countTracking(key(app, d, .open, 6)),
            ], offsets: [])

            let rows = try await store.load(StateQuery(trackedDeliveries: [d]))
            #expect(rows.trackedEvents[d]?.sorted { $0.messageIndex < $1.messageIndex } == [
                TrackedEvent(appId: app, action: .open, messageIndex: 1, repeats: 1),
                TrackedEvent(appId: app, action: .open, messageIndex: 6, repeats: 0),
            ], "index 4 went with the discard; 6 came after it, with no delivery to settle against")
        }
    }

    /// Two processes: one applies a send (its delivery and discard), the other a report batch
    /// that loaded no delivery (so parks its rows), committed at once. Whichever commits second
    /// must see the other's writes: no row the delivery cannot own survives.
    @Test(arguments: StoreBackend.allCases)
    func testASendAndAReportCommittedAtOnceByTwoStoresLeaveNoRowTheDeliveryCannotOwn(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let sends = try await h.openStore(), reports = try await h.openStore()
            let app = UUID()
            var deliveryIds: [UUID] = []
            for _ in 0..<25 {
                let delivery = Fixture.delivery(app: app, tracking: true, sent: 2)
                deliveryIds.append(delivery.deliveryId)
                let send: [Mutation] = [.putDelivery(delivery), .discardTracking(deliveryId: delivery.deliveryId, appId: app, validBelow: 2)]
                let report: [Mutation] = [
                    .countTracking(TrackingCounts(appId: app, deliveryId: delivery.deliveryId, counts: [
                        TrackingCount(action: .open, messageIndex: 1), TrackingCount(action: .open, messageIndex: 5),
                    ])),
                    .countTracking(key(UUID(), delivery.deliveryId, .click, 0)),
                ]
                async let sent: Void = sends.commit(mutations: send, offsets: [])
                async let reported: Void = reports.commit(mutations: report, offsets: [])
                _ = try await (sent, reported)
            }
            let rows = try await sends.load(StateQuery(trackedDeliveries: Set(deliveryIds)))
            for id in deliveryIds {
                #expect(rows.trackedEvents[id] == [TrackedEvent(appId: app, action: .open, messageIndex: 1, repeats: 0)])
            }
        }
    }
}
