import Contracts
import Foundation
import GRDB
import Logging
@testable import Projections
@testable import ProjectionChangelog
@testable import PostgresProjections
@testable import SQLiteProjections
import TestSupport
import Testing
import XCTest

/// The store a test runs against. The store suites are Swift Testing tests parameterised over
/// every case (`@Test(arguments: StoreBackend.allCases)`), so each runs once per backend.
enum StoreBackend: String, Sendable, CaseIterable, CustomTestStringConvertible {
    case sqlite, postgres

    var testDescription: String { rawValue }
}

/// Runs `body` with the stores of one test on `backend`, and removes them afterwards, also when
/// `body` throws.
func withStoreHarness(_ backend: StoreBackend, _ body: (StoreHarness) async throws -> Void) async throws {
    let harness = try StoreHarness(backend)
    do {
        try await body(harness)
    } catch {
        try? await harness.remove()
        throw error
    }
    try await harness.remove()
}

/// The stores of one test: SQLite files in a temporary directory of its own, or PostgreSQL
/// databases of its own on the test process's server (`PostgresServer.shared()`), created on
/// first use; `remove()` deletes both.
final class StoreHarness {
    let backend: StoreBackend
    let directory: URL
    /// The PostgreSQL database of each store name this test opened.
    private var databases: [String: String] = [:]

    init(_ backend: StoreBackend) throws {
        self.backend = backend
        directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("pushline-projections-\(UUID().uuidString.lowercased())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    func remove() async throws {
        if !databases.isEmpty {
            let server = try await PostgresServer.shared()
            for database in databases.values {
                try await server.dropDatabase(database)
            }
            databases = [:]
        }
        try FileManager.default.removeItem(at: directory)
    }

    func path(_ name: String = "store.sqlite") -> String {
        directory.appendingPathComponent(name).path
    }

    static let logger: Logger = {
        var logger = Logger(label: "projections-test")
        logger.logLevel = .warning
        return logger
    }()

    /// A store of this test's backend named `name`: the same name opens the same store again
    /// (its file, or its database).
    func openStore(_ name: String = "store.sqlite") async throws -> any ProjectionStore {
        switch backend {
        case .sqlite: try openSQLiteStore(name)
        case .postgres: try await PostgresProjectionStore(location: PostgresLocation(url: storeURL(name)), logger: Self.logger)
        }
    }

    func openSQLiteStore(_ name: String = "store.sqlite") throws -> SQLiteProjectionStore {
        try SQLiteProjectionStore(path: path(name), logger: Self.logger)
    }

    /// The `PUSHLINE_STORE` location of the store `name` (for PostgreSQL, its database is
    /// created on first use).
    func storeURL(_ name: String = "store.sqlite") async throws -> String {
        switch backend {
        case .sqlite:
            return "sqlite:" + path(name)
        case .postgres:
            let server = try await PostgresServer.shared()
            if let database = databases[name] { return server.url(database: database) }
            let database = "pushline_test_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(16)
            try await server.createDatabase(database)
            databases[name] = database
            return server.url(database: database)
        }
    }

    /// The first column of each row of `sql`, as text, read from the store `name` with a client
    /// of its own: for tables the store has no reading API for.
    func strings(_ sql: String, store name: String = "store.sqlite") async throws -> [String?] {
        switch backend {
        case .sqlite:
            let queue = try DatabaseQueue(path: path(name))
            return try await queue.read { db in try String?.fetchAll(db, sql: sql) }
        case .postgres:
            _ = try await storeURL(name)
            return try await PostgresServer.shared().strings(sql, database: databases[name]!)
        }
    }

    /// Takes the PostgreSQL store `name` back to the tables of schema version 7, undoing steps 8
    /// to 32 (the newest first; step 28 changes nothing in PostgreSQL), for the tests that upgrade
    /// an old store; the version row is left to the caller. A new step adds its undoing here.
    func undoPostgresStepsAfterSeven(store name: String = "store.sqlite") async throws {
        for sql in [
            "DROP TABLE counted_sends",  // version 32; its new deliveries_due goes with 31's
            "ALTER TABLE apps DROP COLUMN counted_users, DROP COLUMN counted_sends",
            "DROP TABLE held_pushes, user_settings",  // version 31
            "DROP INDEX deliveries_due",
            "ALTER TABLE apps DROP COLUMN time_zone, DROP COLUMN quiet_hours, DROP COLUMN frequency_caps, DROP COLUMN quiet_users",
            "ALTER TABLE deliveries DROP COLUMN send_at_local, DROP COLUMN held, DROP COLUMN dropped, DROP COLUMN cancelled, DROP COLUMN waves, "
                + "DROP COLUMN capped",
            "DROP INDEX deliveries_scheduled",  // version 30; its deliveries_waiting went in 31
            "ALTER TABLE deliveries DROP COLUMN send_at, DROP COLUMN schedule, DROP COLUMN scheduled_command",
            "ALTER TABLE deliveries DROP COLUMN expired",  // version 29
            "DROP TABLE device_names",  // version 27, and with the function its triggers:
            "DROP FUNCTION device_names_follow() CASCADE",
            "ALTER TABLE deliveries DROP COLUMN outcomes_by_locale",  // version 26
            "DROP INDEX devices_in_token_order",  // version 25
            "ALTER TABLE deliveries DROP COLUMN sent_by_locale",  // version 24
            "ALTER TABLE devices DROP COLUMN locale, DROP COLUMN app_version, DROP COLUMN tags, DROP COLUMN topics",  // version 23
            "DROP INDEX outbox_claimable",  // version 22
            "ALTER TABLE apps DROP COLUMN users",  // version 21
            "ALTER TABLE devices DROP COLUMN badges_since, DROP COLUMN badges",
            "ALTER TABLE registration_status DROP COLUMN part",
            "DROP INDEX registration_status_by_app_and_time, acks_by_app_and_time",
        ] {
            try await execute(sql, store: name)
        }
        try await execute("ALTER TABLE apps DROP COLUMN webhook_hosts", store: name)  // 20
        try await execute("ALTER TABLE apps DROP COLUMN identity_required, DROP COLUMN identity_secret", store: name)  // 19
        let parts = [("apps", "app_id"), ("api_tokens", "token_id"), ("deliveries", "app_id, delivery_id"),
                     ("tracking_events", "delivery_id, app_id, action, message_index"), ("parked_tracking", "delivery_id, app_id")]
        // Version 18: dropping the column drops the primary key it is in.
        for (table, key) in parts {
            try await execute("ALTER TABLE \(table) DROP COLUMN part", store: name)
            try await execute("ALTER TABLE \(table) ADD PRIMARY KEY (\(key))", store: name)
        }
        for sql in [
            "ALTER TABLE partition_offsets DROP COLUMN event_time",  // version 8
            "DROP TABLE changelog_state, changelog_outbox, restore_indexes",  // 10
            "ALTER TABLE apps DROP COLUMN push_credentials",  // 11
            "DROP TABLE delivery_outcomes",  // 12, with the columns below
            "ALTER TABLE deliveries DROP COLUMN delivered, DROP COLUMN failed, DROP COLUMN unregistered",
            "ALTER TABLE api_tokens DROP COLUMN scopes",  // 13
            "DROP TABLE admin_tokens, audit_log",  // 14
            "ALTER TABLE deliveries DROP COLUMN idempotency_key, DROP COLUMN request_hash, DROP COLUMN duplicates, DROP COLUMN conflicts",  // 15
            "DROP TABLE idempotency_keys",
            "ALTER TABLE devices DROP COLUMN time_zone",  // 16
            "DROP INDEX parked_tracking_by_app_and_time",  // 17, from the index below
            "CREATE INDEX parked_tracking_by_time ON parked_tracking (parked_at)",
        ] {
            try await execute(sql, store: name)
        }
    }

    /// Runs one statement on the store `name` with a client of its own.
    func execute(_ sql: String, store name: String = "store.sqlite") async throws {
        switch backend {
        case .sqlite:
            let queue = try DatabaseQueue(path: path(name))
            try await queue.write { db in try db.execute(sql: sql) }
        case .postgres:
            _ = try await storeURL(name)
            try await PostgresServer.shared().execute(sql, database: databases[name]!)
        }
    }

    /// Records an issue unless `body` throws exactly `expected`.
    func assertThrows(_ expected: ProjectionStoreError, sourceLocation: SourceLocation = #_sourceLocation,
                      _ body: () async throws -> Void) async {
        do {
            try await body()
            Issue.record("expected \(expected), nothing was thrown", sourceLocation: sourceLocation)
        } catch let error as ProjectionStoreError {
            #expect(error == expected, sourceLocation: sourceLocation)
        } catch {
            Issue.record("expected \(expected), got \(error)", sourceLocation: sourceLocation)
        }
    }
}

/// The same stores for the XCTest suites of one backend (`SchemaTests`, `PostgresStoreTests`):
/// a `StoreHarness` per test, removed afterwards.
class StoreTestCase: XCTestCase {
    class var backend: StoreBackend { .sqlite }

    var backend: StoreBackend { type(of: self).backend }

    private(set) var harness: StoreHarness!

    override func setUpWithError() throws {
        harness = try StoreHarness(backend)
    }

    override func tearDown() async throws {
        try await harness?.remove()
    }

    static var logger: Logger { StoreHarness.logger }

    var directory: URL { harness.directory }

    func path(_ name: String = "store.sqlite") -> String { harness.path(name) }

    func openStore(_ name: String = "store.sqlite") async throws -> any ProjectionStore { try await harness.openStore(name) }

    func openSQLiteStore(_ name: String = "store.sqlite") throws -> SQLiteProjectionStore { try harness.openSQLiteStore(name) }

    func storeURL(_ name: String = "store.sqlite") async throws -> String { try await harness.storeURL(name) }

    func strings(_ sql: String, store name: String = "store.sqlite") async throws -> [String?] {
        try await harness.strings(sql, store: name)
    }

    func execute(_ sql: String, store name: String = "store.sqlite") async throws {
        try await harness.execute(sql, store: name)
    }

    func undoPostgresStepsAfterSeven(store name: String = "store.sqlite") async throws {
        try await harness.undoPostgresStepsAfterSeven(store: name)
    }
}

/// Rows and dates for tests. Dates have whole milliseconds, the precision the store keeps.
enum Fixture {
    static let t0 = Date(timeIntervalSince1970: 1_763_800_000.123)

    static func at(_ seconds: Double) -> Date {
        t0.addingTimeInterval(seconds)
    }

    static func app(_ appId: UUID = UUID(), name: String = "app", callbackUrl: String? = nil,
                    headers: [String: String] = [:], retries: Int = 0) -> AppRow {
        AppRow(appId: appId, orgId: UUID(), name: name, callbackUrl: callbackUrl, callbackHeaders: headers,
               webhookRetries: retries, createdAt: t0)
    }

    /// Credentials with both providers when `n` is even, APNs only otherwise; the "seals" are
    /// stand-in text (the store neither opens nor checks them), with characters JSON escapes.
    static func pushCredentials(_ n: Int) -> PushCredentials {
        let apns = APNsCredentials(teamId: "TEAM\(n)", keyId: "KEY\(n)", bundleId: "com.example.app\(n)",
                                   environment: n % 4 == 1 ? .sandbox : .production, fingerprint: "SHA256:fp/\(n)+",
                                   privateKey: SealedSecret(keyId: "k\(n)", box: "box\"\\/\(n)é"))
        let fcm = FCMCredentials(projectId: "project-\(n)", clientEmail: "a@project-\(n).iam", privateKeyId: n % 4 == 0 ? nil : "id\(n)",
                                 tokenUri: "https://oauth2.test/token", fingerprint: "SHA256:\(n)",
                                 serviceAccount: SealedSecret(keyId: "k\(n)", box: "sa\u{2028}\(n)"))
        return PushCredentials(apns: apns, fcm: n % 2 == 0 ? fcm : nil)
    }

    static func token(app appId: UUID, revoked: Bool = false, at seconds: Double = 0) -> ApiTokenRow {
        ApiTokenRow(tokenId: UUID(), appId: appId, tokenHash: ApiTokens.hash(ApiTokens.generate()), revoked: revoked,
                    createdAt: at(seconds))
    }

    static func device(app appId: UUID, token: String, user: String, platform: Platform = .ios, version: Int64 = 1) -> DeviceRow {
        DeviceRow(appId: appId, deviceToken: token, userId: user, platform: platform, version: version, updatedAt: at(1))
    }

    static func status(app appId: UUID, request: UUID = UUID(), status: DeviceRegistrationAPI.Status = .Success,
                       reason: DeviceRegistrationAPI.FailureReason? = nil) -> RegistrationStatusRow {
        RegistrationStatusRow(requestId: request, appId: appId, status: status, failureReason: reason, decidedAt: at(2))
    }

    static func job(_ id: String, app appId: UUID? = nil, body: String = #"{"Status":"Success"}"#, maxAttempts: Int = 3,
                    due seconds: Double = 0) -> OutboxJob {
        OutboxJob(id: id, kind: "registration-status", appId: appId, url: "https://example.test/hook",
                  headers: ["x-extra": "1"], body: Data(body.utf8), maxAttempts: maxAttempts,
                  nextAttemptAt: at(seconds), createdAt: at(seconds))
    }

    static func pending(app appId: UUID, token: String, nid: String, delivery: UUID = UUID(), sent seconds: Double = 3,
                        text: String = "hello", business: String? = nil) -> PendingNotificationRow {
        PendingNotificationRow(appId: appId, deviceToken: token, notificationId: nid, deliveryId: delivery, sentAt: at(seconds),
                               text: text, businessId: business)
    }

    static func ack(app appId: UUID, token: String, nid: String, business: String? = nil, at seconds: Double = 4) -> AckRow {
        AckRow(appId: appId, deviceToken: token, notificationId: nid, businessId: business, ackedAt: at(seconds))
    }

    static func delivery(app appId: UUID, id: UUID = UUID(), kind: NotificationKind = .alert, managed: Bool = true,
                         tracking: Bool = false, sent: Int = 2) -> DeliveryRow {
        DeliveryRow(appId: appId, deliveryId: id, kind: kind, managed: managed, tracking: tracking, sent: sent, createdAt: at(3))
    }

    static func partition(_ number: Int32, topic: String = "pushline.commands.registration") -> PartitionKey {
        PartitionKey(topic: topic, partition: number)
    }
}
