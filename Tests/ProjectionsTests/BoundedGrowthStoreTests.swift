import Contracts
import Foundation
@testable import Projections
@testable import SQLiteProjections
@testable import PostgresProjections
@testable import ProjectionChangelog
import Testing

/// Bounded growth on the store side (docs/ARCHITECTURE.md#bounded-growth). Pruning: the processor
/// loads the statuses and acks of its batch's apps older than a time, and deletes those it
/// decides by key; the deletes are in the commit's changelog entry, so a restore leaves them out
/// too. The cap on users: an app part's count is stored on its row, and a device that may change
/// hands or go is loaded with every device of its user.
@Suite(.serialized) struct BoundedGrowthStoreTests {
    let app = UUID(), other = UUID()

    private func status(_ n: Int, app appId: UUID, at seconds: Double, part: Int = 0) -> RegistrationStatusRow {
        RegistrationStatusRow(requestId: UUID(uuidString: String(format: "00000000-0000-0000-0003-%012x", n))!, appId: appId,
                              status: .Success, failureReason: nil, decidedAt: Fixture.at(seconds), part: part)
    }

    private func ack(_ token: String, app appId: UUID, at seconds: Double) -> AckRow {
        AckRow(appId: appId, deviceToken: token, notificationId: "n", businessId: nil, ackedAt: Fixture.at(seconds))
    }

    @Test(arguments: StoreBackend.allCases)
    func testTheAgedStatusesAndAcksOfTheAskedAppsAreLoadedAndDeletedByKey(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let statuses = [status(1, app: app, at: 10), status(2, app: app, at: 100, part: 1), status(3, app: app, at: 500),
                            status(4, app: other, at: 10)]
            let acks = [ack("a", app: app, at: 10), ack(String(repeating: "b", count: 3_000), app: app, at: 20),
                        ack("c", app: app, at: 500), ack("a", app: other, at: 10)]
            try await store.commit(mutations: statuses.map { .putRegistrationStatus($0) } + acks.map { .putAck($0) }, offsets: [])

            var query = StateQuery()
            query.parkedApps = [app]
            query.statusesBefore = Fixture.at(200)
            query.acksBefore = Fixture.at(200)
            let aged = try await store.load(query)
            #expect(Set(aged.agedStatuses.map(\.requestId)) == [statuses[0].requestId, statuses[1].requestId],
                    "older than the time, of the asked app only")
            #expect(aged.agedStatuses.first { $0.requestId == statuses[1].requestId }?.part == 1, "each with the part that decided it")
            #expect(Set(aged.agedAcks.map(\.key)) == [acks[0].key, acks[1].key])
            #expect(try await store.load(StateQuery()).agedStatuses.isEmpty, "nothing unless asked")

            let deletes: [Mutation] = [.deleteRegistrationStatus(statuses[0].requestId), .deleteAck(acks[1].key)]
            try await store.commit(mutations: deletes, offsets: [])
            let left = try await store.registrationStatuses(app: app, requestIds: statuses.map(\.requestId))
            #expect(Set(left.keys) == [statuses[1].requestId, statuses[2].requestId])
            #expect(Set(try await store.load(query).agedAcks.map(\.key)) == [acks[0].key])
            let entries = try await store.unpublishedChangelog(after: 0, limit: 10)
            #expect(try ChangelogEntry(decoding: try #require(entries.last).payload).mutations == deletes,
                    "the deletes are in the commit's changelog entry")
        }
    }

    /// A status or ack put and pruned in the same plan (or pruned and put again) ends as its last
    /// mutation says, in the stores' writes and in a restore's rows.
    @Test func testAPlanKeepsTheLastMutationOfAStatusOrAck() {
        let kept = status(1, app: app, at: 10), pruned = status(2, app: app, at: 10)
        let ackKept = ack("a", app: app, at: 10), ackPruned = ack("b", app: app, at: 10)
        let mutations: [Mutation] = [
            .putRegistrationStatus(pruned), .deleteRegistrationStatus(kept.requestId), .putRegistrationStatus(kept),
            .deleteRegistrationStatus(pruned.requestId), .putAck(ackPruned), .deleteAck(ackKept.key), .putAck(ackKept),
            .deleteAck(ackPruned.key),
        ]
        let plan = WritePlan.inKeyOrder(mutations)
        #expect(plan.statuses.values.compactMap(\.row) == [kept])
        #expect(plan.statuses.values.filter { $0.row == nil }.map(\.id) == [pruned.requestId])
        #expect(plan.acks.values.compactMap(\.row) == [ackKept])
        let restored = RestoredRows(mutations)
        #expect(restored.statuses == [kept])
        #expect(restored.acks == [ackKept])
    }

    @Test(arguments: StoreBackend.allCases)
    func testADevicesOwnerIsLoadedWithAllItsDevicesAndAnAppKeepsItsCountOfUsers(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            var row = Fixture.app(app)
            row.users = 2
            let devices = [Fixture.device(app: app, token: "a", user: "u"), Fixture.device(app: app, token: "b", user: "u"),
                           Fixture.device(app: app, token: "c", user: "v"), Fixture.device(app: other, token: "d", user: "u")]
            try await store.commit(mutations: [.upsertApp(row)] + devices.map { .upsertDevice($0) }, offsets: [])
            #expect(try await store.app(app)?.users == 2)

            var query = StateQuery()
            query.deviceOwners = [DeviceKey(appId: app, deviceToken: "a"), DeviceKey(appId: app, deviceToken: "unknown")]
            let loaded = try await store.load(query)
            #expect(Set(loaded.devices.keys) == [devices[0].key, devices[1].key], "the device and its user's others, of its app only")
            #expect(try await store.load(StateQuery(deviceKeys: [devices[2].key])).devices.count == 1, "a plain device key loads the device")
        }
    }
}
