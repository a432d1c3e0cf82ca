import Contracts
import Foundation
@testable import Projections
import Testing

/// The rows an app keeps per part (docs/ARCHITECTURE.md#one-app-in-parts) in a real store: each
/// part's rows side by side under one key, loaded for the processor by part, read by ingest as
/// part 0's app and a delivery summed over its parts.
@Suite(.serialized) struct AppPartsStoreTests {
    @Test(arguments: StoreBackend.allCases)
    func testEachPartsAppRowsAreKeptApartAndReadersSeePartZero(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            var zero = Fixture.app(name: "part zero")
            var one = zero
            one.part = 1
            one.name = "part one, ahead"
            zero.webhookRetries = 1
            let token = Fixture.token(app: zero.appId)
            var later = token
            later.part = 1
            later.revoked = true
            try await store.commit(mutations: [.upsertApp(one), .upsertApp(zero), .upsertApiToken(later), .upsertApiToken(token)], offsets: [])

            let snapshot = try await store.load(StateQuery(appIds: [zero.appId]))
            #expect(snapshot.apps == [AppPart(zero.appId): zero, AppPart(zero.appId, part: 1): one])
            #expect(snapshot.tokens == [AppPart(zero.appId): [token], AppPart(zero.appId, part: 1): [later]])
            #expect(try await store.app(zero.appId) == zero)
            #expect(try await store.apps(after: nil, limit: 10) == [zero])
            #expect(try await store.apiTokens(app: zero.appId) == [token])
            #expect(try await store.apiToken(hash: token.tokenHash) == token)
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testADeliveryIsReadAsTheSumOfItsPartsAndEachPartsReportsCountWithinItsSentCount(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let app = UUID()
            var zero = Fixture.delivery(app: app, tracking: true, sent: 2)
            zero.delivered = 1
            zero.duplicates = 2
            var one = zero
            one.part = 1
            one.sent = 3
            one.delivered = 2
            one.duplicates = 0
            let d = zero.deliveryId
            func report(_ part: Int, _ place: Int, _ action: TrackingAction = .open) -> Mutation {
                .countTracking(TrackingCounts(appId: app, deliveryId: d, counts: [
                    TrackingCount(action: action, messageIndex: AppParts.messageIndex(place: place, part: part)),
                ], part: part))
            }
            try await store.commit(mutations: [.putDelivery(zero), .putDelivery(one)], offsets: [])
            // Part 0: places 0 and 1 of 2; part 1: places 0 and 2 of 3, and place 3, past its count.
            try await store.commit(mutations: [report(0, 0), report(0, 1, .click), report(1, 0), report(1, 2), report(1, 3), report(1, 0)],
                                   offsets: [])

            let summed = try #require(try await store.delivery(app: app, deliveryId: d))
            #expect(summed.sent == 5 && summed.delivered == 3 && summed.duplicates == 2 && summed.part == 0)
            let stats = try #require(try await store.deliveryStats(app: app, deliveryId: d))
            #expect(stats.delivery == summed)
            #expect(stats.opens == 3, "part 0's place 0, part 1's places 0 and 2; not part 1's place 3")
            #expect(stats.clicks == 1)
            #expect(stats.repeatsIgnored == 1)

            // A part's drop takes its rows and mark, not another part's.
            let pair = TrackingPair(deliveryId: d, appId: app, part: 1)
            try await store.commit(mutations: [.parkTracking(pair, at: Fixture.at(1)), .parkTracking(TrackingPair(deliveryId: d, appId: app),
                                                                                                     at: Fixture.at(2))], offsets: [])
            try await store.commit(mutations: [.dropTracking(pair)], offsets: [])
            let after = try #require(try await store.deliveryStats(app: app, deliveryId: d))
            #expect(after.opens == 1 && after.clicks == 1)
            let snapshot = try await store.load(StateQuery(deliveryIds: [d], trackedDeliveries: [d], parkedDeliveries: [d]))
            #expect(snapshot.parkedTracking == [TrackingPair(deliveryId: d, appId: app): Fixture.at(2)])
            #expect(Set(snapshot.deliveries.keys) == [zero.key, one.key])
            #expect(snapshot.trackedEvents[d]?.allSatisfy { $0.part == 0 } == true)
        }
    }
}
