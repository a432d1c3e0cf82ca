import Contracts
import Foundation
@testable import Projections
@testable import SQLiteProjections
@testable import PostgresProjections
@testable import ProjectionChangelog
import Testing

@Suite(.serialized) struct MutationTests {
    @Test(arguments: StoreBackend.allCases)
    func testUpsertAppInsertsThenReplacesItsSettings(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            var app = Fixture.app(name: "first")
            try await store.commit(mutations: [.upsertApp(app)], offsets: [])
            let inserted = try await store.app(app.appId)
            #expect(inserted == app)

            app.name = "renamed"
            app.callbackUrl = "https://example.test/callback"
            app.callbackHeaders = ["x-b": "2", "x-a": "1"]
            app.webhookRetries = 4
            try await store.commit(mutations: [.upsertApp(app)], offsets: [])

            let replaced = try await store.app(app.appId)
            #expect(replaced == app)
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testAnAppsPushCredentialsAreStoredReplacedAndRemoved(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            var app = Fixture.app()
            app.pushCredentials = Fixture.pushCredentials(2)
            try await store.commit(mutations: [.upsertApp(app)], offsets: [])
            #expect(try await store.app(app.appId) == app)

            app.pushCredentials = Fixture.pushCredentials(3)
            try await store.commit(mutations: [.upsertApp(app)], offsets: [])
            #expect(try await store.app(app.appId)?.pushCredentials == Fixture.pushCredentials(3))

            app.pushCredentials = nil
            try await store.commit(mutations: [.upsertApp(app)], offsets: [])
            #expect(try await store.app(app.appId)?.pushCredentials == nil)
            // Empty credentials are stored as none, so that every way of removing them reads the same.
            app.pushCredentials = PushCredentials()
            try await store.commit(mutations: [.upsertApp(app)], offsets: [])
            #expect(try await store.app(app.appId)?.pushCredentials == nil)
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testDeliveryOutcomesAreReplacedPerDeviceAndPagedInIndexOrder(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let (app, other, delivery) = (UUID(), UUID(), UUID())
            var row = DeliveryRow(appId: app, deliveryId: delivery, kind: .alert, managed: false, tracking: false, sent: 6, createdAt: Fixture.t0)
            func outcome(_ index: Int, _ outcome: DeliveryOutcome, app appId: UUID = app) -> DeliveryOutcomeRow {
                DeliveryOutcomeRow(appId: appId, deliveryId: delivery, messageIndex: index, deviceToken: String(repeating: "t\(index)", count: 600),
                                   outcome: outcome, reason: outcome == .delivered ? nil : "Unregistered", reportedAt: Fixture.at(Double(index)))
            }
            (row.delivered, row.unregistered, row.expired) = (3, 1, 1)
            // Per locale: an expired count is stored only where there is one.
            row.sentByLocale = ["pt": 3, "default": 2]
            row.outcomesByLocale = ["pt": OutcomeCounts(delivered: 2, expired: 1), "default": OutcomeCounts(delivered: 1, unregistered: 1)]
            try await store.commit(mutations: [
                .putDelivery(row), .putDeliveryOutcome(outcome(3, .delivered)), .putDeliveryOutcome(outcome(0, .delivered)),
                .putDeliveryOutcome(outcome(2, .unregistered)), .putDeliveryOutcome(outcome(1, .failed)),
                .putDeliveryOutcome(outcome(1, .delivered)), .putDeliveryOutcome(outcome(0, .failed, app: other)),
                .putDeliveryOutcome(outcome(5, .expired)),
            ], offsets: [])
            #expect(try await store.deliveryStats(app: app, deliveryId: delivery)?.delivery == row)
            #expect(try await store.dump().contains("outcomes_by_locale=\"default=1/0/1,pt=2/0/0/1\" expired=1"))
            let all = try await store.deliveryOutcomes(app: app, deliveryId: delivery, outcome: nil, after: nil, limit: 10)
            #expect(all == [outcome(0, .delivered), outcome(1, .delivered), outcome(2, .unregistered), outcome(3, .delivered),
                            outcome(5, .expired)],
                    "the last report of each device stays, in index order, another app's apart")
            #expect(try await store.deliveryOutcomes(app: app, deliveryId: delivery, outcome: .expired, after: nil, limit: 10) == [outcome(5, .expired)])
            #expect(try await store.deliveryOutcomes(app: app, deliveryId: delivery, outcome: nil, after: 1, limit: 1) == [outcome(2, .unregistered)])
            #expect(try await store.deliveryOutcomes(app: app, deliveryId: delivery, outcome: .delivered, after: 0, limit: 10)
                == [outcome(1, .delivered), outcome(3, .delivered)])
            #expect(try await store.deliveryOutcomes(app: other, deliveryId: delivery, outcome: .unregistered, after: nil, limit: 10).isEmpty)
            let loaded = try await store.load(StateQuery(outcomeKeys: [outcome(2, .failed).key, outcome(4, .failed).key]))
            #expect(loaded.outcomes == [outcome(2, .failed).key: .unregistered], "only the stored ones")
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testWaitingSendsAreReadByTimeInPagesAndTheAppsScheduledOnesByState(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            // Sends of 3 apps in 2 parts, several at one time; some fired, one not due yet.
            var rows: [DeliveryRow] = []
            let apps = [UUID(), UUID(), UUID()]
            for n in 0..<12 {
                for part in 0..<2 {
                    rows.append(DeliveryRow(appId: apps[n % 3], deliveryId: UUID(), kind: .alert, managed: false, tracking: true, sent: 0,
                                            createdAt: Fixture.t0, part: part, sendAt: Fixture.at(Double(n / 4)),
                                            schedule: n % 5 == 4 ? .fired : .waiting, scheduledCommand: n % 5 == 4 ? nil : "{}"))
                }
            }
            var late = rows[0]
            late.deliveryId = UUID()
            late.sendAt = Fixture.at(100)
            try await store.commit(mutations: (rows + [late]).map { .putDelivery($0) }, offsets: [])
            func key(_ row: DeliveryRow) -> String {
                "\(row.sendAt!.timeIntervalSince1970) \(row.appId.lowercasedString) \(row.deliveryId.lowercasedString) \(row.part)"
            }
            let expected = rows.filter { $0.schedule == .waiting }.map(key).sorted()
            var read: [String] = [], after: DeliveryRow?
            while true {
                let page = try await store.waitingSends(dueBy: Fixture.at(10), after: after, limit: 5)
                read += page.map(key)
                guard page.count == 5 else { break }
                after = page.last
            }
            #expect(read == expected, "each due waiting send once, by time, app, delivery and part; none fired or not due")
            let listed = try await store.scheduledSends(app: apps[0], state: .fired, after: nil, limit: 10)
            #expect(listed.map(\.deliveryId) == rows.filter { $0.appId == apps[0] && $0.part == 0 && $0.schedule == .fired }
                .sorted { key($0) < key($1) }.map(\.deliveryId))
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testHeldPushesAreReadByWaveWithTheirDevicesAndByDeliveryAndDeleted(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let (app, delivery) = (UUID(), UUID())
            // Long tokens too: PostgreSQL keys them by their hash.
            let tokens = ["a", String(repeating: "b", count: 4096), "c", "d"]
            var sending = DeliveryRow(appId: app, deliveryId: delivery, kind: .alert, managed: false, tracking: true, sent: 1,
                                      createdAt: Fixture.t0, part: 1, sendAt: Fixture.at(5), schedule: .sending, scheduledCommand: "{}",
                                      sendAtLocal: "2026-12-01T09:00:00", held: 4, waves: [Fixture.at(5), Fixture.at(9)])
            func held(_ n: Int, at time: Double, part: Int = 1) -> HeldPushRow {
                HeldPushRow(appId: app, deliveryId: delivery, part: part, deviceToken: tokens[n], userId: "u\(n)", releaseAt: Fixture.at(time),
                            dueAt: Fixture.at(time - 1), badge: n == 0 ? 3 : nil)
            }
            let rows = [held(0, at: 5), held(1, at: 5), held(2, at: 9), held(3, at: 5, part: 0)]
            let devices = tokens.enumerated().map { Fixture.device(app: app, token: $1, user: "u\($0)") }
            try await store.commit(mutations: [.putDelivery(sending)] + rows.map { .putHeldPush($0) } + devices.map { .upsertDevice($0) },
                                   offsets: [])
            let part = DeliveryKey(appId: app, deliveryId: delivery, part: 1)
            var query = StateQuery()
            query.heldWaves = [HeldWave(delivery: part, releaseAt: Fixture.at(5))]
            let wave = try await store.load(query)
            #expect(Set(wave.held.values.map(\.deviceToken)) == [tokens[0], tokens[1]], "the wave's pushes of its part only")
            #expect(wave.held[rows[0].key] == rows[0], "read back as written")
            #expect(Set(wave.devices.keys.map(\.deviceToken)) == [tokens[0], tokens[1]], "and their devices")
            query = StateQuery()
            query.heldOf = [part]
            #expect(Set(try await store.load(query).held.values.map(\.deviceToken)) == [tokens[0], tokens[1], tokens[2]])
            #expect(try await store.waitingSends(dueBy: Fixture.at(6), after: nil, limit: 10) == [sending], "a sending delivery is due at its next wave")

            sending.waves = [Fixture.at(9)]
            sending.sendAt = Fixture.at(9)
            try await store.commit(mutations: [.deleteHeldPush(rows[0].key), .deleteHeldPush(rows[1].key), .putDelivery(sending)], offsets: [])
            query = StateQuery()
            query.heldWaves = [HeldWave(delivery: part, releaseAt: Fixture.at(5))]
            #expect(try await store.load(query).held.isEmpty, "released")
            #expect(try await store.waitingSends(dueBy: Fixture.at(6), after: nil, limit: 10).isEmpty)
            query = StateQuery()
            query.heldOf = [DeliveryKey(appId: app, deliveryId: delivery, part: 0)]
            #expect(try await store.load(query).held.values.map(\.key) == [rows[3].key], "another part's stay")
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testUpsertApiTokenAddsTokensAndRevokesAnExistingOne(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let appId = UUID()
            var first = Fixture.token(app: appId, at: 0)
            let second = Fixture.token(app: appId, at: 1)
            let otherAppsToken = Fixture.token(app: UUID())
            try await store.commit(mutations: [.upsertApiToken(first), .upsertApiToken(second), .upsertApiToken(otherAppsToken)], offsets: [])

            first.revoked = true
            try await store.commit(mutations: [.upsertApiToken(first)], offsets: [])

            let tokens = try await store.apiTokens(app: appId)
            #expect(tokens == [first, second])
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testATokensScopesAreStoredAndALegacyTokenHasNone(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let appId = UUID()
            let legacy = Fixture.token(app: appId, at: 0)
            var client = Fixture.token(app: appId, at: 1)
            client.scopes = [.client]
            var both = Fixture.token(app: appId, at: 2)
            both.scopes = [.server, .client]
            var server = Fixture.token(app: appId, at: 3)
            server.scopes = [.server]
            try await store.commit(mutations: [.upsertApp(Fixture.app(appId))] + [legacy, client, both, server].map { .upsertApiToken($0) },
                                   offsets: [])
            let tokens = try await store.apiTokens(app: appId)
            #expect(tokens.map(\.scopes) == [nil, [.client], [.client, .server], [.server]])
            #expect(tokens.map(\.isLegacy) == [true, false, false, false])
            #expect(try await store.apiToken(hash: server.tokenHash)?.scopes == [.server])
            let snapshot = try await store.load(StateQuery(appIds: [appId]))
            #expect(snapshot.tokens[AppPart(appId)]?.map(\.scopes) == [nil, [.client], [.client, .server], [.server]])
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testUpsertDeviceReplacesTheRowOfTheSameAppAndToken(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let appId = UUID()
            let original = Fixture.device(app: appId, token: "token-1", user: "alice", platform: .ios, version: 1)
            try await store.commit(mutations: [.upsertDevice(original)], offsets: [])

            let moved = Fixture.device(app: appId, token: "token-1", user: "bob", platform: .android, version: 2)
            try await store.commit(mutations: [.upsertDevice(moved)], offsets: [])

            let stored = try await store.device(moved.key)
            let alices = try await store.devices(app: appId, user: "alice")
            let bobs = try await store.devices(app: appId, user: "bob")
            #expect(stored == moved)
            #expect(alices == [])
            #expect(bobs == [moved])
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testTheSameTokenInAnotherAppIsAnotherDevice(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let a = Fixture.device(app: UUID(), token: "shared", user: "u1")
            let b = Fixture.device(app: UUID(), token: "shared", user: "u2")

            try await store.commit(mutations: [.upsertDevice(a), .upsertDevice(b)], offsets: [])

            let storedA = try await store.device(a.key)
            let storedB = try await store.device(b.key)
            #expect(storedA == a)
            #expect(storedB == b)
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testDeleteDeviceRemovesOnlyThatDevice(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let appId = UUID()
            let gone = Fixture.device(app: appId, token: "t1", user: "alice")
            let kept = Fixture.device(app: appId, token: "t2", user: "alice")
            try await store.commit(mutations: [.upsertDevice(gone), .upsertDevice(kept)], offsets: [])

            try await store.commit(mutations: [.deleteDevice(gone.key), .deleteDevice(DeviceKey(appId: appId, deviceToken: "never"))], offsets: [])

            let alices = try await store.devices(app: appId, user: "alice")
            #expect(alices == [kept])
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testPutRegistrationStatusStoresThenOverwritesTheOutcome(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let appId = UUID()
            let failed = Fixture.status(app: appId, status: .Failed, reason: .DryRunSendingFailed)
            try await store.commit(mutations: [.putRegistrationStatus(failed)], offsets: [])
            let first = try await store.registrationStatuses(app: appId, requestIds: [failed.requestId])
            #expect(first == [failed.requestId: failed])

            let succeeded = Fixture.status(app: appId, request: failed.requestId, status: .Success)
            try await store.commit(mutations: [.putRegistrationStatus(succeeded)], offsets: [])

            let second = try await store.registrationStatuses(app: appId, requestIds: [failed.requestId])
            #expect(second == [failed.requestId: succeeded])
            #expect(second[failed.requestId]?.failureReason == nil)
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testMutationsOfOneCommitApplyInTheirOrder(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let appId = UUID()
            let deletedLast = Fixture.device(app: appId, token: "deleted-last", user: "u")
            let upsertedLast = Fixture.device(app: appId, token: "upserted-last", user: "u")

            try await store.commit(mutations: [
                .upsertDevice(deletedLast), .deleteDevice(deletedLast.key),
                .deleteDevice(upsertedLast.key), .upsertDevice(upsertedLast),
            ], offsets: [])

            let devices = try await store.devices(app: appId, user: "u")
            #expect(devices == [upsertedLast])
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testAFailingMutationWritesNothingOfItsCommit(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let device = Fixture.device(app: UUID(), token: "t", user: "u")
            // A trigger makes the last mutation of the commit fail after the first one was written.
            switch backend {
            case .sqlite:
                try await h.execute("CREATE TRIGGER refuse BEFORE INSERT ON registration_status BEGIN SELECT RAISE(ABORT, 'refused'); END")
            case .postgres:
                try await h.execute("""
                    CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused'; END $$
                    """)
                try await h.execute("CREATE TRIGGER refuse BEFORE INSERT ON registration_status FOR EACH ROW EXECUTE FUNCTION refuse()")
            }

            do {
                try await store.commit(mutations: [.upsertDevice(device), .putRegistrationStatus(Fixture.status(app: device.appId))],
                                       offsets: [OffsetUpdate(partition: Fixture.partition(1), expected: nil, next: 1)])
                Issue.record("the commit should have failed")
            } catch ProjectionStoreError.database(let message) {
                #expect(message.contains("refused"), "\(message)")
            }

            let stored = try await store.device(device.key)
            let offsets = try await store.offsets(topics: [Fixture.partition(1).topic])
            #expect(stored == nil)
            #expect(offsets == [:])
        }
    }

    // MARK: - Managed notifications

    @Test(arguments: StoreBackend.allCases)
    func testPutPendingInsertsOrReplacesTheRowOfItsKey(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let appId = UUID()
            let first = Fixture.pending(app: appId, token: "t1", nid: "n1", sent: 3, text: "first", business: "b-1")
            let sameKeyInCommit = Fixture.pending(app: appId, token: "t1", nid: "n1", sent: 4, text: "same commit")
            try await store.commit(mutations: [.putPending(first), .putPending(sameKeyInCommit)], offsets: [])

            let inCommit = try await store.pendingNotifications(DeviceKey(appId: appId, deviceToken: "t1"))
            let replaced = Fixture.pending(app: appId, token: "t1", nid: "n1", sent: 9, text: "replaced", business: nil)
            try await store.commit(mutations: [.putPending(replaced)], offsets: [])

            let stored = try await store.pendingNotifications(DeviceKey(appId: appId, deviceToken: "t1"))
            #expect(inCommit == [sameKeyInCommit], "the last put of a commit")
            #expect(stored == [replaced], "the store writes what it is told: the handler puts a key once")
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testDeletePendingRemovesOnlyThatNotificationOfThatDevice(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
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
            #expect(t1 == [otherNotification])
            #expect(t2 == [otherDevice])
            #expect(elsewhere == [otherApp])
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testClearPendingRemovesEveryPendingRowOfThatDeviceOnly(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
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
            #expect(clearedRows == [])
            #expect(otherDeviceRows == [otherDevice])
            #expect(otherAppRows == [sameTokenOtherApp])
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testDeleteDeviceLeavesItsPendingRowsToAnExplicitClear(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let device = Fixture.device(app: UUID(), token: "t1", user: "u")
            let pending = Fixture.pending(app: device.appId, token: "t1", nid: "n1")
            try await store.commit(mutations: [.upsertDevice(device), .putPending(pending)], offsets: [])

            try await store.commit(mutations: [.deleteDevice(device.key)], offsets: [])
            let afterDelete = try await store.pendingNotifications(device.key)
            try await store.commit(mutations: [.clearPending(device.key)], offsets: [])
            let afterClear = try await store.pendingNotifications(device.key)

            let stored = try await store.device(device.key)
            #expect(stored == nil)
            #expect(afterDelete == [pending])
            #expect(afterClear == [])
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testPutAckInsertsOrReplacesTheAckOfItsKey(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let appId = UUID()
            let first = Fixture.ack(app: appId, token: "t1", nid: "n1", business: "b-1", at: 4)
            let otherNotification = Fixture.ack(app: appId, token: "t1", nid: "n2", at: 5)
            try await store.commit(mutations: [.putAck(first), .putAck(otherNotification)], offsets: [])

            try await store.commit(mutations: [.putAck(Fixture.ack(app: appId, token: "t1", nid: "n1", business: nil, at: 9))], offsets: [])

            let acks = try await h.strings("""
                SELECT device_token || ' ' || notification_id || ' ' || coalesce(business_id, '-') || ' ' || acked_at
                FROM acks ORDER BY device_token, notification_id
                """)
            #expect(acks == [
                "t1 n1 - \(SQLiteValues.millis(Fixture.at(9)))",
                "t1 n2 - \(SQLiteValues.millis(Fixture.at(5)))",
            ])
        }
    }

    /// The store writes what the handlers decided and applies no rule of its own: an ack does
    /// not delete pending rows (the ack handler deletes the one it loaded), and a pending row
    /// put after an ack is stored (the send handler does not put one for an acked device).
    /// `AckOrderTests` shows both orders ending without a pending row through the handlers.
    @Test(arguments: StoreBackend.allCases)
    func testAcksAndPendingRowsAreWrittenAsDecidedWithoutRulesOfTheStore(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let appId = UUID()
            let device = DeviceKey(appId: appId, deviceToken: "t1")
            let first = Fixture.pending(app: appId, token: "t1", nid: "n1"), second = Fixture.pending(app: appId, token: "t1", nid: "n2")
            try await store.commit(mutations: [.putPending(first), .putPending(second)], offsets: [])
            try await store.commit(mutations: [.putAck(Fixture.ack(app: appId, token: "t1", nid: "n1"))], offsets: [])
            let afterAck = try await store.pendingNotifications(device)
            try await store.commit(mutations: [.deletePending(first.key)], offsets: [])
            let afterDelete = try await store.pendingNotifications(device)

            let other = DeviceKey(appId: appId, deviceToken: "t2"), late = Fixture.pending(app: appId, token: "t2", nid: "n1")
            try await store.commit(mutations: [.putAck(Fixture.ack(app: appId, token: "t2", nid: "n1"))], offsets: [])
            try await store.commit(mutations: [.putPending(late)], offsets: [])
            let afterPending = try await store.pendingNotifications(other)

            #expect(afterAck == [first, second])
            #expect(afterDelete == [second])
            #expect(afterPending == [late])
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testPutDeliveryInsertsOrReplacesTheDeliveryOfItsKey(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let appId = UUID()
            let first = Fixture.delivery(app: appId, kind: .ticket, managed: true, tracking: false, sent: 3)
            try await store.commit(mutations: [.putDelivery(first)], offsets: [])

            let replaced = Fixture.delivery(app: appId, id: first.deliveryId, kind: .im, managed: false, tracking: true, sent: 0)
            try await store.commit(mutations: [.putDelivery(replaced)], offsets: [])

            let stored = try await store.deliveryStats(app: appId, deliveryId: first.deliveryId)?.delivery
            #expect(stored == replaced, "the handler refuses a known delivery id; the store only writes")
        }
    }

    // MARK: - Several mutations of one key in one commit

    @Test(arguments: StoreBackend.allCases)
    func testPendingPutsDeletesAndClearsOfOneCommitEndAsInOrder(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let app = UUID()
            let device = { (token: String) in DeviceKey(appId: app, deviceToken: token) }
            let old1 = Fixture.pending(app: app, token: "t1", nid: "n1", text: "old")
            let old2 = Fixture.pending(app: app, token: "t2", nid: "n1", text: "old")
            try await store.commit(mutations: [.putPending(old1), .putPending(old2)], offsets: [])

            let renewed = Fixture.pending(app: app, token: "t1", nid: "n1", sent: 5, text: "new")
            let afterClear = Fixture.pending(app: app, token: "t2", nid: "n3", text: "after clear")
            let kept = Fixture.pending(app: app, token: "t4", nid: "n1", text: "last")
            try await store.commit(mutations: [
                .putPending(Fixture.pending(app: app, token: "t1", nid: "n1", text: "deleted after")),
                .deletePending(old1.key),
                .putPending(Fixture.pending(app: app, token: "t1", nid: "n1", text: "replaced by the renewed row")), .putPending(renewed),
                .putPending(Fixture.pending(app: app, token: "t2", nid: "n2", text: "cleared")),
                .clearPending(device("t2")), .putPending(afterClear),
                .putPending(Fixture.pending(app: app, token: "t3", nid: "n1", text: "deleted")),
                .deletePending(PendingKey(appId: app, deviceToken: "t3", notificationId: "n1")),
                .putPending(Fixture.pending(app: app, token: "t4", nid: "n1", text: "first")), .putPending(kept),
            ], offsets: [])

            let t1 = try await store.pendingNotifications(device("t1"))
            let t2 = try await store.pendingNotifications(device("t2"))
            let t3 = try await store.pendingNotifications(device("t3"))
            let t4 = try await store.pendingNotifications(device("t4"))
            #expect(t1 == [renewed])
            #expect(t2 == [afterClear])
            #expect(t3 == [])
            #expect(t4 == [kept])
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testDevicesUpsertedAndDeletedInOneCommitEndAsTheirLastMutationSays(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
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
            #expect(devices == [d1, d3])
        }
    }

    /// The longest token a client may send (4,096 bytes, in ASCII and in two-byte characters) is
    /// a key like any other: its device, pending rows and acks are written, loaded, read, acked
    /// and removed, and two tokens that differ only in their last byte stay two devices.
    @Test(arguments: StoreBackend.allCases)
    func testTokensOfTheLongestAcceptedLengthAreKeysLikeAnyOther(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let app = UUID()
            let stem = String(repeating: "a", count: FieldLimits.deviceTokenBytes - 1)
            let tokens = [stem + "b", stem + "c", String(repeating: "é", count: FieldLimits.deviceTokenBytes / 2)]
            #expect(tokens.map(\.utf8.count) == [4_096, 4_096, 4_096])
            let devices = tokens.map { Fixture.device(app: app, token: $0, user: "u") }
            let pending = tokens.map { Fixture.pending(app: app, token: $0, nid: "n1") }
            try await store.commit(mutations: devices.map(Mutation.upsertDevice) + pending.map(Mutation.putPending), offsets: [])
            let moved = Fixture.device(app: app, token: tokens[0], user: "v", version: 2)
            try await store.commit(mutations: [.upsertDevice(moved), .putAck(Fixture.ack(app: app, token: tokens[1], nid: "n1")),
                                               .deletePending(pending[1].key)], offsets: [])

            let snapshot = try await store.load(StateQuery(
                deviceKeys: Set(devices.map(\.key)), pendingKeys: Set(pending.map(\.key)), pendingCountDevices: Set(devices.map(\.key))))
            #expect(snapshot.devices == [moved.key: moved, devices[1].key: devices[1], devices[2].key: devices[2]])
            #expect(snapshot.pending == [pending[0].key: pending[0], pending[2].key: pending[2]])
            #expect(snapshot.pendingCounts == [devices[0].key: 1, devices[2].key: 1])
            #expect(try await h.strings("SELECT device_token FROM acks") == [tokens[1]])
            let read = try await store.device(devices[2].key)
            let readPending = try await store.pendingNotifications(devices[2].key)
            #expect(read == devices[2])
            #expect(readPending == [pending[2]])

            try await store.commit(mutations: [.deleteDevice(devices[2].key), .clearPending(devices[2].key),
                                               .deletePending(pending[0].key)], offsets: [])
            let remaining = try await store.load(StateQuery(deviceKeys: Set(devices.map(\.key)), pendingKeys: Set(pending.map(\.key))))
            #expect(Set(remaining.devices.keys) == [moved.key, devices[1].key])
            #expect(remaining.pending == [:])
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testTheLastPutOrUpsertOfAKeyInOneCommitWins(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let app = Fixture.app(name: "first")
            var renamed = app
            renamed.name = "last"
            let token = Fixture.token(app: app.appId)
            var revoked = token
            revoked.revoked = true
            let first = Fixture.delivery(app: app.appId, kind: .ticket, sent: 3)
            let delivery = Fixture.delivery(app: app.appId, id: first.deliveryId, kind: .im, sent: 9)
            let ack = Fixture.ack(app: app.appId, token: "t1", nid: "n1", business: "first")

            try await store.commit(mutations: [
                .upsertApp(app), .upsertApiToken(token), .putDelivery(first), .putAck(ack),
                .upsertApp(renamed), .upsertApiToken(revoked), .putDelivery(delivery),
                .putAck(Fixture.ack(app: app.appId, token: "t1", nid: "n1", business: "second")),
            ], offsets: [])

            let storedApp = try await store.app(app.appId)
            let tokens = try await store.apiTokens(app: app.appId)
            let storedDelivery = try await store.deliveryStats(app: app.appId, deliveryId: delivery.deliveryId)?.delivery
            let acks = try await h.strings("SELECT business_id FROM acks")
            #expect(storedApp == renamed)
            #expect(tokens == [revoked])
            #expect(storedDelivery == delivery)
            #expect(acks == ["second"])
        }
    }
}
