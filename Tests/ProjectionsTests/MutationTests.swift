import Contracts
import Foundation
@testable import Projections
import XCTest

class MutationTests: StoreTestCase {
    func testUpsertAppInsertsThenReplacesItsSettings() async throws {
        let store = try await openStore()
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
        let store = try await openStore()
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
        let store = try await openStore()
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
        let store = try await openStore()
        let a = Fixture.device(app: UUID(), token: "shared", user: "u1")
        let b = Fixture.device(app: UUID(), token: "shared", user: "u2")

        try await store.commit(mutations: [.upsertDevice(a), .upsertDevice(b)], offsets: [])

        let storedA = try await store.device(a.key)
        let storedB = try await store.device(b.key)
        XCTAssertEqual(storedA, a)
        XCTAssertEqual(storedB, b)
    }

    func testDeleteDeviceRemovesOnlyThatDevice() async throws {
        let store = try await openStore()
        let appId = UUID()
        let gone = Fixture.device(app: appId, token: "t1", user: "alice")
        let kept = Fixture.device(app: appId, token: "t2", user: "alice")
        try await store.commit(mutations: [.upsertDevice(gone), .upsertDevice(kept)], offsets: [])

        try await store.commit(mutations: [.deleteDevice(gone.key), .deleteDevice(DeviceKey(appId: appId, deviceToken: "never"))], offsets: [])

        let alices = try await store.devices(app: appId, user: "alice")
        XCTAssertEqual(alices, [kept])
    }

    func testPutRegistrationStatusStoresThenOverwritesTheOutcome() async throws {
        let store = try await openStore()
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
        let store = try await openStore()
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
        let store = try await openStore()
        let device = Fixture.device(app: UUID(), token: "t", user: "u")
        // A trigger makes the last mutation of the commit fail after the first one was written.
        switch backend {
        case .sqlite:
            try await execute("CREATE TRIGGER refuse BEFORE INSERT ON registration_status BEGIN SELECT RAISE(ABORT, 'refused'); END")
        case .postgres:
            try await execute("""
                CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused'; END $$
                """)
            try await execute("CREATE TRIGGER refuse BEFORE INSERT ON registration_status FOR EACH ROW EXECUTE FUNCTION refuse()")
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

    // MARK: - Managed notifications

    func testPutPendingInsertsAndLeavesAnExistingRowAsItIs() async throws {
        let store = try await openStore()
        let appId = UUID()
        let first = Fixture.pending(app: appId, token: "t1", nid: "n1", sent: 3, text: "first", business: "b-1")
        let sameKeyInCommit = Fixture.pending(app: appId, token: "t1", nid: "n1", sent: 4, text: "same commit")
        try await store.commit(mutations: [.putPending(first), .putPending(sameKeyInCommit)], offsets: [])

        let replayed = Fixture.pending(app: appId, token: "t1", nid: "n1", sent: 9, text: "replayed", business: nil)
        try await store.commit(mutations: [.putPending(replayed)], offsets: [])

        let stored = try await store.pendingNotifications(DeviceKey(appId: appId, deviceToken: "t1"))
        XCTAssertEqual(stored, [first])
    }

    func testDeletePendingRemovesOnlyThatNotificationOfThatDevice() async throws {
        let store = try await openStore()
        let appId = UUID()
        let gone = Fixture.pending(app: appId, token: "t1", nid: "n1", sent: 1)
        let otherNotification = Fixture.pending(app: appId, token: "t1", nid: "n2", sent: 2)
        let otherDevice = Fixture.pending(app: appId, token: "t2", nid: "n1")
        let otherApp = Fixture.pending(app: UUID(), token: "t1", nid: "n1")
        try await store.commit(mutations: [gone, otherNotification, otherDevice, otherApp].map(Mutation.putPending), offsets: [])

        try await store.commit(mutations: [
            .deletePending(gone.key), .deletePending(PendingKey(appId: appId, deviceToken: "t1", notificationId: "never")),
        ], offsets: [])

        let t1 = try await store.pendingNotifications(DeviceKey(appId: appId, deviceToken: "t1"))
        let t2 = try await store.pendingNotifications(DeviceKey(appId: appId, deviceToken: "t2"))
        let elsewhere = try await store.pendingNotifications(otherApp.key.device)
        XCTAssertEqual(t1, [otherNotification])
        XCTAssertEqual(t2, [otherDevice])
        XCTAssertEqual(elsewhere, [otherApp])
    }

    func testClearPendingRemovesEveryPendingRowOfThatDeviceOnly() async throws {
        let store = try await openStore()
        let appId = UUID()
        let cleared = DeviceKey(appId: appId, deviceToken: "t1")
        let otherDevice = Fixture.pending(app: appId, token: "t2", nid: "n1")
        let sameTokenOtherApp = Fixture.pending(app: UUID(), token: "t1", nid: "n1")
        try await store.commit(mutations: [
            .putPending(Fixture.pending(app: appId, token: "t1", nid: "n1")),
            .putPending(Fixture.pending(app: appId, token: "t1", nid: "n2")),
            .putPending(Fixture.pending(app: appId, token: "t1", nid: "n3")),
            .putPending(otherDevice), .putPending(sameTokenOtherApp),
        ], offsets: [])

        try await store.commit(mutations: [.clearPending(cleared)], offsets: [])

        let clearedRows = try await store.pendingNotifications(cleared)
        let otherDeviceRows = try await store.pendingNotifications(otherDevice.key.device)
        let otherAppRows = try await store.pendingNotifications(sameTokenOtherApp.key.device)
        XCTAssertEqual(clearedRows, [])
        XCTAssertEqual(otherDeviceRows, [otherDevice])
        XCTAssertEqual(otherAppRows, [sameTokenOtherApp])
    }

    func testDeleteDeviceLeavesItsPendingRowsToAnExplicitClear() async throws {
        let store = try await openStore()
        let device = Fixture.device(app: UUID(), token: "t1", user: "u")
        let pending = Fixture.pending(app: device.appId, token: "t1", nid: "n1")
        try await store.commit(mutations: [.upsertDevice(device), .putPending(pending)], offsets: [])

        try await store.commit(mutations: [.deleteDevice(device.key)], offsets: [])
        let afterDelete = try await store.pendingNotifications(device.key)
        try await store.commit(mutations: [.clearPending(device.key)], offsets: [])
        let afterClear = try await store.pendingNotifications(device.key)

        let stored = try await store.device(device.key)
        XCTAssertNil(stored)
        XCTAssertEqual(afterDelete, [pending])
        XCTAssertEqual(afterClear, [])
    }

    func testPutAckInsertsAndLeavesAnExistingAckAsItIs() async throws {
        let store = try await openStore()
        let appId = UUID()
        let first = Fixture.ack(app: appId, token: "t1", nid: "n1", business: "b-1", at: 4)
        let otherNotification = Fixture.ack(app: appId, token: "t1", nid: "n2", at: 5)
        try await store.commit(mutations: [.putAck(first), .putAck(otherNotification)], offsets: [])

        try await store.commit(mutations: [.putAck(Fixture.ack(app: appId, token: "t1", nid: "n1", business: nil, at: 9))], offsets: [])

        let acks = try await strings("""
            SELECT device_token || ' ' || notification_id || ' ' || coalesce(business_id, '-') || ' ' || acked_at
            FROM acks ORDER BY device_token, notification_id
            """)
        XCTAssertEqual(acks, [
            "t1 n1 b-1 \(SQLiteValues.millis(Fixture.at(4)))",
            "t1 n2 - \(SQLiteValues.millis(Fixture.at(5)))",
        ])
    }

    /// Processors decide over rows loaded before others commit: the store itself keeps an
    /// acknowledged (device, notification) without a pending row, whichever was committed first.
    func testAnAckRemovesItsPendingRowAndNoPendingRowFollowsAnAck() async throws {
        let store = try await openStore()
        let appId = UUID()
        let device = DeviceKey(appId: appId, deviceToken: "t1")
        let kept = Fixture.pending(app: appId, token: "t1", nid: "n2")
        try await store.commit(mutations: [.putPending(Fixture.pending(app: appId, token: "t1", nid: "n1")), .putPending(kept)], offsets: [])
        try await store.commit(mutations: [.putAck(Fixture.ack(app: appId, token: "t1", nid: "n1"))], offsets: [])
        let afterAck = try await store.pendingNotifications(device)

        try await store.commit(mutations: [.putAck(Fixture.ack(app: appId, token: "t2", nid: "n1"))], offsets: [])
        try await store.commit(mutations: [.putPending(Fixture.pending(app: appId, token: "t2", nid: "n1"))], offsets: [])
        let afterPending = try await store.pendingNotifications(DeviceKey(appId: appId, deviceToken: "t2"))

        XCTAssertEqual(afterAck, [kept])
        XCTAssertEqual(afterPending, [])
    }

    func testPutDeliveryInsertsAndLeavesAnExistingDeliveryAsItIs() async throws {
        let store = try await openStore()
        let appId = UUID()
        let first = Fixture.delivery(app: appId, kind: .ticket, managed: true, tracking: false, sent: 3)
        try await store.commit(mutations: [.putDelivery(first)], offsets: [])

        let replayed = Fixture.delivery(app: appId, id: first.deliveryId, kind: .im, managed: false, tracking: true, sent: 0)
        try await store.commit(mutations: [.putDelivery(replayed)], offsets: [])

        let stored = try await store.deliveryStats(app: appId, deliveryId: first.deliveryId)?.delivery
        XCTAssertEqual(stored, first)
    }

    // MARK: - Several mutations of one key in one commit

    func testPendingPutsDeletesAndClearsOfOneCommitEndAsInOrder() async throws {
        let store = try await openStore()
        let app = UUID()
        let device = { (token: String) in DeviceKey(appId: app, deviceToken: token) }
        let old1 = Fixture.pending(app: app, token: "t1", nid: "n1", text: "old")
        let old2 = Fixture.pending(app: app, token: "t2", nid: "n1", text: "old")
        try await store.commit(mutations: [.putPending(old1), .putPending(old2)], offsets: [])

        let renewed = Fixture.pending(app: app, token: "t1", nid: "n1", sent: 5, text: "new")
        let afterClear = Fixture.pending(app: app, token: "t2", nid: "n3", text: "after clear")
        let kept = Fixture.pending(app: app, token: "t4", nid: "n1", text: "first")
        try await store.commit(mutations: [
            .putPending(Fixture.pending(app: app, token: "t1", nid: "n1", text: "yields to the stored row")),
            .deletePending(old1.key), .putPending(renewed),
            .putPending(Fixture.pending(app: app, token: "t1", nid: "n1", text: "yields to the renewed row")),
            .putPending(Fixture.pending(app: app, token: "t2", nid: "n2", text: "cleared")),
            .clearPending(device("t2")), .putPending(afterClear),
            .putPending(Fixture.pending(app: app, token: "t3", nid: "n1", text: "deleted")),
            .deletePending(PendingKey(appId: app, deviceToken: "t3", notificationId: "n1")),
            .putPending(kept), .putPending(Fixture.pending(app: app, token: "t4", nid: "n1", text: "second")),
        ], offsets: [])

        let t1 = try await store.pendingNotifications(device("t1"))
        let t2 = try await store.pendingNotifications(device("t2"))
        let t3 = try await store.pendingNotifications(device("t3"))
        let t4 = try await store.pendingNotifications(device("t4"))
        XCTAssertEqual(t1, [renewed])
        XCTAssertEqual(t2, [afterClear])
        XCTAssertEqual(t3, [])
        XCTAssertEqual(t4, [kept])
    }

    func testDevicesUpsertedAndDeletedInOneCommitEndAsTheirLastMutationSays() async throws {
        let store = try await openStore()
        let app = UUID()
        try await store.commit(mutations: [.upsertDevice(Fixture.device(app: app, token: "d1", user: "u"))], offsets: [])

        let d1 = Fixture.device(app: app, token: "d1", user: "u", version: 2)
        let d3 = Fixture.device(app: app, token: "d3", user: "u", platform: .android, version: 2)
        try await store.commit(mutations: [
            .deleteDevice(d1.key), .upsertDevice(d1),
            .upsertDevice(Fixture.device(app: app, token: "d2", user: "u")), .deleteDevice(DeviceKey(appId: app, deviceToken: "d2")),
            .upsertDevice(Fixture.device(app: app, token: "d3", user: "u")), .upsertDevice(d3),
        ], offsets: [])

        let devices = try await store.devices(app: app, user: "u")
        XCTAssertEqual(devices, [d1, d3])
    }

    /// The longest token a client may send (4,096 bytes, in ASCII and in two-byte characters) is
    /// a key like any other: its device, pending rows and acks are written, loaded, read, acked
    /// and removed, and two tokens that differ only in their last byte stay two devices.
    func testTokensOfTheLongestAcceptedLengthAreKeysLikeAnyOther() async throws {
        let store = try await openStore()
        let app = UUID()
        let stem = String(repeating: "a", count: FieldLimits.deviceTokenBytes - 1)
        let tokens = [stem + "b", stem + "c", String(repeating: "é", count: FieldLimits.deviceTokenBytes / 2)]
        XCTAssertEqual(tokens.map(\.utf8.count), [4_096, 4_096, 4_096])
        let devices = tokens.map { Fixture.device(app: app, token: $0, user: "u") }
        let pending = tokens.map { Fixture.pending(app: app, token: $0, nid: "n1") }
        try await store.commit(mutations: devices.map(Mutation.upsertDevice) + pending.map(Mutation.putPending), offsets: [])
        let moved = Fixture.device(app: app, token: tokens[0], user: "v", version: 2)
        try await store.commit(mutations: [.upsertDevice(moved), .putAck(Fixture.ack(app: app, token: tokens[1], nid: "n1"))], offsets: [])

        let snapshot = try await store.load(StateQuery(
            deviceKeys: Set(devices.map(\.key)), pendingKeys: Set(pending.map(\.key)),
            ackedNotifications: [NotificationKey(appId: app, notificationId: "n1")], pendingCountDevices: Set(devices.map(\.key))))
        XCTAssertEqual(snapshot.devices, [moved.key: moved, devices[1].key: devices[1], devices[2].key: devices[2]])
        XCTAssertEqual(snapshot.pending, [pending[0].key: pending[0], pending[2].key: pending[2]])
        XCTAssertEqual(snapshot.pendingCounts, [devices[0].key: 1, devices[2].key: 1])
        XCTAssertEqual(snapshot.acks, [pending[1].key])
        let read = try await store.device(devices[2].key)
        let readPending = try await store.pendingNotifications(devices[2].key)
        XCTAssertEqual(read, devices[2])
        XCTAssertEqual(readPending, [pending[2]])

        try await store.commit(mutations: [.deleteDevice(devices[2].key), .clearPending(devices[2].key),
                                           .deletePending(pending[0].key)], offsets: [])
        let remaining = try await store.load(StateQuery(deviceKeys: Set(devices.map(\.key)), pendingKeys: Set(pending.map(\.key))))
        XCTAssertEqual(Set(remaining.devices.keys), [moved.key, devices[1].key])
        XCTAssertEqual(remaining.pending, [:])
    }

    func testTheFirstAckAndDeliveryOfAKeyInOneCommitStayAndTheLastUpsertWins() async throws {
        let store = try await openStore()
        let app = Fixture.app(name: "first")
        var renamed = app
        renamed.name = "last"
        let token = Fixture.token(app: app.appId)
        var revoked = token
        revoked.revoked = true
        let delivery = Fixture.delivery(app: app.appId, kind: .ticket, sent: 3)
        let ack = Fixture.ack(app: app.appId, token: "t1", nid: "n1", business: "first")

        try await store.commit(mutations: [
            .upsertApp(app), .upsertApiToken(token), .putDelivery(delivery), .putAck(ack),
            .upsertApp(renamed), .upsertApiToken(revoked),
            .putDelivery(Fixture.delivery(app: app.appId, id: delivery.deliveryId, kind: .im, sent: 9)),
            .putAck(Fixture.ack(app: app.appId, token: "t1", nid: "n1", business: "second")),
        ], offsets: [])

        let storedApp = try await store.app(app.appId)
        let tokens = try await store.apiTokens(app: app.appId)
        let storedDelivery = try await store.deliveryStats(app: app.appId, deliveryId: delivery.deliveryId)?.delivery
        let acks = try await strings("SELECT business_id FROM acks")
        XCTAssertEqual(storedApp, renamed)
        XCTAssertEqual(tokens, [revoked])
        XCTAssertEqual(storedDelivery, delivery)
        XCTAssertEqual(acks, ["first"])
    }
}
