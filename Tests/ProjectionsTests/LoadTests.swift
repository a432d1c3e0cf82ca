import Contracts
import Foundation
@testable import Projections
import XCTest

final class LoadTests: StoreTestCase {
    func testLoadReturnsAskedAppsWithAllTheirTokensRevokedToo() async throws {
        let store = try openStore()
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

        XCTAssertEqual(snapshot.apps, [withTokens.appId: withTokens, withoutTokens.appId: withoutTokens])
        XCTAssertEqual(snapshot.tokens, [withTokens.appId: [old, new], withoutTokens.appId: []])
        XCTAssertEqual(snapshot.devices, [:])
    }

    func testLoadReturnsDevicesByTokenAndEveryDeviceOfEachAskedUser() async throws {
        let store = try openStore()
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

        XCTAssertEqual(snapshot.devices, [byToken.key: byToken, alice1.key: alice1, alice2.key: alice2])
        XCTAssertEqual(snapshot.apps, [:])
    }

    func testLoadAnswersThousandsOfKeysOfSeveralApps() async throws {
        let store = try openStore()
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
        XCTAssertEqual(Set(snapshot.devices.keys), expected)
        XCTAssertEqual(snapshot.devices.count, 450 * 2 + 900)
        for (key, device) in snapshot.devices {
            XCTAssertEqual(device.key, key)
        }
    }
}
