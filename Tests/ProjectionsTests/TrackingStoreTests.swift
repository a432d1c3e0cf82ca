import Contracts
import Foundation
@testable import Projections
@testable import SQLiteProjections
@testable import PostgresProjections
@testable import ProjectionChangelog
import Testing

/// The tracking rows (docs/API.md#delivery-statistics) and park marks in a real store: counting,
/// repeats, the deletes, drops and marks a handler decides (the store decides nothing),
/// statistics, loading, dumping.
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
            try await store.commit(mutations: [.putDelivery(tracked), .putDelivery(quiet)], offsets: [])
            try await store.commit(mutations: [
                // Rows a send would have refused, written anyway: the store keeps what it is told.
                .countTracking(key(app, tracked.deliveryId, .open, 1)), .countTracking(key(app, tracked.deliveryId, .open, 2)),
                .countTracking(key(other, tracked.deliveryId, .open, 0)),
                .countTracking(key(app, quiet.deliveryId, .open, 0)),
            ], offsets: [])
            let stored = try await store.load(StateQuery(trackedDeliveries: [tracked.deliveryId, quiet.deliveryId]))
            #expect(stored.trackedEvents.values.map(\.count).reduce(0, +) == 4, "a count settles nothing against its delivery")

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
    func testDeletesRemoveTheNamedRowsAndADropRemovesItsPairWholeWithItsMark(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let app = UUID(), other = UUID(), d = UUID(), neighbour = UUID()
            let mine = TrackingPair(deliveryId: d, appId: app), theirs = TrackingPair(deliveryId: d, appId: other)
            try await store.commit(mutations: [
                .countTracking(key(app, d, .impression, 0)), .countTracking(key(app, d, .impression, 3)),
                .countTracking(key(app, d, .click, 2)), .countTracking(key(other, d, .click, 0)),
                .countTracking(key(app, neighbour, .click, 9)),
                .parkTracking(mine, at: Fixture.at(1)), .parkTracking(theirs, at: Fixture.at(2)),
            ], offsets: [])
            try await store.commit(mutations: [
                .deleteTracking(mine, [TrackingRowKey(action: .impression, messageIndex: 3), TrackingRowKey(action: .open, messageIndex: 2)]),
                .dropTracking(theirs),
            ], offsets: [])

            let kept = try await store.load(StateQuery(trackedDeliveries: [d, neighbour], parkedDeliveries: [d]))
            #expect(kept.trackedEvents[d]?.sorted { $0.messageIndex < $1.messageIndex } == [
                TrackedEvent(appId: app, action: .impression, messageIndex: 0, repeats: 0),
                TrackedEvent(appId: app, action: .click, messageIndex: 2, repeats: 0),
            ], "only (impression, 3) of the pair went; (open, 2) was never stored")
            #expect(kept.trackedEvents[neighbour] == [TrackedEvent(appId: app, action: .click, messageIndex: 9, repeats: 0)])
            #expect(kept.parkedTracking == [mine: Fixture.at(1)], "the dropped pair's mark went with its rows")

            try await store.commit(mutations: [.unparkTracking(mine)], offsets: [])
            let unparked = try await store.load(StateQuery(trackedDeliveries: [d], parkedDeliveries: [d]))
            #expect(unparked.parkedTracking.isEmpty)
            #expect(unparked.trackedEvents[d]?.count == 2, "unparking keeps the rows: they are the delivery's")
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testParkMarksAreWrittenAsToldAndLoadedByDeliveryAndByAge(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let app = UUID(), other = UUID(), old = UUID(), recent = UUID()
            try await store.commit(mutations: [
                .parkTracking(TrackingPair(deliveryId: old, appId: app), at: Fixture.at(10)),
                .parkTracking(TrackingPair(deliveryId: old, appId: other), at: Fixture.at(60)),
                .parkTracking(TrackingPair(deliveryId: recent, appId: app), at: Fixture.at(100)),
                // The last mark of a pair is the one kept: the handler decides when a pair parks anew.
                .parkTracking(TrackingPair(deliveryId: recent, appId: app), at: Fixture.at(200)),
            ], offsets: [])

            let byDelivery = try await store.load(StateQuery(parkedDeliveries: [old]))
            #expect(byDelivery.parkedTracking == [TrackingPair(deliveryId: old, appId: app): Fixture.at(10),
                                                  TrackingPair(deliveryId: old, appId: other): Fixture.at(60)])
            let byAge = try await store.load(StateQuery(parkedBefore: Fixture.at(150), parkedApps: [app, other]))
            #expect(byAge.parkedTracking == [TrackingPair(deliveryId: old, appId: app): Fixture.at(10),
                                             TrackingPair(deliveryId: old, appId: other): Fixture.at(60)])
            let ofOneApp = try await store.load(StateQuery(parkedBefore: Fixture.at(150), parkedApps: [other, UUID()]))
            #expect(ofOneApp.parkedTracking == [TrackingPair(deliveryId: old, appId: other): Fixture.at(60)], "the old marks of the apps asked for")
            let both = try await store.load(StateQuery(parkedDeliveries: [recent], parkedBefore: Fixture.at(50), parkedApps: [app]))
            #expect(both.parkedTracking == [TrackingPair(deliveryId: old, appId: app): Fixture.at(10),
                                            TrackingPair(deliveryId: recent, appId: app): Fixture.at(200)])
            #expect(try await store.load(StateQuery()).parkedTracking.isEmpty, "marks are loaded only when asked for")
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
            #expect(snapshot.deliveries == [a.key: a, b.key: b])
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
                #"tracking_events delivery_id="00000000-0000-0000-0000-0000000000d1" app_id="00000000-0000-0000-0000-0000000000a1" action=1 message_index=2 repeats=1 part=0"#,
                #"tracking_events delivery_id="00000000-0000-0000-0000-0000000000d1" app_id="00000000-0000-0000-0000-0000000000a1" action=7 message_index=10 repeats=0 part=0"#,
            ])
        }
    }

    // MARK: - Order within one commit

    @Test(arguments: StoreBackend.allCases)
    func testDeletesAndDropsAfterCountsInOneCommitDeleteWhatTheCountsWrote(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let app = UUID(), other = UUID(), d = UUID()
            let mine = TrackingPair(deliveryId: d, appId: app), theirs = TrackingPair(deliveryId: d, appId: other)
            try await store.commit(mutations: [
                .countTracking(key(app, d, .open, 4)), .countTracking(key(app, d, .open, 1)), .countTracking(key(other, d, .open, 0)),
                .parkTracking(theirs, at: Fixture.at(1)),
                .deleteTracking(mine, [TrackingRowKey(action: .open, messageIndex: 4)]), .dropTracking(theirs),
                .countTracking(key(app, d, .open, 1)), .countTracking(key(app, d, .open, 4)), .countTracking(key(other, d, .click, 3)),
                .parkTracking(theirs, at: Fixture.at(2)),
            ], offsets: [])

            let rows = try await store.load(StateQuery(trackedDeliveries: [d], parkedDeliveries: [d]))
            #expect(rows.trackedEvents[d]?.sorted { ($0.appId == app ? 0 : 1, $0.messageIndex) < ($1.appId == app ? 0 : 1, $1.messageIndex) } == [
                TrackedEvent(appId: app, action: .open, messageIndex: 1, repeats: 1),
                TrackedEvent(appId: app, action: .open, messageIndex: 4, repeats: 0),
                TrackedEvent(appId: other, action: .click, messageIndex: 3, repeats: 0),
            ], "each delete and drop took what the counts before it wrote, none of what came after")
            #expect(rows.parkedTracking == [theirs: Fixture.at(2)], "the pair parked anew after its drop")
        }
    }
}
