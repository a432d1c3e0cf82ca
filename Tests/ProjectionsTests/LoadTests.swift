import Contracts
import Foundation
@testable import Projections
@testable import PostgresProjections
@testable import ProjectionChangelog
@testable import SQLiteProjections
import Testing

@Suite(.serialized) struct LoadTests {
    @Test(arguments: StoreBackend.allCases)
    func testLoadReturnsAskedAppsWithAllTheirTokensRevokedToo(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let withTokens = Fixture.app(name: "with tokens")
            let withoutTokens = Fixture.app(name: "without tokens")
            let notAsked = Fixture.app(name: "not asked")
            let old = Fixture.token(app: withTokens.appId, revoked: true, at: 0)
            let new = Fixture.token(app: withTokens.appId, at: 5)
            try await store.commit(mutations: [
                .upsertApp(withTokens), .upsertApp(withoutTokens), .upsertApp(notAsked),
                .upsertApiToken(new), .upsertApiToken(old), .upsertApiToken(Fixture.token(app: notAsked.appId)),
            ], offsets: [])
            let missing = UUID()

            let snapshot = try await store.load(StateQuery(appIds: [withTokens.appId, withoutTokens.appId, missing]))

            #expect(snapshot.apps == [AppPart(withTokens.appId): withTokens, AppPart(withoutTokens.appId): withoutTokens])
            #expect(snapshot.tokens == [AppPart(withTokens.appId): [old, new], AppPart(withoutTokens.appId): []])
            #expect(snapshot.devices == [:])
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testLoadReturnsDevicesByTokenAndEveryDeviceOfEachAskedUser(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let app = UUID()
            let otherApp = UUID()
            let byToken = Fixture.device(app: app, token: "by-token", user: "carol")
            let carolsOther = Fixture.device(app: app, token: "carol-2", user: "carol")
            let alice1 = Fixture.device(app: app, token: "alice-1", user: "alice")
            let alice2 = Fixture.device(app: app, token: "alice-2", user: "alice", platform: .android)
            let aliceElsewhere = Fixture.device(app: otherApp, token: "alice-x", user: "alice")
            let bob = Fixture.device(app: app, token: "bob-1", user: "bob")
            try await store.commit(mutations: [byToken, carolsOther, alice1, alice2, aliceElsewhere, bob].map(Mutation.upsertDevice), offsets: [])

            let snapshot = try await store.load(StateQuery(
                deviceKeys: [byToken.key, DeviceKey(appId: app, deviceToken: "unknown"), DeviceKey(appId: otherApp, deviceToken: "by-token")],
                userKeys: [UserKey(appId: app, userId: "alice"), UserKey(appId: app, userId: "nobody")]))

            #expect(snapshot.devices == [byToken.key: byToken, alice1.key: alice1, alice2.key: alice2])
            #expect(snapshot.apps == [:])
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testLoadAnswersThousandsOfKeysOfSeveralApps(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let apps = (0..<3).map { _ in UUID() }
            var devices: [DeviceRow] = []
            for (index, app) in apps.enumerated() {
                for n in 0..<900 {
                    devices.append(Fixture.device(app: app, token: "tok-\(index)-\(n)", user: "user-\(n % 300)"))
                }
            }
            try await store.commit(mutations: devices.map(Mutation.upsertDevice), offsets: [])
            // Every second device of each app by token (450 per app, over one IN list length), plus
            // 700 keys that do not exist, and all 300 users of the first app.
            let asked = devices.enumerated().filter { $0.offset % 2 == 0 }.map(\.element)
            let unknown = (0..<700).map { DeviceKey(appId: apps[$0 % 3], deviceToken: "unknown-\($0)") }
            let users = (0..<300).map { UserKey(appId: apps[0], userId: "user-\($0)") }

            let snapshot = try await store.load(StateQuery(deviceKeys: Set(asked.map(\.key) + unknown), userKeys: Set(users)))

            let expected = Set(asked.map(\.key)).union(devices.filter { $0.appId == apps[0] }.map(\.key))
            #expect(Set(snapshot.devices.keys) == expected)
            #expect(snapshot.devices.count == 450 * 2 + 900)
            for (key, device) in snapshot.devices {
                #expect(device.key == key)
            }
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testLoadCountsThePendingRowsOfEveryLoadedDevice(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let app = UUID()
            let otherApp = UUID()
            let byToken = Fixture.device(app: app, token: "by-token", user: "carol")
            let alice1 = Fixture.device(app: app, token: "alice-1", user: "alice")
            let alice2 = Fixture.device(app: app, token: "alice-2", user: "alice")
            let notAsked = Fixture.device(app: app, token: "bob-1", user: "bob")
            let elsewhere = Fixture.device(app: otherApp, token: "alice-2", user: "alice")
            var mutations = [byToken, alice1, alice2, notAsked, elsewhere].map(Mutation.upsertDevice)
            for (device, count) in [(byToken, 2), (alice1, 3), (notAsked, 1), (elsewhere, 4)] {
                for n in 0..<count {
                    mutations.append(.putPending(Fixture.pending(app: device.appId, token: device.deviceToken, nid: "n\(n)")))
                }
            }
            // Pending rows of a device that has no row are not counted for anyone.
            mutations.append(.putPending(Fixture.pending(app: app, token: "unregistered", nid: "n0")))
            try await store.commit(mutations: mutations, offsets: [])

            let carol = UserKey(appId: app, userId: "carol")
            let dave = Fixture.device(app: app, token: "dave-1", user: "dave")
            try await store.commit(mutations: [.upsertDevice(dave), .putPending(Fixture.pending(app: app, token: "dave-1", nid: "n0"))], offsets: [])
            let snapshot = try await store.load(StateQuery(
                deviceKeys: [byToken.key, DeviceKey(appId: app, deviceToken: "unregistered"), dave.key],
                userKeys: [UserKey(appId: app, userId: "alice")],
                pendingCountDevices: [byToken.key, DeviceKey(appId: app, deviceToken: "unregistered")],
                pendingCountUsers: [UserKey(appId: app, userId: "alice"), carol]))

            #expect(Set(snapshot.devices.keys) == [byToken.key, alice1.key, alice2.key, dave.key])
            #expect(snapshot.pendingCounts == [byToken.key: 2, alice1.key: 3], "alice-2 has none, so is absent; dave's device is loaded but no count was asked for it")
            #expect(snapshot.pending == [:])
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testLoadReturnsTheAskedPendingRowsThatExist(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let app = UUID()
            let otherApp = UUID()
            let asked1 = Fixture.pending(app: app, token: "t1", nid: "n1", business: "b-1")
            let asked2 = Fixture.pending(app: app, token: "t2", nid: "n1")
            let asked3 = Fixture.pending(app: app, token: "t1", nid: "n2")
            let notAsked = Fixture.pending(app: app, token: "t3", nid: "n1")
            let otherAppsRow = Fixture.pending(app: otherApp, token: "t4", nid: "n1")
            try await store.commit(mutations: [asked1, asked2, asked3, notAsked, otherAppsRow].map(Mutation.putPending), offsets: [])

            let snapshot = try await store.load(StateQuery(pendingKeys: [
                asked1.key, asked2.key, asked3.key,
                PendingKey(appId: app, deviceToken: "t1", notificationId: "missing"),
                PendingKey(appId: app, deviceToken: "t4", notificationId: "n1"),
            ]))

            #expect(snapshot.pending == [asked1.key: asked1, asked2.key: asked2, asked3.key: asked3])
            #expect(snapshot.pendingCounts == [:], "counts are for loaded devices only")
        }
    }

    /// A notification to many users: 20,000 devices of 200 users, most with a few pending rows.
    /// The time is printed for information only.
    @Test(arguments: StoreBackend.allCases)
    func testLoadCountsPendingRowsOfTwentyThousandDevicesOfTwoHundredUsers(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let app = UUID()
            var mutations: [Mutation] = []
            var expectedCounts: [DeviceKey: Int] = [:]
            var devices: [DeviceRow] = []
            for n in 0..<20_000 {
                let device = Fixture.device(app: app, token: String(format: "%064x", n), user: "user-\(n % 200)")
                devices.append(device)
                mutations.append(.upsertDevice(device))
                let count = n % 5
                for p in 0..<count {
                    mutations.append(.putPending(Fixture.pending(app: app, token: device.deviceToken, nid: "n\(p)")))
                }
                if count > 0 { expectedCounts[device.key] = count }
            }
            try await store.commit(mutations: mutations, offsets: [])
            // The send's own pending keys: notification "n0" on every device (16,000 of them have it).
            let query = StateQuery(
                deviceKeys: Set(devices.prefix(1_000).map(\.key)),
                userKeys: Set((0..<200).map { UserKey(appId: app, userId: "user-\($0)") }),
                pendingKeys: Set(devices.map { PendingKey(appId: app, deviceToken: $0.deviceToken, notificationId: "n0") }),
                pendingCountDevices: Set(devices.prefix(1_000).map(\.key)),
                pendingCountUsers: Set((0..<200).map { UserKey(appId: app, userId: "user-\($0)") }))

            let start = ContinuousClock.now
            let snapshot = try await store.load(query)
            print("loaded \(snapshot.devices.count) devices with pending counts and \(snapshot.pending.count) pending rows in \(ContinuousClock.now - start)")

            #expect(snapshot.devices.count == 20_000)
            #expect(snapshot.pendingCounts.count == 16_000)
            #expect(snapshot.pendingCounts == expectedCounts)
            #expect(snapshot.pending.count == 16_000)
            #expect(Set(snapshot.pending.keys) == Set(expectedCounts.keys.map { PendingKey(appId: app, deviceToken: $0.deviceToken, notificationId: "n0") }))
        }
    }

    /// From `SQLiteProjectionStore.concurrentUsers` users on, the SQLite store reads the users in
    /// two halves beside the rest of the query: the snapshot must be the one a single read gives,
    /// counts included for devices asked by key, by user, or both, in either half.
    @Test(arguments: StoreBackend.allCases)
    func testALoadOfManyUsersGivesEveryDeviceAndCountAsked(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let apps = [UUID(), UUID()]
            var mutations: [Mutation] = []
            var devices: [DeviceRow] = []
            var pendingCounts: [DeviceKey: Int] = [:]
            for n in 0..<3_000 {
                // Users of 0 to 3 devices; user n of one app is not user n of the other.
                let app = apps[n % 2]
                let device = Fixture.device(app: app, token: String(format: "%064x", n), user: "user-\(n % 1_300)")
                guard n % 7 != 0 else { continue }
                devices.append(device)
                mutations.append(.upsertDevice(device))
                for p in 0..<(n % 4) {
                    mutations.append(.putPending(Fixture.pending(app: app, token: device.deviceToken, nid: "n\(p)")))
                }
                if n % 4 > 0 { pendingCounts[device.key] = n % 4 }
            }
            try await store.commit(mutations: mutations, offsets: [])
            let users = Set((0..<1_100).map { UserKey(appId: apps[$0 % 3 == 0 ? 1 : 0], userId: "user-\($0)") })
                .union([UserKey(appId: apps[0], userId: "nobody")])
            let keys = Set(devices.filter { Int($0.deviceToken, radix: 16)! % 5 == 0 }.map(\.key))
            let countedUsers = Set(users.filter { Int($0.userId.dropFirst(5)).map { $0 % 2 == 0 } ?? true })
            let countedKeys = Set(keys.filter { Int($0.deviceToken, radix: 16)! % 3 == 0 })
            #expect(users.count >= SQLiteProjectionStore.concurrentUsers)

            let snapshot = try await store.load(StateQuery(appIds: Set(apps), deviceKeys: keys, userKeys: users,
                                                           pendingCountDevices: countedKeys, pendingCountUsers: countedUsers))

            let loaded = devices.filter { keys.contains($0.key) || users.contains(UserKey(appId: $0.appId, userId: $0.userId)) }
            let counted = loaded.filter {
                countedKeys.contains($0.key) || countedUsers.contains(UserKey(appId: $0.appId, userId: $0.userId))
            }
            #expect(snapshot.devices.count == loaded.count)
            #expect(loaded.allSatisfy { snapshot.devices[$0.key] == $0 })
            let countedSet = Set(counted.map(\.key))
            #expect(snapshot.pendingCounts == pendingCounts.filter { countedSet.contains($0.key) })
            #expect(counted.count > 500 && loaded.count > counted.count, "the query asks for counts of some loaded devices only")
        }
    }
}
