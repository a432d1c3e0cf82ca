import Contracts
import Foundation
import GRDB
import Synchronization
@testable import Projections
@testable import PostgresProjections
@testable import ProjectionChangelog
@testable import SQLiteProjections
import XCTest

/// SQLite's own schema handling: file creation, `user_version`, migrations of older files.
final class SchemaTests: StoreTestCase {
    func testOpeningCreatesParentDirectoriesAndTheCurrentSchemaVersion() async throws {
        let store = try openSQLiteStore("nested/deeper/store.sqlite")

        XCTAssertTrue(FileManager.default.fileExists(atPath: path("nested/deeper/store.sqlite")))
        let version = try await store.pool.read { db in try Int.fetchOne(db, sql: "PRAGMA user_version") }
        XCTAssertEqual(version, SQLiteSchema.version)
        let tables = try await store.pool.read { db in
            try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'grdb%' ORDER BY name")
        }
        XCTAssertEqual(tables, ["acks", "admin_tokens", "api_tokens", "apps", "audit_log", "changelog_outbox", "changelog_state", "counted_sends", "dead_letters", "deliveries", "delivery_outcomes", "device_names", "devices", "held_pushes", "idempotency_keys", "outbox",
                                "outbox_attempts", "parked_tracking", "partition_offsets", "pending_notifications", "registration_status", "restore_indexes",
                                "store_info", "tracking_events", "user_settings"])
    }

    func testTheStoreAndItsWALAreReadableByTheirOwnerOnly() async throws {
        func mode(_ file: String) throws -> Int {
            try XCTUnwrap((try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? NSNumber)?.intValue)
        }
        // A new file, whatever the umask lets others read (0644 under the usual 022).
        let store = try openSQLiteStore("private/new.sqlite")
        try await store.pool.write { db in try db.execute(sql: "CREATE TABLE written (x)") }
        XCTAssertEqual(try mode(path("private/new.sqlite")), 0o600)
        XCTAssertEqual(try mode(path("private/new.sqlite-wal")), 0o600)
        await store.close()
        // A file made readable by others before is narrowed when opened.
        let old = path("private/old.sqlite")
        XCTAssertTrue(FileManager.default.createFile(atPath: old, contents: nil, attributes: [.posixPermissions: 0o644]))
        XCTAssertEqual(try mode(old), 0o644)
        _ = try SQLiteProjectionStore(path: old, logger: Self.logger)
        XCTAssertEqual(try mode(old), 0o600)
    }

    /// Processors started at the same moment on one new file all open it: they take turns at
    /// setting WAL mode and migrating (one of two exited with "database is locked" before).
    func testStoresOpenedAtOnceOnOneNewFileAllOpenIt() async throws {
        for round in 0..<20 {
            let file = path("at-once-\(round).sqlite")
            let failures = Mutex<[String]>([])
            DispatchQueue.concurrentPerform(iterations: 6) { _ in
                do {
                    _ = try SQLiteProjectionStore(path: file, logger: Self.logger)
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
            XCTAssertEqual(failures.withLock { $0 }, [], "round \(round)")
            let store = try SQLiteProjectionStore(path: file, logger: Self.logger)
            let version = try await store.pool.read { db in try Int.fetchOne(db, sql: "PRAGMA user_version") }
            XCTAssertEqual(version, SQLiteSchema.version)
        }
    }

    /// A commit waits while another process holds the file's write lock, and goes through once it
    /// is free (the busy timeout).
    func testACommitWaitsForAnotherConnectionsWriteAndThenGoesThrough() async throws {
        let store = try openSQLiteStore()
        let other = try DatabaseQueue(path: path())
        let holds = Mutex(false)
        let holder = Thread {
            try? other.writeWithoutTransaction { db in
                try db.execute(sql: "BEGIN IMMEDIATE")
                holds.withLock { $0 = true }
                usleep(300_000)
                try db.execute(sql: "COMMIT")
            }
        }
        holder.start()
        while !holds.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(5)) }
        let app = Fixture.app(name: "after the other writer")
        try await store.commit(mutations: [.upsertApp(app)], offsets: [])
        let stored = try await store.app(app.appId)
        XCTAssertEqual(stored, app)
        XCTAssertTrue(holds.withLock { $0 })
    }

    func testAVersionOneStoreIsMigratedToTheCurrentVersionKeepingItsRows() async throws {
        let app = Fixture.app(name: "from v1")
        let token = Fixture.token(app: app.appId)
        let device = Fixture.device(app: app.appId, token: "aa", user: "u")
        // A store as version 1 code left it: only the v1 migration, rows and an offset written.
        do {
            let pool = try DatabasePool(path: path())
            try SQLiteSchema.migrator.migrate(pool, upTo: "v1")
            try await pool.write { db in
                // The rows by hand, as version 1 had their columns.
                try db.execute(sql: """
                    INSERT INTO apps (app_id, org_id, name, callback_url, callback_headers, webhook_retries, created_at)
                    VALUES (?, ?, ?, NULL, '{}', 0, ?)
                    """, arguments: [SQLiteValues.text(app.appId), SQLiteValues.text(app.orgId), app.name, SQLiteValues.millis(app.createdAt)])
                try db.execute(sql: """
                    INSERT INTO api_tokens (token_id, app_id, token_hash, revoked, created_at) VALUES (?, ?, ?, 0, ?)
                    """, arguments: [SQLiteValues.text(token.tokenId), SQLiteValues.text(token.appId), token.tokenHash,
                                     SQLiteValues.millis(token.createdAt)])
                try db.execute(sql: """
                    INSERT INTO devices (app_id, device_token, user_id, platform, version, updated_at) VALUES (?, ?, ?, ?, ?, ?)
                    """, arguments: [SQLiteValues.text(device.appId), device.deviceToken, device.userId, device.platform.rawValue,
                                     device.version, SQLiteValues.millis(device.updatedAt)])
                let p0 = Fixture.partition(0)
                try db.execute(sql: "INSERT INTO partition_offsets (topic, \"partition\", next_offset) VALUES (?, ?, 7)",
                               arguments: [p0.topic, p0.partition])
            }
            let version = try await pool.read { db in try Int.fetchOne(db, sql: "PRAGMA user_version") }
            XCTAssertEqual(version, 1)
            try pool.close()
        }

        let store = try openSQLiteStore()

        let version = try await store.pool.read { db in try Int.fetchOne(db, sql: "PRAGMA user_version") }
        XCTAssertEqual(version, SQLiteSchema.version)
        let storedApp = try await store.app(app.appId)
        let storedDevice = try await store.device(device.key)
        let byHash = try await store.apiToken(hash: token.tokenHash)
        let offsets = try await store.offsets(topics: [Fixture.partition(0).topic])
        let eventTimes = try await store.eventTimes(topics: [Fixture.partition(0).topic])
        XCTAssertEqual(eventTimes, [Fixture.partition(0): 0], "an offset stored before event times reads as time 0")
        var counted = app
        counted.users = 1
        XCTAssertEqual(storedApp, counted, "step 21 counts the app's users from its stored devices")
        XCTAssertEqual(storedDevice, device)
        XCTAssertEqual(byHash, token)
        XCTAssertEqual(byHash?.isLegacy, true, "a token stored before scopes reads as legacy")
        XCTAssertEqual(offsets, [Fixture.partition(0): 7])
        let indexes = try await store.pool.read { db in
            try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'index' AND name IN ('acks_by_notification', 'api_tokens_by_hash') ORDER BY name")
        }
        XCTAssertEqual(indexes, ["acks_by_notification", "api_tokens_by_hash"])
        // The new tables take rows.
        let pending = PendingNotificationRow(appId: app.appId, deviceToken: "aa", notificationId: "n1", deliveryId: UUID(),
                                             sentAt: Fixture.at(3), text: "hi", businessId: nil)
        try await store.commit(mutations: [.putPending(pending)], offsets: [])
        let listed = try await store.pendingNotifications(device.key)
        XCTAssertEqual(listed, [pending])
    }

    func testReopeningKeepsCommittedRowsAndOffsets() async throws {
        let app = Fixture.app(name: "kept")
        let device = Fixture.device(app: app.appId, token: "aa", user: "u")
        do {
            let store = try openSQLiteStore()
            try await store.commit(mutations: [.upsertApp(app), .upsertDevice(device)],
                                   offsets: [OffsetUpdate(partition: Fixture.partition(0), expected: nil, next: 7)])
        }

        let reopened = try openSQLiteStore()

        let storedApp = try await reopened.app(app.appId)
        let storedDevice = try await reopened.device(device.key)
        let offsets = try await reopened.offsets(topics: [Fixture.partition(0).topic])
        XCTAssertEqual(storedApp, app)
        XCTAssertEqual(storedDevice, device)
        XCTAssertEqual(offsets, [Fixture.partition(0): 7])
    }

    func testOpeningAStoreWrittenByNewerCodeIsRefused() async throws {
        do {
            let store = try openSQLiteStore()
            try await store.pool.write { db in try db.execute(sql: "PRAGMA user_version = \(SQLiteSchema.version + 1)") }
        }

        XCTAssertThrowsError(try openSQLiteStore()) { error in
            XCTAssertEqual(error as? ProjectionStoreError, .unsupportedSchemaVersion(found: SQLiteSchema.version + 1, supported: SQLiteSchema.version))
        }
    }

    func testOpeningAFileThatIsNotADatabaseFailsWithADatabaseError() throws {
        try Data("not sqlite at all, just text that is long enough to fill a header".utf8).write(to: URL(fileURLWithPath: path()))

        XCTAssertThrowsError(try openSQLiteStore()) { error in
            guard case .database = error as? ProjectionStoreError else {
                return XCTFail("expected a database error, got \(error)")
            }
        }
    }

    func testAVersionTwoStoreIsMigratedAndKeepsItsDeliveries() async throws {
        let delivery = Fixture.delivery(app: UUID(), tracking: true, sent: 4)
        do {
            let pool = try DatabasePool(path: path())
            try SQLiteSchema.migrator.migrate(pool, upTo: "v2")
            // As version 2 had its columns.
            try await pool.write { db in
                try db.execute(sql: "INSERT INTO deliveries (app_id, delivery_id, kind, managed, tracking, sent, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                               arguments: [SQLiteValues.text(delivery.appId), SQLiteValues.text(delivery.deliveryId), delivery.kind.rawValue,
                                           delivery.managed, delivery.tracking, delivery.sent, SQLiteValues.millis(delivery.createdAt)])
            }
            try pool.close()
        }
        let store = try openSQLiteStore()
        let version = try await store.pool.read { db in try Int.fetchOne(db, sql: "PRAGMA user_version") }
        XCTAssertEqual(version, SQLiteSchema.version)
        let click = TrackingCounts(appId: delivery.appId, deliveryId: delivery.deliveryId,
                                   counts: [TrackingCount(action: .click, messageIndex: 3)])
        try await store.commit(mutations: [.countTracking(click)], offsets: [])
        let stats = try await store.deliveryStats(app: delivery.appId, deliveryId: delivery.deliveryId)
        XCTAssertEqual(stats, DeliveryStatsRow(delivery: delivery, clicks: 1))
    }

    /// A store that existed before its creation time was recorded has consumed its log already:
    /// it records the epoch, so a live processor never takes its log for one it has not seen.
    func testAStoreFromBeforeCreationTimesRecordsTheEpoch() async throws {
        do {
            let pool = try DatabasePool(path: path())
            try SQLiteSchema.migrator.migrate(pool, upTo: "v3")
            try pool.close()
        }
        let store = try openSQLiteStore()
        let created = try await store.createdAt()
        XCTAssertEqual(created, Date(timeIntervalSince1970: 0))
        let fresh = try await openStore("fresh.sqlite").createdAt()
        XCTAssertGreaterThan(fresh, Date(timeIntervalSince1970: 1_700_000_000))
    }

    /// A store that consumed records before changelogs existed keeps none: its history is not in
    /// the changelog, so no restore could rebuild it from there. One that consumed nothing starts
    /// a lineage when migrated.
    func testAStoreWithStateFromBeforeChangelogsKeepsNone() async throws {
        for (name, consumed) in [("old.sqlite", true), ("empty.sqlite", false)] {
            let pool = try DatabasePool(path: path(name))
            try SQLiteSchema.migrator.migrate(pool, upTo: "v8")
            if consumed {
                try await pool.write { db in
                    try db.execute(sql: "INSERT INTO partition_offsets (topic, \"partition\", next_offset) VALUES ('t', 0, 5)")
                }
            }
            try pool.close()
        }
        let old = try openSQLiteStore("old.sqlite")
        let oldPosition = try await old.changelogPosition()
        XCTAssertNil(oldPosition)
        try await old.commit(mutations: [.upsertApp(Fixture.app())], offsets: [])
        let unpublished = try await old.unpublishedChangelog(after: 0, limit: 10)
        XCTAssertEqual(unpublished, [], "commits of a store without a changelog leave no entries")

        let empty = try openSQLiteStore("empty.sqlite")
        try await empty.commit(mutations: [.upsertApp(Fixture.app())], offsets: [])
        let position = try await empty.changelogPosition()
        XCTAssertEqual(position?.seq, 1)
    }
}
