import Contracts
import Foundation
import Logging
@testable import Projections
@testable import ProjectionChangelog
@testable import PostgresProjections
@testable import SQLiteProjections
import ProjectionStores
import TestSupport
import XCTest

/// What only PostgreSQL has: a server that can go away and come back, several processes
/// committing at once, the schema in a database, the URL, and the promise to write what
/// SQLite writes (dumps compared with SQLite's for the same commits).
final class PostgresStoreTests: StoreTestCase {
    override class var backend: StoreBackend { .postgres }

    /// A server of this test's own (stopped at teardown) and a store on a new database in it.
    private func privateServer() async throws -> (PostgresServer, PostgresProjectionStore) {
        let server = try await PostgresServer.start()
        addTeardownBlock { try await server.stop() }
        let url = try await server.createDatabase("outage")
        return (server, try await PostgresProjectionStore(location: PostgresLocation(url: url), logger: Self.logger))
    }

    private func assertUnavailable(_ what: String, file: StaticString = #filePath, line: UInt = #line,
                                   _ body: () async throws -> Void) async {
        do {
            try await body()
            XCTFail("\(what): expected .unavailable, nothing was thrown", file: file, line: line)
        } catch ProjectionStoreError.unavailable {
        } catch {
            XCTFail("\(what): expected .unavailable, got \(error)", file: file, line: line)
        }
    }

    // MARK: - Outages

    func testACallDuringAnOutageIsUnavailableAndTheFirstAfterTheServerIsBackSucceeds() async throws {
        let (server, store) = try await privateServer()
        let app = UUID()
        let p0 = Fixture.partition(0)
        try await store.commit(mutations: [.upsertDevice(Fixture.device(app: app, token: "t1", user: "u"))],
                               offsets: [OffsetUpdate(partition: p0, expected: nil, next: 1)])

        try await server.pause()
        await assertUnavailable("commit while down") {
            try await store.commit(mutations: [.upsertDevice(Fixture.device(app: app, token: "t2", user: "u"))],
                                   offsets: [OffsetUpdate(partition: p0, expected: 1, next: 2)])
        }
        await assertUnavailable("read while down") { _ = try await store.devices(app: app, user: "u") }
        try await server.resume()
        try await store.commit(mutations: [.upsertDevice(Fixture.device(app: app, token: "t2", user: "u"))],
                               offsets: [OffsetUpdate(partition: p0, expected: 1, next: 2)])

        // A restart kills the idle connections; the next calls replace them.
        try await server.restart()
        try await store.commit(mutations: [.upsertDevice(Fixture.device(app: app, token: "t3", user: "u"))],
                               offsets: [OffsetUpdate(partition: p0, expected: 2, next: 3)])
        let devices = try await store.devices(app: app, user: "u")
        let offsets = try await store.offsets(topics: [p0.topic])
        XCTAssertEqual(devices.map(\.deviceToken), ["t1", "t2", "t3"])
        XCTAssertEqual(offsets, [p0: 3])
    }

    /// A processor's loop (retry `.unavailable`; after an ambiguous failure, a conflict whose
    /// stored offset is the one it moved to means it did commit) across a restart under load:
    /// every batch lands exactly once.
    func testCommitsRetriedAcrossARestartUnderLoadLandExactlyOnce() async throws {
        let (server, store) = try await privateServer()
        let app = UUID(), d = UUID()
        let p0 = Fixture.partition(0)
        let restarted = Flag()
        let restart = Task {
            try await Task.sleep(for: .milliseconds(300))
            try await server.restart()
            restarted.set()
        }
        var applied: Int64 = 0
        var unavailable = 0
        var afterRestart = 0
        // A restart that fails (or a store that never comes back) ends the test, not the run.
        let deadline = ContinuousClock.now + .seconds(180)
        while afterRestart < 20 {
            guard ContinuousClock.now < deadline else {
                XCTFail("20 commits after the restart did not land within 180 s (restart done: \(restarted.isSet))")
                break
            }
            let next = applied + 1
            do {
                try await store.commit(mutations: [
                    .upsertDevice(Fixture.device(app: app, token: "t\(next)", user: "u")),
                    .countTracking(TrackingCounts(appId: app, deliveryId: d, counts: [TrackingCount(action: .open, messageIndex: 0)])),
                ], offsets: [OffsetUpdate(partition: p0, expected: applied == 0 ? nil : applied, next: next)])
                applied = next
            } catch ProjectionStoreError.unavailable {
                unavailable += 1
                try await Task.sleep(for: .milliseconds(20))
                continue
            } catch ProjectionStoreError.offsetConflict {
                let stored = try await store.offsets(topics: [p0.topic])[p0]
                XCTAssertEqual(stored, next, "a conflict here only means the ambiguous commit did land")
                applied = next
            }
            if restarted.isSet { afterRestart += 1 } else { try await Task.sleep(for: .milliseconds(10)) }
        }
        try await restart.value

        print("\(applied) commits across a restart; \(unavailable) attempts failed as unavailable and were retried")
        XCTAssertGreaterThan(unavailable, 0, "the loop ran through the outage")
        let devices = try await store.devices(app: app, user: "u")
        let tracked = try await store.load(StateQuery(trackedDeliveries: [d])).trackedEvents[d]
        let offsets = try await store.offsets(topics: [p0.topic])
        XCTAssertEqual(devices.count, Int(applied))
        XCTAssertEqual(tracked, [TrackedEvent(appId: app, action: .open, messageIndex: 0, repeats: Int(applied) - 1)],
                       "one report per batch, none counted twice")
        XCTAssertEqual(offsets, [p0: applied])
    }

    /// Server errors are told apart by SQLSTATE: a trigger raises each one inside a commit.
    func testServerErrorsAreTransientOnlyWhenTheyAreUnrelatedToTheData() async throws {
        let store = try await openStore()
        let cases: [(state: String, transient: Bool)] = [
            ("40P01", true), ("40001", true), ("57P01", true), ("57P03", true), ("08006", true), ("53300", true),
            ("23505", false), ("23502", false), ("22001", false), ("P0001", false),
        ]
        for (state, transient) in cases {
            try await execute("""
                CREATE OR REPLACE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql
                AS $$ BEGIN RAISE EXCEPTION 'refused by test' USING ERRCODE = '\(state)'; END $$
                """)
            try await execute("""
                CREATE OR REPLACE TRIGGER refuse BEFORE INSERT ON registration_status FOR EACH ROW EXECUTE FUNCTION refuse()
                """)
            do {
                try await store.commit(mutations: [.putRegistrationStatus(Fixture.status(app: UUID()))], offsets: [])
                XCTFail("\(state): the commit should have failed")
            } catch let error as ProjectionStoreError {
                switch error {
                case .unavailable(let message), .database(let message):
                    XCTAssertEqual(error == .unavailable(message), transient, "\(state): \(error)")
                    XCTAssertTrue(message.contains(state) && message.contains("refused by test"), message)
                default:
                    XCTFail("\(state): \(error)")
                }
            }
        }
        try await execute("DROP TRIGGER refuse ON registration_status")
        try await store.commit(mutations: [.putRegistrationStatus(Fixture.status(app: UUID()))], offsets: [])
    }

    /// The server ends the session in the middle of a commit (as an administrator or a failover
    /// would): the commit fails as unavailable, writes nothing, and the store goes on.
    func testACommitWhoseSessionIsTerminatedIsUnavailableAndWritesNothing() async throws {
        let store = try await openStore()
        let device = Fixture.device(app: UUID(), token: "t", user: "u")
        try await execute("""
            CREATE FUNCTION end_session() RETURNS trigger LANGUAGE plpgsql
            AS $$ BEGIN PERFORM pg_terminate_backend(pg_backend_pid()); RETURN NEW; END $$
            """)
        try await execute("CREATE TRIGGER end_session BEFORE INSERT ON registration_status FOR EACH ROW EXECUTE FUNCTION end_session()")

        await assertUnavailable("terminated commit") {
            try await store.commit(mutations: [.upsertDevice(device), .putRegistrationStatus(Fixture.status(app: device.appId))],
                                   offsets: [OffsetUpdate(partition: Fixture.partition(0), expected: nil, next: 1)])
        }
        try await execute("DROP TRIGGER end_session ON registration_status")
        let stored = try await store.device(device.key)
        let offsets = try await store.offsets(topics: [Fixture.partition(0).topic])
        XCTAssertNil(stored)
        XCTAssertEqual(offsets, [:])
        try await store.commit(mutations: [.upsertDevice(device)], offsets: [OffsetUpdate(partition: Fixture.partition(0), expected: nil, next: 1)])
        let after = try await store.device(device.key)
        XCTAssertEqual(after, device)
    }

    // MARK: - Concurrent processes

    func testOfTwoStoresInsertingTheFirstOffsetOfAPartitionAtOnceOneWinsAndTheOtherConflicts() async throws {
        let stores = [try await openStore(), try await openStore()]
        let app = UUID()
        for round in 0..<12 {
            let partition = Fixture.partition(Int32(round))
            let outcomes = await withTaskGroup(of: (Int, Bool).self) { group in
                for (index, store) in stores.enumerated() {
                    // Many rows keep the first inserter's transaction open while the other inserts.
                    let devices = (0..<500).map {
                        Mutation.upsertDevice(Fixture.device(app: app, token: "r\(round)-s\(index)-\($0)", user: "s\(index)"))
                    }
                    group.addTask {
                        do {
                            try await store.commit(mutations: devices,
                                                   offsets: [OffsetUpdate(partition: partition, expected: nil, next: 1)])
                            return (index, true)
                        } catch {
                            XCTAssertEqual(error as? ProjectionStoreError, .offsetConflict([partition]), "round \(round)")
                            return (index, false)
                        }
                    }
                }
                return await group.reduce(into: [Int: Bool]()) { $0[$1.0] = $1.1 }
            }
            XCTAssertEqual(outcomes.values.filter { $0 }.count, 1, "round \(round)")
        }
        let first = try await stores[0].devices(app: app, user: "s0")
        let second = try await stores[1].devices(app: app, user: "s1")
        XCTAssertEqual(first.count + second.count, 12 * 500, "only the winners' rows were written")
    }

    // MARK: - The same content as SQLite

    /// A processor-shaped batch (its reports counted last, as `BatchState` writes them) of
    /// every kind of mutation. The times are printed for information only.
    func testALargeMixedCommitWritesWhatSQLiteWrites() async throws {
        var random = SeededRandom(seed: 7)
        let mixed = MixedMutations.make(count: 24_000, keys: 4_000, using: &random)
        let isCount = { (m: Mutation) in if case .countTracking = m { true } else { false } }
        let mutations = mixed.filter { !isCount($0) } + mixed.filter(isCount)
        let offsets = [OffsetUpdate(partition: Fixture.partition(0), expected: nil, next: 24_000)]
        let postgres = try await openStore()
        let sqlite = try openSQLiteStore()

        var rates: [String] = []
        for (name, store) in [("sqlite", sqlite as any ProjectionStore), ("postgres", postgres)] {
            let start = ContinuousClock.now
            try await store.commit(mutations: mutations, offsets: offsets)
            let seconds = (ContinuousClock.now - start).inSeconds
            rates.append("\(name) \(String(format: "%.2f", seconds)) s (\(Int(Double(mutations.count) / seconds)) mutations/s)")
        }
        print("one commit of \(mutations.count) mixed mutations: \(rates.joined(separator: ", "))")

        let postgresDump = try await postgres.dump()
        let sqliteDump = try await sqlite.dump()
        XCTAssertEqual(postgresDump, sqliteDump)
        XCTAssertGreaterThan(postgresDump.split(separator: "\n").count, 8_000)
        for table in ["devices", "registration_status", "outbox", "pending_notifications", "acks", "deliveries", "tracking_events"] {
            XCTAssertTrue(postgresDump.contains("\n\(table) "), "no \(table) rows")
        }
        let postgresJobs = try await postgres.outboxJobs(after: nil, limit: 100_000)
        let sqliteJobs = try await sqlite.outboxJobs(after: nil, limit: 100_000)
        XCTAssertEqual(postgresJobs, sqliteJobs, "delivery progress too")
    }

    /// Many small commits of random mutations over few keys, so that a commit often touches a
    /// key several times: both stores' grouped writes (`WritePlan`) must end where the same
    /// mutations committed one at a time do.
    func testRandomCommitsOverFewKeysEndAsCommittedOneByOne() async throws {
        var random = SeededRandom(seed: 2024)
        let postgres = try await openStore()
        let sqlite = try openSQLiteStore()
        let oneByOne = try openSQLiteStore("one-by-one.sqlite")
        for _ in 0..<60 {
            let mutations = MixedMutations.make(count: Int.random(in: 1...80, using: &random), keys: 6, using: &random)
            try await postgres.commit(mutations: mutations, offsets: [])
            try await sqlite.commit(mutations: mutations, offsets: [])
            for mutation in mutations { try await oneByOne.commit(mutations: [mutation], offsets: []) }
        }
        let expected = try await oneByOne.dump()
        let postgresDump = try await postgres.dump()
        let sqliteDump = try await sqlite.dump()
        XCTAssertEqual(postgresDump, expected)
        XCTAssertEqual(sqliteDump, expected)
        let expectedJobs = try await oneByOne.outboxJobs(after: nil, limit: 1_000)
        let postgresJobs = try await postgres.outboxJobs(after: nil, limit: 1_000)
        let sqliteJobs = try await sqlite.outboxJobs(after: nil, limit: 1_000)
        XCTAssertEqual(postgresJobs, expectedJobs)
        XCTAssertEqual(sqliteJobs, expectedJobs)
    }

    /// Key order is byte order whatever the database's own collation (here ICU English, where
    /// "a" sorts before "B"), and every kind of value renders as in SQLite.
    func testTheDumpIsSQLitesTextInADatabaseWithALinguisticCollation() async throws {
        let server = try await PostgresServer.shared()
        let database = "pushline_icu_" + UUID().uuidString.prefix(8).lowercased()
        try await server.execute("""
            CREATE DATABASE \(database) TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C' ENCODING 'UTF8'
            """)
        addTeardownBlock { try await server.dropDatabase(database) }
        let postgres = try await PostgresProjectionStore(location: PostgresLocation(url: server.url(database: database)),
                                                         logger: Self.logger)
        let sqlite = try openSQLiteStore()
        let app = UUID(uuidString: "00000000-0000-0000-0000-0000000000A1")!
        var job = Fixture.job("B-job", app: nil)
        job.body = Data([0xc3, 0x28, 0x00])
        let mutations: [Mutation] = [
            .upsertApp(Fixture.app(app, name: "quote \" backslash \\ tab \t bell \u{7} é 😀", callbackUrl: nil,
                                   headers: ["b": "2", "A": "1"], retries: 3)),
            .upsertDevice(Fixture.device(app: app, token: "b", user: "u")),
            .upsertDevice(Fixture.device(app: app, token: "B", user: "u")),
            .upsertDevice(Fixture.device(app: app, token: "a", user: "u", platform: .android)),
            .upsertDevice(Fixture.device(app: app, token: "é", user: "u")),
            .upsertApiToken(Fixture.token(app: app, revoked: true)),
            .putRegistrationStatus(Fixture.status(app: app, status: .Failed, reason: .DuplicateExists)),
            .putRegistrationStatus(Fixture.status(app: app)),
            .putPending(Fixture.pending(app: app, token: "Z", nid: "n", business: nil)),
            .putPending(Fixture.pending(app: app, token: "z", nid: "N", business: "b")),
            .putAck(Fixture.ack(app: app, token: "a", nid: "x")),
            .putDelivery(Fixture.delivery(app: app, tracking: true, sent: 4)),
            .countTracking(TrackingCounts(appId: app, deliveryId: UUID(), counts: [TrackingCount(action: .impression, messageIndex: 3, reports: 2)])),
            .enqueueOutbox(job), .enqueueOutbox(Fixture.job("a-job", app: app)),
        ]
        try await postgres.commit(mutations: mutations, offsets: [])
        try await sqlite.commit(mutations: mutations, offsets: [])

        let postgresDump = try await postgres.dump()
        let sqliteDump = try await sqlite.dump()
        XCTAssertEqual(postgresDump, sqliteDump)
        XCTAssertTrue(postgresDump.contains(#"device_token="B""#) && postgresDump.contains(" body=0xc32800 "), postgresDump)
        let tokens = postgresDump.split(separator: "\n").filter { $0.hasPrefix("devices ") }.compactMap {
            $0.firstMatch(of: /device_token="([^"]*)"/).map { String($0.output.1) }
        }
        XCTAssertEqual(tokens, ["B", "a", "b", "é"])
    }

    // MARK: - Schema

    func testOpeningCreatesTheTablesAndRecordsTheSchemaVersion() async throws {
        _ = try await openStore()
        let tables = try await strings("""
            SELECT table_name::text FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name
            """)
        let version = try await strings("SELECT version::text FROM schema_version")
        XCTAssertEqual(tables, ["acks", "admin_tokens", "api_tokens", "apps", "audit_log", "changelog_outbox", "changelog_state", "counted_sends", "dead_letters", "deliveries", "delivery_outcomes", "device_names", "devices", "held_pushes", "idempotency_keys", "outbox",
                                "outbox_attempts", "parked_tracking", "partition_offsets", "pending_notifications", "registration_status", "restore_indexes", "schema_version",
                                "store_info", "tracking_events", "user_settings"])
        XCTAssertEqual(version, ["\(PostgresSchema.version)"])
    }

    func testStoresOpenedAtOnceOnANewDatabaseMigrateItOnceAndReopeningKeepsRows() async throws {
        let url = try await storeURL()
        let stores = try await withThrowingTaskGroup(of: PostgresProjectionStore.self) { group in
            for _ in 0..<4 {
                group.addTask { try await PostgresProjectionStore(location: PostgresLocation(url: url), logger: Self.logger) }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        let app = Fixture.app(name: "kept")
        try await stores[0].commit(mutations: [.upsertApp(app)], offsets: [OffsetUpdate(partition: Fixture.partition(0), expected: nil, next: 7)])

        let reopened = try await openStore()
        let storedApp = try await reopened.app(app.appId)
        let offsets = try await reopened.offsets(topics: [Fixture.partition(0).topic])
        XCTAssertEqual(storedApp, app)
        XCTAssertEqual(offsets, [Fixture.partition(0): 7])
    }

    func testOpeningAStoreWrittenByNewerCodeIsRefused() async throws {
        _ = try await openStore()
        try await execute("UPDATE schema_version SET version = \(PostgresSchema.version + 1)")

        do {
            _ = try await openStore()
            XCTFail("opening should have failed")
        } catch let error as ProjectionStoreError {
            XCTAssertEqual(error, .unsupportedSchemaVersion(found: PostgresSchema.version + 1, supported: PostgresSchema.version))
        }
    }

    /// A store from before device tokens were keyed by their hash (schema 6: keys on the token's
    /// text) is migrated keeping every row, which is then found by its key.
    func testAVersionSixStoreKeyedByTokenTextIsMigratedKeepingItsRows() async throws {
        let store = try await openStore()
        let app = UUID()
        let device = Fixture.device(app: app, token: "t-é", user: "u")
        let pending = Fixture.pending(app: app, token: "t-é", nid: "n1")
        let ack = Fixture.ack(app: app, token: "t-é", nid: "n2")
        try await store.commit(mutations: [.upsertDevice(device), .putPending(pending), .putAck(ack)], offsets: [])
        let before = try await store.dump()
        for (table, key) in [("devices", "app_id, device_token"), ("pending_notifications", "app_id, device_token, notification_id"),
                             ("acks", "app_id, device_token, notification_id")] {
            try await execute("ALTER TABLE \(table) DROP COLUMN token_key")  // and with it the primary key
            try await execute("ALTER TABLE \(table) ADD PRIMARY KEY (\(key))")
        }
        try await undoPostgresStepsAfterSeven()
        try await execute("UPDATE schema_version SET version = 6")

        let migrated = try await openStore()
        let after = try await migrated.dump()
        let keys = try await strings("""
            SELECT pg_get_constraintdef(oid) FROM pg_constraint
            WHERE conname IN ('devices_pkey', 'pending_notifications_pkey', 'acks_pkey') ORDER BY conname
            """)
        let version = try await strings("SELECT version::text FROM schema_version")
        let snapshot = try await migrated.load(StateQuery(deviceKeys: [device.key], pendingKeys: [pending.key]))
        XCTAssertEqual(after, before)
        XCTAssertEqual(keys, ["PRIMARY KEY (app_id, token_key, notification_id)", "PRIMARY KEY (app_id, token_key)",
                              "PRIMARY KEY (app_id, token_key, notification_id)"])
        XCTAssertEqual(version, ["\(PostgresSchema.version)"])
        XCTAssertEqual(snapshot.devices, [device.key: device])
        XCTAssertEqual(snapshot.pending, [pending.key: pending])
    }

    func testASchemaParameterKeepsAStoreApartFromAnotherInTheSameDatabase() async throws {
        let url = try await storeURL()
        let one = try await ProjectionStoreFactory.open(url + "?schema=tenant_one", logger: Self.logger)
        let two = try await ProjectionStoreFactory.open(url + "?schema=Tenant_Two", logger: Self.logger)
        let app = Fixture.app(name: "only in one")
        try await one.commit(mutations: [.upsertApp(app)], offsets: [OffsetUpdate(partition: Fixture.partition(0), expected: nil, next: 1)])
        try await two.commit(mutations: [], offsets: [OffsetUpdate(partition: Fixture.partition(0), expected: nil, next: 5)])

        let inOne = try await one.app(app.appId)
        let inTwo = try await two.app(app.appId)
        let offsetsTwo = try await two.offsets(topics: [Fixture.partition(0).topic])
        let schemas = try await strings("""
            SELECT table_schema::text FROM information_schema.tables WHERE table_name = 'apps' ORDER BY 1
            """)
        XCTAssertEqual(inOne, app)
        XCTAssertNil(inTwo)
        XCTAssertEqual(offsetsTwo, [Fixture.partition(0): 5])
        XCTAssertEqual(schemas, ["Tenant_Two", "tenant_one"])
    }

    /// A restore into a store in a schema of its own (a name that needs quoting) sets its keys and
    /// indexes aside there, copies its rows there, and builds them there again.
    func testARestoreIntoASchemaLoadsAndBuildsItsKeysThere() async throws {
        let url = try await storeURL()
        let committed = try await ProjectionStoreFactory.open(url + "?schema=Committed", logger: Self.logger)
        let restored = try await ProjectionStoreFactory.open(url + "?schema=Restored_Here", logger: Self.logger)
        var random = SeededRandom(seed: 23)
        let mutations = MixedMutations.make(count: 400, keys: 40, using: &random)
        try await committed.commit(mutations: mutations, offsets: [])
        try await restored.beginRestore()
        let keys = """
            SELECT conname::text FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace
            WHERE n.nspname = 'Restored_Here' AND c.contype = 'p' AND c.conname = ANY('{\(PostgresChangelog.restoredKeys.keys.joined(separator: ","))}')
            ORDER BY 1
            """
        let setAside = try await strings(keys)
        try await restored.restore(rows: RestoredRows(mutations))
        try await restored.finishRestore()

        let (restoredDump, committedDump) = (try await restored.dump(), try await committed.dump())
        let builtKeys = try await strings(keys)
        let indexes = try await strings("""
            SELECT indexname::text FROM pg_indexes WHERE schemaname = 'Restored_Here' AND indexname NOT LIKE '%_pkey' ORDER BY 1
            """)
        XCTAssertEqual(restoredDump, committedDump)
        XCTAssertEqual(setAside, [])
        XCTAssertEqual(builtKeys, PostgresChangelog.restoredKeys.keys.sorted())
        XCTAssertEqual(indexes, (SecondaryIndexes.names + SecondaryIndexes.postgresOnly).sorted())
    }

    // MARK: - Locations

    func testTheFactoryOpensPostgreSQLURLsAndSQLitePaths() async throws {
        let postgres = try await ProjectionStoreFactory.open(try await storeURL(), logger: Self.logger)
        let postgresql = try await ProjectionStoreFactory.open(try await storeURL().replacingOccurrences(of: "postgres://", with: "postgresql://"),
                                                               logger: Self.logger)
        let sqlite = try await ProjectionStoreFactory.open("sqlite:" + path(), logger: Self.logger)
        XCTAssertTrue(postgres is PostgresProjectionStore)
        XCTAssertTrue(postgresql is PostgresProjectionStore)
        XCTAssertTrue(sqlite is SQLiteProjectionStore)
    }

    func testAURLIsParsedIntoItsParts() throws {
        let location = try PostgresLocation(url: "postgresql://push%40line:p%2Fss@db.internal:6543/pushline%5Fprod?schema=p1&pool_size=4&sslmode=require")
        XCTAssertEqual(location, PostgresLocation(host: "db.internal", port: 6543, user: "push@line", password: "p/ss",
                                                  database: "pushline_prod", schema: "p1", tls: .require, poolSize: 4))
        let defaults = try PostgresLocation(url: "postgres://127.0.0.1")
        XCTAssertEqual(defaults, PostgresLocation(host: "127.0.0.1", port: 5432, user: "postgres", database: "postgres"))
    }

    func testBadLocationsAreRefusedWithAClearMessageThatHidesThePassword() async throws {
        let cases: [(String, String)] = [
            ("postgres://", "no host"),
            ("postgres:///pushline", "no host"),
            ("postgres://u:secret@h/db/extra", "just the database name"),
            ("postgres://u:secret@h/db?schema=a-b", "schema 'a-b'"),
            ("postgres://u:secret@h/db?sslmode=maybe", "sslmode must be"),
            ("postgres://u:secret@h/db?pool_size=0", "pool_size"),
            ("postgres://u:secret@h/db?colour=blue", "unknown parameter 'colour'"),
            ("postgres:u@h/db", "not a PostgreSQL URL"),
            ("sqlite:", "empty SQLite path"),
        ]
        for (location, expected) in cases {
            do {
                _ = try await ProjectionStoreFactory.open(location, logger: Self.logger)
                XCTFail("\(location) was accepted")
            } catch ProjectionStoreError.invalidConfiguration(let message) {
                XCTAssertTrue(message.contains(expected), "\(location): \(message)")
                XCTAssertFalse(message.contains("secret"), "\(location): \(message)")
            }
        }
    }

    func testOpeningAStoreOnAServerThatIsNotThereIsUnavailable() async throws {
        await assertUnavailable("open") {
            _ = try await ProjectionStoreFactory.open("postgres://postgres@127.0.0.1:\(TestBroker.freePort())/none", logger: Self.logger)
        }
    }
}

/// A flag one task raises and another polls.
final class Flag: @unchecked Sendable {
    private let lock = NSLock()
    private var raised = false

    var isSet: Bool { lock.withLock { raised } }

    func set() { lock.withLock { raised = true } }
}

/// A small deterministic generator (SplitMix64), so that a random test fails the same way twice.
struct SeededRandom: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Random mutations of every kind over a bounded set of keys: with few keys, one commit
/// touches the same key several times, in every order of kinds.
enum MixedMutations {
    static func make(count: Int, keys: Int, using random: inout SeededRandom) -> [Mutation] {
        let apps = (0..<3).map { UUID(uuidString: String(format: "00000000-0000-0000-0000-%012x", 0xA0 + $0))! }
        let deliveries = (0..<max(2, keys / 4)).map { UUID(uuidString: String(format: "00000000-0000-0000-0001-%012x", $0))! }
        func app() -> UUID { apps.randomElement(using: &random)! }
        func token() -> String { "t\(Int.random(in: 0..<keys, using: &random))" }
        func nid() -> String { "n\(Int.random(in: 0..<max(2, keys / 8), using: &random))" }
        func key(_ n: Int) -> UUID { UUID(uuidString: String(format: "00000000-0000-0000-0002-%012x", n))! }
        func maybe(_ text: String) -> String? { Bool.random(using: &random) ? text : nil }
        func seconds() -> Double { Double(Int.random(in: 0..<100, using: &random)) }

        var mutations: [Mutation] = []
        mutations.reserveCapacity(count)
        for n in 0..<count {
            switch Int.random(in: 0..<100, using: &random) {
            case 0..<3:
                mutations.append(.upsertApp(AppRow(appId: app(), orgId: key(n % 5), name: "app \(n)", callbackUrl: maybe("https://cb.test/\(n)"),
                                                   callbackHeaders: Bool.random(using: &random) ? [:] : ["x-n": "\(n)"],
                                                   webhookRetries: n % 4, createdAt: Fixture.at(seconds()),
                                                   pushCredentials: n % 3 == 0 ? nil : Fixture.pushCredentials(n))))
            case 3..<6:
                // A quarter each of API tokens, admin tokens, audit entries and idempotency keys, drawing the
                // same random numbers.
                let (k, appId, revoked, at) = (Int.random(in: 0..<keys, using: &random), app(), Bool.random(using: &random),
                                               Fixture.at(seconds()))
                switch n % 4 {
                case 3:
                    mutations.append(.putIdempotencyKey(IdempotencyKeyRow(
                        scope: revoked ? "admin:bootstrap:apps" : "admin:\(key(7)):apps/\(appId)/tokens", key: "key-\(k % 9) é",
                        resourceId: key(4_000_000 + n), requestHash: "rh\(n)", firstAt: at)))
                case 0:
                    mutations.append(.upsertAdminToken(AdminTokenRow(adminTokenId: key(2_000_000 + k), name: "admin \(k)", tokenHash: "ah\(n)",
                                                                     revoked: revoked, createdAt: at, revokedAt: revoked ? at : nil)))
                case 1:
                    mutations.append(.putAuditEntry(AuditEntryRow(
                        commandId: key(3_000_000 + k), at: at, type: revoked ? "admin.app-created" : "admin.admin-token-revoked",
                        appId: revoked ? appId : nil, actorId: revoked ? nil : key(7), actorName: revoked ? "bootstrap" : "ops é",
                        requestId: revoked ? nil : "req-\(n)", outcome: revoked ? "applied" : "rejected", reason: revoked ? nil : "unknown-app",
                        changes: "{\"n\":\(n),\"s\":\"\\u2028\"}")))
                default:
                    mutations.append(.upsertApiToken(ApiTokenRow(tokenId: key(k), appId: appId, tokenHash: "h\(n)", revoked: revoked,
                                                                 createdAt: at, scopes: [nil, [.client], [.server], [.client, .server]][n % 4])))
                }
            case 6..<26:
                var device = DeviceRow(appId: app(), deviceToken: token(), userId: "u\(n % 7)",
                                       platform: Bool.random(using: &random) ? .ios : .android,
                                       version: Int64(n), updatedAt: Fixture.at(seconds()))
                device.tags = DeviceLabels(["vip", "fan", "team:a"].prefix(n % 4))
                device.topics = n % 3 == 0 ? ["news"] : []
                mutations.append(.upsertDevice(device))
            case 26..<32:
                mutations.append(.deleteDevice(DeviceKey(appId: app(), deviceToken: token())))
            case 32..<38:
                let requestId = key(1_000_000 + Int.random(in: 0..<keys, using: &random))
                // A third are pruned statuses.
                guard n % 3 != 0 else {
                    mutations.append(.deleteRegistrationStatus(requestId))
                    continue
                }
                mutations.append(.putRegistrationStatus(RegistrationStatusRow(
                    requestId: requestId, appId: app(),
                    status: Bool.random(using: &random) ? .Success : .Failed,
                    failureReason: Bool.random(using: &random) ? .DuplicateExists : nil, decidedAt: Fixture.at(seconds()), part: n % 2)))
            case 38..<44:
                var job = Fixture.job("job-\(Int.random(in: 0..<keys, using: &random))", app: Bool.random(using: &random) ? app() : nil,
                                      body: "{\"n\":\(n)}", maxAttempts: 1 + n % 3, due: seconds())
                job.state = [.pending, .delivered, .failed, .replayed].randomElement(using: &random)!
                if Bool.random(using: &random) {
                    mutations.append(.enqueueOutbox(job))
                } else {
                    job.attempts = Int.random(in: 0..<3, using: &random)
                    job.lastStatus = job.attempts > 0 ? 500 : nil
                    job.lastError = maybe("failure \(n)")
                    mutations.append(.restoreOutbox(job))
                }
            case 44..<56:
                mutations.append(.putPending(PendingNotificationRow(appId: app(), deviceToken: token(), notificationId: nid(),
                                                                    deliveryId: deliveries.randomElement(using: &random)!,
                                                                    sentAt: Fixture.at(seconds()), text: "text \(n)",
                                                                    businessId: maybe("b\(n)"))))
            case 56..<61:
                mutations.append(.deletePending(PendingKey(appId: app(), deviceToken: token(), notificationId: nid())))
            case 61..<63:
                mutations.append(.clearPending(DeviceKey(appId: app(), deviceToken: token())))
            case 63..<70:
                // A quarter are pruned acks.
                guard n % 4 != 0 else {
                    mutations.append(.deleteAck(PendingKey(appId: app(), deviceToken: token(), notificationId: nid())))
                    continue
                }
                mutations.append(.putAck(AckRow(appId: app(), deviceToken: token(), notificationId: nid(), businessId: maybe("b\(n)"),
                                                ackedAt: Fixture.at(seconds()))))
            case 70..<74:
                let counted = Bool.random(using: &random)
                mutations.append(.putDelivery(DeliveryRow(appId: app(), deliveryId: deliveries.randomElement(using: &random)!,
                                                          kind: .alert, managed: Bool.random(using: &random),
                                                          tracking: Int.random(in: 0..<4, using: &random) > 0,
                                                          sent: Int.random(in: 0..<6, using: &random), createdAt: Fixture.at(seconds()),
                                                          delivered: counted ? Int.random(in: 0..<4, using: &random) : 0,
                                                          failed: counted ? 1 : 0, unregistered: counted ? n % 3 : 0,
                                                          idempotencyKey: maybe("key-\(n)"), requestHash: maybe("hash-\(n)"),
                                                          duplicates: n % 4, conflicts: n % 2)))
            case 74..<76:
                let outcome = DeliveryOutcome.allCases.randomElement(using: &random)!
                mutations.append(.putDeliveryOutcome(DeliveryOutcomeRow(
                    appId: app(), deliveryId: deliveries.randomElement(using: &random)!, messageIndex: Int.random(in: 0..<8, using: &random),
                    deviceToken: token(), outcome: outcome, reason: outcome == .delivered ? nil : "reason \(n)", reportedAt: Fixture.at(seconds()))))
            case 76..<80:
                let pair = TrackingPair(deliveryId: deliveries.randomElement(using: &random)!, appId: app())
                switch Int.random(in: 0..<4, using: &random) {
                case 0:
                    mutations.append(.deleteTracking(pair, (0..<Int.random(in: 1...3, using: &random)).map { _ in
                        TrackingRowKey(action: TrackingAction.allCases.randomElement(using: &random)!,
                                       messageIndex: Int.random(in: 0..<8, using: &random))
                    }))
                case 1: mutations.append(.dropTracking(pair))
                case 2: mutations.append(.parkTracking(pair, at: Fixture.at(seconds())))
                default: mutations.append(.unparkTracking(pair))
                }
            default:
                let counts = (0..<Int.random(in: 1...4, using: &random)).map { _ in
                    TrackingCount(action: TrackingAction.allCases.randomElement(using: &random)!,
                                  messageIndex: Int.random(in: 0..<8, using: &random), reports: Int.random(in: 1...3, using: &random))
                }
                mutations.append(.countTracking(TrackingCounts(appId: app(), deliveryId: deliveries.randomElement(using: &random)!,
                                                               counts: counts)))
            }
        }
        return mutations
    }
}
