import Contracts
import Foundation
import GRDB
import Logging
import PostgresNIO
@testable import Projections
@testable import ProjectionChangelog
@testable import PostgresProjections
@testable import SQLiteProjections
import Testing

/// The one migration list (`ProjectionMigrations`) and the upgrade in place of a store of each
/// schema version that has shipped, on both backends.
@Suite(.serialized) struct MigrationTests {
    // MARK: - The list

    @Test func testBothStoresRunOneListNumberedOnceWhoseLastStepIsTheCurrentVersion() {
        let steps = ProjectionMigrations.steps
        let numbers = steps.map(\.number)
        #expect(numbers == numbers.sorted() && Set(numbers).count == numbers.count, "\(numbers)")
        #expect(ProjectionMigrations.version == numbers.last)
        #expect(SQLiteSchema.version == ProjectionMigrations.version)
        #expect(PostgresSchema.version == ProjectionMigrations.version)
        // PostgreSQL runs every step but the numbering of SQLite's device rows (it records that
        // version all the same); SQLite every one but the keying of tokens by hash and the index
        // of the tokens' order, which SQLite's key already is.
        #expect(steps.filter { $0.postgres == nil }.map(\.number) == [28])
        #expect(steps.filter { $0.sqlite == nil }.map(\.number) == [7, 25])
        #expect(ProjectionMigrations.v7.postgres?.contains(PostgresRows.tokenKey("device_token")) == true,
                "step 7 keys the rows as the store computes a token's key")
        #expect(ProjectionMigrations.v25.postgres?.contains("left(device_token, \(PostgresRows.tokenOrderPrefix))") == true,
                "step 25 indexes the prefix the pages are ordered by")
        // SQLite's migrator records each SQLite step under its own name, in order.
        let identifiers = steps.filter { $0.sqlite != nil }.map(\.sqliteIdentifier)
        #expect(SQLiteSchema.migrator.migrations == identifiers)
        #expect(Set(identifiers).count == identifiers.count)
        // The numbers each store recorded for each step when it shipped: the SQLite store had no
        // step 7 and numbered the later steps one lower; it numbers new steps as the list does.
        let sqliteHistory = Dictionary(uniqueKeysWithValues: ShippedVersion.all.filter { $0.backend == .sqlite }.map { ($0.step, $0.recorded) })
        #expect(sqliteHistory.filter { $0.key <= 15 } == [1: 1, 2: 2, 3: 3, 5: 5, 6: 6, 8: 7, 9: 8, 10: 9, 11: 10, 12: 11, 13: 12, 14: 13, 15: 14])
        #expect(sqliteHistory.filter { $0.key > 15 }.allSatisfy { $0.key == $0.value })
        #expect(ShippedVersion.all.filter { $0.backend == .postgres }.map(\.step) == numbers.filter { $0 >= 3 })
    }

    // MARK: - Upgrades in place

    /// A schema version a store of `backend` has been left at by a release: `recorded` is what
    /// it recorded (SQLite's `user_version`, PostgreSQL's `schema_version`), `step` the step of
    /// the list it stands for. PostgreSQL stores start at version 3; SQLite's step names are the
    /// numbers it recorded.
    struct ShippedVersion: Sendable, CustomTestStringConvertible {
        let backend: StoreBackend
        let recorded: Int
        let step: Int

        var testDescription: String { "\(backend.rawValue) \(recorded)" + (recorded == step ? "" : " (step \(step))") }

        static let all: [ShippedVersion] =
            ProjectionMigrations.steps.filter { $0.sqlite != nil }.map {
                ShippedVersion(backend: .sqlite, recorded: Int($0.sqliteIdentifier.dropFirst())!, step: $0.number)
            } + ProjectionMigrations.steps.filter { $0.number >= 3 }.map {
                ShippedVersion(backend: .postgres, recorded: $0.number, step: $0.number)
            }
    }

    /// A store left at a shipped version with a row in each table it had, opened by this code:
    /// its rows are all there, with what the later steps filled in (and the park mark of a sent
    /// delivery gone, below step 9); its schema is a new store's; opening it again changes
    /// nothing.
    @Test(arguments: ShippedVersion.all)
    func testAStoreOfEachShippedVersionIsUpgradedInPlaceKeepingItsRows(_ shipped: ShippedVersion) async throws {
        try await withStoreHarness(shipped.backend) { h in
            try await Self.build(h, at: shipped)
            #expect(try await h.strings(Self.versionQuery(h.backend)) == ["\(shipped.recorded)"])

            let store = try await h.openStore()
            let dump = try await store.dump()
            let offsets = try await store.offsets(topics: [Seed.partition.topic])
            let eventTimes = try await store.eventTimes(topics: [Seed.partition.topic])
            await store.close()

            #expect(dump == Seed.dump(at: shipped.step))
            // Step 27 indexes the names the device already had.
            #expect(try await h.strings("SELECT kind || ' ' || name FROM device_names ORDER BY kind, name")
                == (shipped.step >= 23 ? ["tag plan.premium", "tag team:benfica", "topic news"] : []))
            if h.backend == .sqlite {
                // Step 28: each name refers to its device's row by number.
                #expect(try await h.strings("""
                    SELECT count(*) FROM device_names n JOIN devices d ON d.row_id = n.device_row AND d.device_token = n.device_token
                    """) == [shipped.step >= 23 ? "3" : "0"])
            }
            #expect(offsets == [Seed.partition: 7])
            #expect(eventTimes == [Seed.partition: shipped.step >= 8 ? 5 : 0], "an offset stored before event times reads as time 0")
            let version = try await h.strings(Self.versionQuery(h.backend))
            #expect(version == ["\(ProjectionMigrations.version)"])
            let schema = try await Self.schema(h)
            _ = try await h.openStore("fresh.sqlite")
            #expect(try await Self.schema(h, store: "fresh.sqlite") == schema)

            let again = try await h.openStore()
            let dumpAgain = try await again.dump()
            await again.close()
            #expect(dumpAgain == dump)
            #expect(try await h.strings(Self.versionQuery(h.backend)) == version)
            #expect(try await Self.schema(h) == schema)
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testAStoreOfAVersionAboveTheLastStepIsRefusedAndLeftAsItIs(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let newer = ProjectionMigrations.version + 1
            try await h.openStore().close()
            try await h.execute(backend == .sqlite ? "PRAGMA user_version = \(newer)" : "UPDATE schema_version SET version = \(newer)")

            await h.assertThrows(.unsupportedSchemaVersion(found: newer, supported: ProjectionMigrations.version)) {
                _ = try await h.openStore()
            }
            #expect(try await h.strings(Self.versionQuery(backend)) == ["\(newer)"])
        }
    }

    // MARK: - Building and reading stores

    static func versionQuery(_ backend: StoreBackend) -> String {
        backend == .sqlite ? "PRAGMA user_version" : "SELECT version::text FROM schema_version"
    }

    /// The store `store.sqlite` as the release of `shipped` left it: the steps up to its version
    /// applied (recording the version as that release did), then `Seed`'s rows inserted.
    static func build(_ h: StoreHarness, at shipped: ShippedVersion) async throws {
        let inserts = Seed.inserts(h.backend, at: shipped.step)
        switch h.backend {
        case .sqlite:
            let pool = try DatabasePool(path: h.path())
            try SQLiteSchema.migrator.migrate(pool, upTo: "v\(shipped.recorded)")
            try await pool.write { db in
                try db.execute(sql: "PRAGMA user_version = \(shipped.recorded)")
                for statement in inserts {
                    try db.execute(sql: statement)
                }
            }
            try pool.close()
        case .postgres:
            let location = try PostgresLocation(url: try await h.storeURL())
            let connection = try await PostgresConnection.connect(
                configuration: .init(host: location.host, port: location.port, username: location.user, password: location.password,
                                     database: location.database, tls: .disable),
                id: 0, logger: StoreHarness.logger)
            do {
                _ = try await PostgresSchema.migrate(connection, upTo: shipped.step, logger: StoreHarness.logger)
                for statement in inserts {
                    try await connection.run(PostgresQuery(unsafeSQL: statement), logger: StoreHarness.logger)
                }
            } catch {
                try? await connection.close()
                throw error
            }
            try await connection.close()
        }
    }

    /// The store's tables, columns and indexes, one line each, and for SQLite the migrator's record.
    static func schema(_ h: StoreHarness, store name: String = "store.sqlite") async throws -> [String?] {
        switch h.backend {
        case .sqlite:
            return try await h.strings("""
                SELECT type || ' ' || name || ': ' || coalesce(sql, '') FROM sqlite_master ORDER BY name
                """, store: name) + h.strings("SELECT identifier FROM grdb_migrations ORDER BY identifier", store: name)
        case .postgres:
            return try await h.strings("""
                SELECT table_name || '.' || column_name || ' ' || ordinal_position || ' ' || data_type || ' ' || is_nullable
                    || ' ' || coalesce(column_default, '-') || ' ' || coalesce(collation_name, '-')
                FROM information_schema.columns WHERE table_schema = 'public' ORDER BY table_name, ordinal_position
                """, store: name) + h.strings("""
                SELECT indexname || ': ' || indexdef FROM pg_indexes WHERE schemaname = 'public' ORDER BY indexname
                """, store: name)
        }
    }
}

/// One row in each table of the schema, each column with the step that added it; the rows'
/// inserts at a version, and the dump expected once a store holding them is upgraded.
private enum Seed {
    /// A value in an insert: the same text in both dialects but for booleans, bytes and
    /// PostgreSQL's token keys (which the SQLite tables do not have).
    enum Value: Sendable {
        case text(String), integer(Int64), bool(Bool), bytes(String), null, tokenKey(String)

        func sql(_ backend: StoreBackend) -> String? {
            switch (self, backend) {
            case (.text(let s), _): "'" + s.replacingOccurrences(of: "'", with: "''") + "'"
            case (.integer(let n), _): String(n)
            case (.bool(let b), .sqlite): b ? "1" : "0"
            case (.bool(let b), .postgres): b ? "true" : "false"
            case (.bytes(let s), .sqlite): "X'" + Data(s.utf8).map { String(format: "%02x", $0) }.joined() + "'"
            case (.bytes(let s), .postgres): "decode('" + Data(s.utf8).map { String(format: "%02x", $0) }.joined() + "', 'hex')"
            case (.null, _): "NULL"
            case (.tokenKey, .sqlite): nil
            case (.tokenKey(let token), .postgres): "sha256(convert_to('\(token)', 'UTF8'))"
            }
        }
    }

    struct Column: Sendable {
        var name: String
        /// The step that added the column.
        var since: Int
        var value: Value
        /// What the dump shows of the value; nil: the column is not dumped.
        var dumped: String?
        /// What the dump shows once a store from before `since` is upgraded: what the step filled in.
        var filled = "null"
        /// The same, when it depends on the version upgraded from (nil: `filled`).
        var filledFrom: (@Sendable (Int) -> String)? = nil
    }

    struct Row: Sendable {
        var table: String
        /// The step that created the table.
        var since: Int
        var columns: [Column]
        /// A step that deletes the row from a store upgraded through it.
        var removedBy: Int?
    }

    static let app = "6f9619ff-8b86-d011-b42d-00c04fc964ff", delivery = "00000000-0000-0000-0000-0000000000d1"
    static let unsent = "00000000-0000-0000-0000-0000000000d2", admin = "00000000-0000-0000-0000-0000000000a1"
    static let token = "t-é"
    static let partition = Fixture.partition(0)

    /// Text as the dump quotes it (none of these needs escaping).
    static func quoted(_ s: String) -> String { "\"\(s)\"" }

    static func text(_ name: String, _ s: String, since: Int = 0) -> Column {
        Column(name: name, since: since, value: .text(s), dumped: quoted(s))
    }

    static func integer(_ name: String, _ n: Int64, since: Int = 0, filled: String = "null") -> Column {
        Column(name: name, since: since, value: .integer(n), dumped: String(n), filled: filled)
    }

    static func bool(_ name: String, _ b: Bool) -> Column {
        Column(name: name, since: 0, value: .bool(b), dumped: b ? "1" : "0")
    }

    static func null(_ name: String, since: Int = 0) -> Column {
        Column(name: name, since: since, value: .null, dumped: "null")
    }

    static func hidden(_ name: String, _ value: Value, since: Int = 0) -> Column {
        Column(name: name, since: since, value: value, dumped: nil)
    }

    /// In dump order: tables as `ProjectionDump.tables` lists them, rows by key, columns as dumped.
    static let rows: [Row] = [
        Row(table: "apps", since: 1, columns: [
            text("app_id", app), text("org_id", "00000000-0000-0000-0000-0000000000aa"), text("name", "Shop"),
            text("callback_url", "https://example.test/cb"), text("callback_headers", "{}"), integer("webhook_retries", 2),
            integer("created_at", 1_763_800_000_123), text("push_credentials", "{}", since: 11), integer("part", 1, since: 18, filled: "0"),
            Column(name: "identity_required", since: 19, value: .bool(true), dumped: "1", filled: "0"),
            text("identity_secret", "sealed", since: 19),
            text("webhook_hosts", "hooks.example.test,*.example.net", since: 20),
            // Step 21 counts the users of the stored devices: alice.
            integer("users", 1, since: 21, filled: "1"),
            text("time_zone", "Europe/Lisbon", since: 31), text("quiet_hours", "22:00-08:00", since: 31),
            text("frequency_caps", "*:10/86400,marketing:3/86400", since: 31), integer("quiet_users", 1, since: 31, filled: "0"),
            // Step 32 counts the users with pushes counted on their own row: alice, from step 31 on.
            Column(name: "counted_users", since: 32, value: .integer(1), dumped: "1", filledFrom: { $0 >= 31 ? "1" : "0" }), text("counted_sends", "1763800003123/00000000000000d2/", since: 32),
        ]),
        Row(table: "api_tokens", since: 1, columns: [
            text("token_id", "00000000-0000-0000-0000-000000000001"), text("app_id", app), text("token_hash", "abc123"),
            bool("revoked", false), integer("created_at", 1_763_800_000_123), text("scopes", "server", since: 13),
            integer("part", 1, since: 18, filled: "0"),
        ]),
        Row(table: "devices", since: 1, columns: [
            text("app_id", app), text("device_token", token), text("user_id", "alice"), text("platform", "ios"), integer("version", 1),
            integer("updated_at", 1_763_800_001_123), hidden("token_key", .tokenKey(token), since: 7),
            text("time_zone", "Europe/Lisbon", since: 16),
            integer("badges_since", 1_763_800_003_123, since: 21), integer("badges", 2, since: 21, filled: "0"),
            text("locale", "pt-BR", since: 23), text("app_version", "5.2", since: 23), text("tags", "plan.premium team:benfica", since: 23),
            text("topics", "news", since: 23),
        ]),
        Row(table: "registration_status", since: 1, columns: [
            text("request_id", "00000000-0000-0000-0000-0000000000f1"), text("app_id", app), text("status", "Failed"),
            text("failure_reason", "DuplicateExists"), integer("decided_at", 1_763_800_002_123),
            integer("part", 1, since: 21, filled: "0"),
        ]),
        Row(table: "pending_notifications", since: 2, columns: [
            text("app_id", app), text("device_token", token), text("notification_id", "n1"), text("delivery_id", delivery),
            integer("sent_at", 1_763_800_003_123), text("text", "hello"), null("business_id"), hidden("token_key", .tokenKey(token), since: 7),
        ]),
        Row(table: "acks", since: 2, columns: [
            text("app_id", app), text("device_token", token), text("notification_id", "n2"), text("business_id", "b-1"),
            integer("acked_at", 1_763_800_004_123), hidden("token_key", .tokenKey(token), since: 7),
        ]),
        Row(table: "deliveries", since: 2, columns: [
            text("app_id", app), text("delivery_id", delivery), text("kind", "alert"), bool("managed", true), bool("tracking", true),
            integer("sent", 2), integer("created_at", 1_763_800_003_123),
            integer("delivered", 1, since: 12, filled: "0"), integer("failed", 2, since: 12, filled: "0"),
            integer("unregistered", 3, since: 12, filled: "0"),
            text("idempotency_key", "key-1", since: 15), text("request_hash", "hash-1", since: 15),
            integer("duplicates", 4, since: 15, filled: "0"), integer("conflicts", 5, since: 15, filled: "0"),
            integer("part", 1, since: 18, filled: "0"), text("sent_by_locale", "default=1,pt-BR=1", since: 24),
            text("outcomes_by_locale", "default=1/0/0,pt-BR=0/1/0", since: 26), integer("expired", 6, since: 29, filled: "0"),
            integer("send_at", 1_763_800_009_000, since: 30), text("schedule", "waiting", since: 30),
            text("scheduled_command", "{}", since: 30),
            text("send_at_local", "2025-11-23T09:00:00", since: 31), integer("held", 7, since: 31, filled: "0"),
            integer("dropped", 8, since: 31, filled: "0"), integer("cancelled", 9, since: 31, filled: "0"),
            text("waves", "1763800009000,1763803609000", since: 31), integer("capped", 10, since: 31, filled: "0"),
        ]),
        Row(table: "delivery_outcomes", since: 12, columns: [
            text("app_id", app), text("delivery_id", delivery), integer("message_index", 0), text("device_token", token),
            text("outcome", "delivered"), null("reason"), integer("reported_at", 1_763_800_005_123),
        ]),
        Row(table: "tracking_events", since: 3, columns: [
            text("delivery_id", delivery), text("app_id", app), integer("action", 1), integer("message_index", 0), integer("repeats", 2),
            integer("part", 1, since: 18, filled: "0"),
        ]),
        // A park mark of a delivery that has been sent, which step 9 deletes, and one of a
        // delivery whose send has not come.
        Row(table: "parked_tracking", since: 6, columns: [
            text("delivery_id", delivery), text("app_id", app), integer("parked_at", 1_763_800_002_500),
            integer("part", 1, since: 18, filled: "0"),
        ], removedBy: 9),
        Row(table: "parked_tracking", since: 6, columns: [
            text("delivery_id", unsent), text("app_id", app), integer("parked_at", 1_763_800_002_600),
            integer("part", 1, since: 18, filled: "0"),
        ]),
        Row(table: "outbox", since: 1, columns: [
            text("id", "job-a"), text("kind", "registration-status"), text("app_id", app), text("url", "https://example.test/hook"),
            text("headers", "{}"), Column(name: "body", since: 0, value: .bytes("{}"), dumped: quoted("{}")), integer("max_attempts", 3),
            hidden("attempts", .integer(0)), hidden("next_attempt_at", .integer(1_763_800_000_123)), hidden("state", .text("pending")),
            hidden("created_at", .integer(1_763_800_000_123)),
        ]),
        Row(table: "admin_tokens", since: 14, columns: [
            text("admin_token_id", admin), text("name", "ops"), text("token_hash", "def456"), bool("revoked", false),
            integer("created_at", 1_763_800_000_123), null("revoked_at"),
        ]),
        Row(table: "audit_log", since: 14, columns: [
            text("command_id", "00000000-0000-0000-0000-0000000000c1"), integer("at", 1_763_800_006_123), text("type", "CreateApp"),
            text("app_id", app), text("actor_id", admin), text("actor_name", "ops"), text("request_id", "req-1"),
            text("outcome", "applied"), null("reason"), text("changes", "{}"),
        ]),
        Row(table: "idempotency_keys", since: 15, columns: [
            text("scope", "send"), text("idempotency_key", "key-1"), text("resource_id", delivery), text("request_hash", "hash-1"),
            integer("first_at", 1_763_800_003_123),
        ]),
        Row(table: "held_pushes", since: 31, columns: [
            text("app_id", app), text("delivery_id", delivery), integer("part", 1), text("device_token", token), text("user_id", "alice"),
            integer("release_at", 1_763_800_009_000), integer("due_at", 1_763_800_009_000), integer("badge", 3),
            hidden("token_key", .tokenKey(token), since: 31),
        ]),
        Row(table: "user_settings", since: 31, columns: [
            text("app_id", app), text("user_id", "alice"), integer("part", 1), text("quiet_hours", "23:00-07:00"),
            text("capped", "1763800003123/00000000000000d1/marketing"),
        ]),
        Row(table: "counted_sends", since: 32, columns: [
            text("app_id", app), integer("part", 1), text("delivery", "00000000000000d2"),
            Column(name: "users", since: 32, value: .bytes("8 bytes."), dumped: quoted("8 bytes.")),
        ]),
        // Not dumped: read back as offsets and event times.
        Row(table: "partition_offsets", since: 1, columns: [
            hidden("topic", .text(partition.topic)), hidden("\"partition\"", .integer(Int64(partition.partition))),
            hidden("next_offset", .integer(7)), hidden("event_time", .integer(5), since: 8),
        ]),
    ]

    /// The inserts of the rows a store at `step` has tables and columns for.
    static func inserts(_ backend: StoreBackend, at step: Int) -> [String] {
        rows.filter { $0.since <= step }.map { row in
            let values = row.columns.filter { $0.since <= step }.compactMap { column in column.value.sql(backend).map { (column.name, $0) } }
            return "INSERT INTO \(row.table) (\(values.map(\.0).joined(separator: ", "))) VALUES (\(values.map(\.1).joined(separator: ", ")))"
        }
    }

    /// The dump of a store that held the rows at `step`, once upgraded.
    static func dump(at step: Int) -> String {
        rows.filter { $0.since <= step && !($0.removedBy.map { step < $0 } ?? false) }.compactMap { row in
            let columns = row.columns.compactMap { column in
                column.dumped.map { " \(column.name)=" + (column.since <= step ? $0 : column.filledFrom?(step) ?? column.filled) }
            }
            return columns.isEmpty ? nil : row.table + columns.joined() + "\n"
        }.joined()
    }
}
