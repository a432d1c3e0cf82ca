import ProjectionChangelog
import Projections
import Logging
import PostgresNIO

/// The versioned schema of the PostgreSQL projection store: the tables, keys and indexes of
/// the SQLite store (same names and meaning), in PostgreSQL's own types, except that a device
/// token is keyed by its hash (`token_key`, see `v7`).
///
/// UUIDs are `uuid` (which orders as their lower-case text does), dates `bigint` milliseconds
/// since 1970, booleans `boolean`, bodies `bytea`, and every text column compares bytewise
/// (`COLLATE "C"`), so that key order, and with it the dump, matches SQLite's whatever the
/// database's locale. The applied version is the one row of `schema_version`; a store written by
/// newer code is refused before anything is touched. Opening runs under a transaction-level
/// advisory lock, so processes opening one new store at once migrate it once.
enum PostgresSchema {
    /// The newest schema version this code creates and understands. It counts as the SQLite
    /// schema does: version 3 is the same tables (apps and devices, managed notifications,
    /// tracking); PostgreSQL stores start there.
    static let version = 15

    /// Versions above the stored one are applied in order.
    private static let migrations: [(version: Int, sql: String)] = [(3, v3), (5, v5), (6, v6), (7, v7), (8, v8), (9, v9), (10, v10), (11, v11), (12, v12),
                                                                    (13, v13), (14, v14), (15, v15)]

    /// Any fixed number: the lock only serialises openers of one database.
    private static let openLock: Int64 = 0x5075_7368_6c69_6e65  // "Pushline"

    static func prepare(_ connection: PostgresConnection, schema: String?, logger: Logger) async throws {
        try await connection.run("SELECT pg_advisory_xact_lock(\(openLock))", logger: logger)
        if let schema {
            try await connection.run(PostgresQuery(unsafeSQL: "CREATE SCHEMA IF NOT EXISTS \"\(schema)\""), logger: logger)
        }
        try await connection.run("""
            CREATE TABLE IF NOT EXISTS schema_version (
                singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
                version integer NOT NULL
            )
            """, logger: logger)
        let found = try await connection.rows("SELECT version FROM schema_version", logger: logger)
            .first.map { try Int($0.decode(Int32.self)) } ?? 0
        guard found <= version else {
            throw ProjectionStoreError.unsupportedSchemaVersion(found: found, supported: version)
        }
        for migration in migrations where migration.version > found {
            // One statement per query: the extended protocol takes no more.
            for statement in migration.sql.split(separator: ";") where !statement.allSatisfy(\.isWhitespace) {
                try await connection.run(PostgresQuery(unsafeSQL: String(statement)), logger: logger)
            }
            try await connection.run("""
                INSERT INTO schema_version (version) VALUES (\(Int32(migration.version)))
                ON CONFLICT (singleton) DO UPDATE SET version = excluded.version
                """, logger: logger)
        }
        try await PostgresDeadLetters.recordCreation(foundVersion: found, on: connection, logger: logger)
        if found < version {
            logger.info("projection store schema migrated", metadata: ["from": "\(found)", "to": "\(version)"])
        }
    }

    private static let v3 = """
        CREATE TABLE apps (
            app_id uuid NOT NULL PRIMARY KEY,
            org_id uuid NOT NULL,
            name text COLLATE "C" NOT NULL,
            callback_url text COLLATE "C",
            callback_headers text COLLATE "C" NOT NULL,
            webhook_retries bigint NOT NULL,
            created_at bigint NOT NULL
        );

        CREATE TABLE api_tokens (
            token_id uuid NOT NULL PRIMARY KEY,
            app_id uuid NOT NULL,
            token_hash text COLLATE "C" NOT NULL,
            revoked boolean NOT NULL,
            created_at bigint NOT NULL
        );
        CREATE INDEX api_tokens_by_app ON api_tokens (app_id);
        CREATE INDEX api_tokens_by_hash ON api_tokens (token_hash);

        CREATE TABLE devices (
            app_id uuid NOT NULL,
            device_token text COLLATE "C" NOT NULL,
            user_id text COLLATE "C" NOT NULL,
            platform text COLLATE "C" NOT NULL,
            version bigint NOT NULL,
            updated_at bigint NOT NULL,
            PRIMARY KEY (app_id, device_token)
        );
        CREATE INDEX devices_by_user ON devices (app_id, user_id);

        CREATE TABLE registration_status (
            request_id uuid NOT NULL PRIMARY KEY,
            app_id uuid NOT NULL,
            status text COLLATE "C" NOT NULL,
            failure_reason text COLLATE "C",
            decided_at bigint NOT NULL
        );

        CREATE TABLE partition_offsets (
            topic text COLLATE "C" NOT NULL,
            "partition" integer NOT NULL,
            next_offset bigint NOT NULL,
            PRIMARY KEY (topic, "partition")
        );

        CREATE TABLE outbox (
            id text COLLATE "C" NOT NULL PRIMARY KEY,
            kind text COLLATE "C" NOT NULL,
            app_id uuid,
            url text COLLATE "C" NOT NULL,
            headers text COLLATE "C" NOT NULL,
            body bytea NOT NULL,
            max_attempts bigint NOT NULL,
            attempts bigint NOT NULL,
            next_attempt_at bigint NOT NULL,
            state text COLLATE "C" NOT NULL,
            last_status bigint,
            last_error text COLLATE "C",
            lease_until bigint,
            created_at bigint NOT NULL
        );
        CREATE INDEX outbox_due ON outbox (state, next_attempt_at);

        CREATE TABLE outbox_attempts (
            job_id text COLLATE "C" NOT NULL,
            attempt bigint NOT NULL,
            at bigint NOT NULL,
            http_status bigint,
            error text COLLATE "C",
            outcome text COLLATE "C" NOT NULL,
            PRIMARY KEY (job_id, attempt)
        );

        CREATE TABLE pending_notifications (
            app_id uuid NOT NULL,
            device_token text COLLATE "C" NOT NULL,
            notification_id text COLLATE "C" NOT NULL,
            delivery_id uuid NOT NULL,
            sent_at bigint NOT NULL,
            text text COLLATE "C" NOT NULL,
            business_id text COLLATE "C",
            PRIMARY KEY (app_id, device_token, notification_id)
        );

        CREATE TABLE acks (
            app_id uuid NOT NULL,
            device_token text COLLATE "C" NOT NULL,
            notification_id text COLLATE "C" NOT NULL,
            business_id text COLLATE "C",
            acked_at bigint NOT NULL,
            PRIMARY KEY (app_id, device_token, notification_id)
        );
        CREATE INDEX acks_by_notification ON acks (app_id, notification_id);

        CREATE TABLE deliveries (
            app_id uuid NOT NULL,
            delivery_id uuid NOT NULL,
            kind text COLLATE "C" NOT NULL,
            managed boolean NOT NULL,
            tracking boolean NOT NULL,
            sent bigint NOT NULL,
            created_at bigint NOT NULL,
            PRIMARY KEY (app_id, delivery_id)
        );
        CREATE INDEX deliveries_by_id ON deliveries (delivery_id);

        CREATE TABLE tracking_events (
            delivery_id uuid NOT NULL,
            app_id uuid NOT NULL,
            action integer NOT NULL,
            message_index bigint NOT NULL,
            repeats bigint NOT NULL,
            PRIMARY KEY (delivery_id, app_id, action, message_index)
        );
        """

    /// Dead letters (records the store refused for good, set aside so their partition moves
    /// on) and the store's creation time (one row, written by the first open).
    private static let v5 = """
        CREATE TABLE dead_letters (
            topic text COLLATE "C" NOT NULL,
            "partition" integer NOT NULL,
            "offset" bigint NOT NULL,
            type text COLLATE "C",
            reason text COLLATE "C" NOT NULL,
            request_id text COLLATE "C",
            value bytea NOT NULL,
            recorded_at bigint NOT NULL,
            PRIMARY KEY (topic, "partition", "offset")
        );

        CREATE TABLE store_info (
            singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
            created_at bigint NOT NULL
        )
        """

    /// Tracking reports parked before their delivery's send: when each (delivery, app) was
    /// parked, so that reports whose send never comes expire (`TrackingHandler`).
    private static let v6 = """
        CREATE TABLE parked_tracking (
            delivery_id uuid NOT NULL,
            app_id uuid NOT NULL,
            parked_at bigint NOT NULL,
            PRIMARY KEY (delivery_id, app_id)
        );
        CREATE INDEX parked_tracking_by_time ON parked_tracking (parked_at)
        """

    /// Device tokens are keyed by their SHA-256 (`PostgresRows.tokenKey`), not their text: a
    /// B-tree entry holds at most about 2,700 bytes, and a token may have 4,096. The token itself
    /// stays a column, read and dumped as before.
    private static let v7 = ["devices", "pending_notifications", "acks"].map { (table: String) -> String in
        let key = table == "devices" ? "app_id, token_key" : "app_id, token_key, notification_id"
        return """
            ALTER TABLE \(table) ADD COLUMN token_key bytea;
            UPDATE \(table) SET token_key = \(PostgresRows.tokenKey("device_token"));
            ALTER TABLE \(table) ALTER COLUMN token_key SET NOT NULL;
            ALTER TABLE \(table) DROP CONSTRAINT \(table)_pkey;
            ALTER TABLE \(table) ADD PRIMARY KEY (\(key))
            """
    }.joined(separator: ";\n")

    /// Each partition's event time beside its next offset (docs/ARCHITECTURE.md#state-is-a-function-of-the-log).
    private static let v8 = "ALTER TABLE partition_offsets ADD COLUMN event_time bigint NOT NULL DEFAULT 0"

    /// A park mark stays only while its delivery has no row: the send that settles a pair now
    /// removes its mark, and an older store kept marks of settled pairs until they expired.
    private static let v9 = """
        DELETE FROM parked_tracking p WHERE EXISTS (SELECT 1 FROM deliveries d WHERE d.delivery_id = p.delivery_id)
        """

    /// The changelog (docs/ARCHITECTURE.md#changelog-and-restore): the store's lineage and the
    /// number of its last commit, the committed entries not yet published, and the indexes a
    /// restore set aside until its end (kept, so a restore that stopped builds them when it is
    /// run again). A store that
    /// has consumed nothing yet starts a lineage; one that holds state from before keeps no
    /// changelog, since its history before this version is not in it.
    private static let v10 = """
        CREATE TABLE changelog_state (
            singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
            lineage text COLLATE "C" NOT NULL,
            seq bigint NOT NULL
        );
        INSERT INTO changelog_state (singleton, lineage, seq)
            SELECT true, md5(random()::text || clock_timestamp()::text), 0 WHERE NOT EXISTS (SELECT 1 FROM partition_offsets);
        CREATE TABLE changelog_outbox (
            seq bigint NOT NULL PRIMARY KEY,
            payload bytea NOT NULL
        );
        CREATE TABLE restore_indexes (
            name text COLLATE "C" NOT NULL PRIMARY KEY,
            definition text COLLATE "C" NOT NULL
        )
        """

    /// Apps' push credentials (`PushCredentials` as JSON, secrets sealed; NULL: none).
    private static let v11 = "ALTER TABLE apps ADD COLUMN push_credentials text COLLATE \"C\""

    /// What the sender reported of each push (docs/ARCHITECTURE.md#delivery): each device's last
    /// outcome of a delivery, by message index, and the counts per outcome beside the delivery.
    private static let v12 = """
        ALTER TABLE deliveries ADD COLUMN delivered bigint NOT NULL DEFAULT 0;
        ALTER TABLE deliveries ADD COLUMN failed bigint NOT NULL DEFAULT 0;
        ALTER TABLE deliveries ADD COLUMN unregistered bigint NOT NULL DEFAULT 0;
        CREATE TABLE delivery_outcomes (
            app_id uuid NOT NULL,
            delivery_id uuid NOT NULL,
            message_index bigint NOT NULL,
            device_token text COLLATE "C" NOT NULL,
            outcome text COLLATE "C" NOT NULL,
            reason text COLLATE "C",
            reported_at bigint NOT NULL,
            PRIMARY KEY (app_id, delivery_id, message_index)
        );
        CREATE INDEX delivery_outcomes_by_outcome ON delivery_outcomes (app_id, delivery_id, outcome, message_index)
        """

    /// Idempotency keys (docs/API.md#idempotency-keys): a send's key and body hash, and the later
    /// sends with that key, beside the delivery; the first request of a key on an admin create.
    private static let v15 = """
        ALTER TABLE deliveries ADD COLUMN idempotency_key text COLLATE "C";
        ALTER TABLE deliveries ADD COLUMN request_hash text COLLATE "C";
        ALTER TABLE deliveries ADD COLUMN duplicates bigint NOT NULL DEFAULT 0;
        ALTER TABLE deliveries ADD COLUMN conflicts bigint NOT NULL DEFAULT 0;
        CREATE TABLE idempotency_keys (
            scope text COLLATE "C" NOT NULL,
            idempotency_key text COLLATE "C" NOT NULL,
            resource_id uuid NOT NULL,
            request_hash text COLLATE "C" NOT NULL,
            first_at bigint NOT NULL,
            PRIMARY KEY (scope, idempotency_key)
        )
        """
    /// API tokens' scopes (`client`, `server` or `client,server`; NULL: a legacy token, every scope).
    private static let v13 = "ALTER TABLE api_tokens ADD COLUMN scopes text COLLATE \"C\""
    /// Named admin tokens (hash only) and the audit trail of the admin topic
    /// (docs/ARCHITECTURE.md#audit-trail).
    private static let v14 = """
        CREATE TABLE admin_tokens (
            admin_token_id uuid NOT NULL PRIMARY KEY,
            name text COLLATE "C" NOT NULL,
            token_hash text COLLATE "C" NOT NULL,
            revoked boolean NOT NULL,
            created_at bigint NOT NULL,
            revoked_at bigint
        );
        CREATE INDEX admin_tokens_by_hash ON admin_tokens (token_hash);
        CREATE TABLE audit_log (
            command_id uuid NOT NULL PRIMARY KEY,
            at bigint NOT NULL,
            type text COLLATE "C" NOT NULL,
            app_id uuid,
            actor_id uuid,
            actor_name text COLLATE "C",
            request_id text COLLATE "C",
            outcome text COLLATE "C" NOT NULL,
            reason text COLLATE "C",
            changes text COLLATE "C" NOT NULL
        );
        CREATE INDEX audit_log_by_time ON audit_log (at, command_id);
        CREATE INDEX audit_log_by_app ON audit_log (app_id, at, command_id)
        """
}
