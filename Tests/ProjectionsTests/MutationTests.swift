import Contracts
import Foundation
@testable import Projections
import XCTest

final class MutationTests: StoreTestCase {
    func testUpsertAppInsertsThenReplacesItsSettings() async throws {
        let store = try openStore()
        var app = Fixture.app(name: "first")
        try await store.commit(mutations: [.upsertApp(app)], offsets: [])
        let inserted = try await store.app(app.appId)
        XCTAssertEqual(inserted, app)

        app.name = "renamed"
        app.callbackUrl = "https://example.test/callback"
        app.callbackHeaders = ["x-b": "2", "x-a": "1"]
        app.webhookRetries = 4
        try await store.commit(mutations: [.upsertApp(app)], offsets: [])

        let replaced = try await store.app(app.appId)
        XCTAssertEqual(replaced, app)
    }

    func testUpsertApiTokenAddsTokensAndRevokesAnExistingOne() async throws {
        let store = try openStore()
        let appId = UUID()
        var first = Fixture.token(app: appId, at: 0)
        let second = Fixture.token(app: appId, at: 1)
        let otherAppsToken = Fixture.token(app: UUID())
        try await store.commit(mutations: [.upsertApiToken(first), .upsertApiToken(second), .upsertApiToken(otherAppsToken)], offsets: [])

        first.revoked = true
        try await store.commit(mutations: [.upsertApiToken(first)], offsets: [])

        let tokens = try await store.apiTokens(app: appId)
        XCTAssertEqual(tokens, [first, second])
    }

    func testUpsertDeviceReplacesTheRowOfTheSameAppAndToken() async throws {
        let store = try openStore()
        let appId = UUID()
        let original = Fixture.device(app: appId, token: "token-1", user: "alice", platform: .ios, version: 1)
        try await store.commit(mutations: [.upsertDevice(original)], offsets: [])

        let moved = Fixture.device(app: appId, token: "token-1", user: "bob", platform: .android, version: 2)
        try await store.commit(mutations: [.upsertDevice(moved)], offsets: [])

        let stored = try await store.device(moved.key)
        let alices = try await store.devices(app: appId, user: "alice")
        let bobs = try await store.devices(app: appId, user: "bob")
        XCTAssertEqual(stored, moved)
        XCTAssertEqual(alices, [])
        XCTAssertEqual(bobs, [moved])
    }

    func testTheSameTokenInAnotherAppIsAnotherDevice() async throws {
        let store = try openStore()
        let a = Fixture.device(app: UUID(), token: "shared", user: "u1")
        let b = Fixture.device(app: UUID(), token: "shared", user: "u2")

        try await store.commit(mutations: [.upsertDevice(a), .upsertDevice(b)], offsets: [])

        let storedA = try await store.device(a.key)
        let storedB = try await store.device(b.key)
        XCTAssertEqual(storedA, a)
        XCTAssertEqual(storedB, b)
    }

    func testDeleteDeviceRemovesOnlyThatDevice() async throws {
        let store = try openStore()
        let appId = UUID()
        let gone = Fixture.device(app: appId, token: "t1", user: "alice")
        let kept = Fixture.device(app: appId, token: "t2", user: "alice")
        try await store.commit(mutations: [.upsertDevice(gone), .upsertDevice(kept)], offsets: [])

        try await store.commit(mutations: [.deleteDevice(gone.key), .deleteDevice(DeviceKey(appId: appId, deviceToken: "never"))], offsets: [])

        let alices = try await store.devices(app: appId, user: "alice")
        XCTAssertEqual(alices, [kept])
    }

    func testPutRegistrationStatusStoresThenOverwritesTheOutcome() async throws {
        let store = try openStore()
        let appId = UUID()
        let failed = Fixture.status(app: appId, status: .Failed, reason: .DryRunSendingFailed)
        try await store.commit(mutations: [.putRegistrationStatus(failed)], offsets: [])
        let first = try await store.registrationStatuses(app: appId, requestIds: [failed.requestId])
        XCTAssertEqual(first, [failed.requestId: failed])

        let succeeded = Fixture.status(app: appId, request: failed.requestId, status: .Success)
        try await store.commit(mutations: [.putRegistrationStatus(succeeded)], offsets: [])

        let second = try await store.registrationStatuses(app: appId, requestIds: [failed.requestId])
        XCTAssertEqual(second, [failed.requestId: succeeded])
        XCTAssertNil(second[failed.requestId]?.failureReason)
    }

    func testMutationsOfOneCommitApplyInTheirOrder() async throws {
        let store = try openStore()
        let appId = UUID()
        let deletedLast = Fixture.device(app: appId, token: "deleted-last", user: "u")
        let upsertedLast = Fixture.device(app: appId, token: "upserted-last", user: "u")

        try await store.commit(mutations: [
            .upsertDevice(deletedLast), .deleteDevice(deletedLast.key),
            .deleteDevice(upsertedLast.key), .upsertDevice(upsertedLast),
        ], offsets: [])

        let devices = try await store.devices(app: appId, user: "u")
        XCTAssertEqual(devices, [upsertedLast])
    }

    func testAFailingMutationWritesNothingOfItsCommit() async throws {
        let store = try openStore()
        let device = Fixture.device(app: UUID(), token: "t", user: "u")
        // A trigger makes the last mutation of the commit fail after the first one was written.
        try await store.pool.write { db in
            try db.execute(sql: "CREATE TRIGGER refuse BEFORE INSERT ON registration_status BEGIN SELECT RAISE(ABORT, 'refused'); END")
        }

        do {
            try await store.commit(mutations: [.upsertDevice(device), .putRegistrationStatus(Fixture.status(app: device.appId))],
                                   offsets: [OffsetUpdate(partition: Fixture.partition(1), expected: nil, next: 1)])
            XCTFail("the commit should have failed")
        } catch ProjectionStoreError.database(let message) {
            XCTAssertTrue(message.contains("refused"), message)
        }

        let stored = try await store.device(device.key)
        let offsets = try await store.offsets(topics: [Fixture.partition(1).topic])
        XCTAssertNil(stored)
        XCTAssertEqual(offsets, [:])
    }
}
