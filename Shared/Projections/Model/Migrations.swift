/// The schema of the projection stores: one list of steps, each numbered once, with its SQLite
/// and its PostgreSQL form side by side.
///
/// A store's schema version is the number of the last step applied to it (SQLite:
/// `PRAGMA user_version`; PostgreSQL: the one row of `schema_version`). Opening a store applies
/// the steps above its version, in order, and refuses a store whose version is above the last
/// step here: it was written by newer code, whose tables this code could misread or damage.
///
/// A new step takes the next number and both forms, or nil for a dialect that needs no such
/// change, saying why. A step that has shipped is never edited: stores that applied it do not
/// run it again.
///
/// The numbers are those the PostgreSQL store has always recorded. The two stores were numbered
/// apart until version 15: the SQLite store has no step 7, and recorded steps 8 to 15 as 7 to
/// 14 (`Step.sqliteIdentifier` keeps the names its files know them by). No version 4 was ever
/// released. The PostgreSQL store started at version 3, with one step that created what steps
/// 1 to 3 create.
package enum ProjectionMigrations {
    /// One change of the schema.
    package struct Step: Sendable {
        /// The store's schema version once the step is applied.
        package let number: Int
        /// The statements for SQLite, separated by `;`; nil: SQLite needs no such step.
        package let sqlite: String?
        /// The statements for PostgreSQL, separated by `;` (none inside a statement but in a
        /// `$$`-quoted function body: `PostgresSchema.statements`); nil: PostgreSQL needs no
        /// such step.
        package let postgres: String?
        /// The name GRDB's migrator records the step under in a SQLite file (`grdb_migrations`):
        /// `v` and the number the SQLite store gave the step when it shipped.
        package let sqliteIdentifier: String

        package init(_ number: Int, sqliteIdentifier: String? = nil, sqlite: String?, postgres: String?) {
            self.number = number
            self.sqlite = sqlite
            self.postgres = postgres
            self.sqliteIdentifier = sqliteIdentifier ?? "v\(number)"
        }
    }

    /// Every step, in order.
    package static let steps: [Step] = [v1, v2, v3, v5, v6, v7, v8, v9, v10, v11, v12, v13, v14, v15, v16, v17, v18, v19, v20, v21, v22, v23, v24, v25, v26, v27, v28, v29, v30, v31, v32]

    /// The newest schema version, which this code creates and understands: the last step's.
    package static let version = steps[steps.count - 1].number

    /// The registrations (apps, their API tokens, devices and registration statuses), the
    /// partitions' offsets and the webhook outbox.
    ///
    /// SQLite's tables are STRICT, so that SQLite rejects a value of the wrong type instead of
    /// storing it. PostgreSQL's types are listed on `PostgresSchema`.
    package static let v1 = Step(1, sqlite: """
        CREATE TABLE apps (
            app_id TEXT NOT NULL PRIMARY KEY,
            org_id TEXT NOT NULL,
            name TEXT NOT NULL,
            callback_url TEXT,
            callback_headers TEXT NOT NULL,
            webhook_retries INTEGER NOT NULL,
            created_at INTEGER NOT NULL
        ) STRICT;

        CREATE TABLE api_tokens (
            token_id TEXT NOT NULL PRIMARY KEY,
            app_id TEXT NOT NULL,
            token_hash TEXT NOT NULL,
            revoked INTEGER NOT NULL,
            created_at INTEGER NOT NULL
        ) STRICT;
        CREATE INDEX api_tokens_by_app ON api_tokens (app_id);

        CREATE TABLE devices (
            app_id TEXT NOT NULL,
            device_token TEXT NOT NULL,
            user_id TEXT NOT NULL,
            platform TEXT NOT NULL,
            version INTEGER NOT NULL,
            updated_at INTEGER NOT NULL,
            PRIMARY KEY (app_id, device_token)
        ) STRICT;
        CREATE INDEX devices_by_user ON devices (app_id, user_id);

        CREATE TABLE registration_status (
            request_id TEXT NOT NULL PRIMARY KEY,
            app_id TEXT NOT NULL,
            status TEXT NOT NULL,
            failure_reason TEXT,
            decided_at INTEGER NOT NULL
        ) STRICT;

        CREATE TABLE partition_offsets (
            topic TEXT NOT NULL,
            "partition" INTEGER NOT NULL,
            next_offset INTEGER NOT NULL,
            PRIMARY KEY (topic, "partition")
        ) STRICT, WITHOUT ROWID;

        CREATE TABLE outbox (
            id TEXT NOT NULL PRIMARY KEY,
            kind TEXT NOT NULL,
            app_id TEXT,
            url TEXT NOT NULL,
            headers TEXT NOT NULL,
            body BLOB NOT NULL,
            max_attempts INTEGER NOT NULL,
            attempts INTEGER NOT NULL,
            next_attempt_at INTEGER NOT NULL,
            state TEXT NOT NULL,
            last_status INTEGER,
            last_error TEXT,
            lease_until INTEGER,
            created_at INTEGER NOT NULL
        ) STRICT;
        CREATE INDEX outbox_due ON outbox (state, next_attempt_at);

        CREATE TABLE outbox_attempts (
            job_id TEXT NOT NULL,
            attempt INTEGER NOT NULL,
            at INTEGER NOT NULL,
            http_status INTEGER,
            error TEXT,
            outcome TEXT NOT NULL,
            PRIMARY KEY (job_id, attempt)
        ) STRICT, WITHOUT ROWID;
        """, postgres: """
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
        )
        """)

    /// Managed notifications: pending rows, acks and deliveries; and API tokens found by hash.
    ///
    /// Pending rows and acks are keyed by device first (and in SQLite kept WITHOUT ROWID), so a
    /// device's rows lie together in the primary key: counting them (`GROUP BY device_token`),
    /// listing them and clearing them are each one range of the key. A device's list is ordered
    /// by `sent_at` when read; it is short (its badge), so no second index is kept for that
    /// order. Acks are also looked up per notification; that index carries the device token
    /// (the primary key rides along in a WITHOUT ROWID index), so it answers on its own.
    static let v2 = Step(2, sqlite: """
        CREATE TABLE pending_notifications (
            app_id TEXT NOT NULL,
            device_token TEXT NOT NULL,
            notification_id TEXT NOT NULL,
            delivery_id TEXT NOT NULL,
            sent_at INTEGER NOT NULL,
            text TEXT NOT NULL,
            business_id TEXT,
            PRIMARY KEY (app_id, device_token, notification_id)
        ) STRICT, WITHOUT ROWID;

        CREATE TABLE acks (
            app_id TEXT NOT NULL,
            device_token TEXT NOT NULL,
            notification_id TEXT NOT NULL,
            business_id TEXT,
            acked_at INTEGER NOT NULL,
            PRIMARY KEY (app_id, device_token, notification_id)
        ) STRICT, WITHOUT ROWID;
        CREATE INDEX acks_by_notification ON acks (app_id, notification_id);

        CREATE TABLE deliveries (
            app_id TEXT NOT NULL,
            delivery_id TEXT NOT NULL,
            kind TEXT NOT NULL,
            managed INTEGER NOT NULL,
            tracking INTEGER NOT NULL,
            sent INTEGER NOT NULL,
            created_at INTEGER NOT NULL,
            PRIMARY KEY (app_id, delivery_id)
        ) STRICT, WITHOUT ROWID;

        CREATE INDEX api_tokens_by_hash ON api_tokens (token_hash);
        """, postgres: """
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

        CREATE INDEX api_tokens_by_hash ON api_tokens (token_hash)
        """)

    /// Engagement tracking: one row per (delivery, app, action, device), the device named by its
    /// message index, with the number of repeated reports.
    ///
    /// Keyed by delivery first, so that a delivery's statistics, and the check of rows reported
    /// before the send, are each one range of the key. `app_id` is part of the key because a
    /// report names an app and a delivery that need not match: until the send is applied, the
    /// pair is not known to be valid. Deliveries get an index by id alone for the same reason.
    ///
    /// The first PostgreSQL stores were created at this version, by one step that ran what steps
    /// 1 to 3 run.
    package static let v3 = Step(3, sqlite: """
        CREATE TABLE tracking_events (
            delivery_id TEXT NOT NULL,
            app_id TEXT NOT NULL,
            action INTEGER NOT NULL,
            message_index INTEGER NOT NULL,
            repeats INTEGER NOT NULL,
            PRIMARY KEY (delivery_id, app_id, action, message_index)
        ) STRICT, WITHOUT ROWID;

        CREATE INDEX deliveries_by_id ON deliveries (delivery_id);
        """, postgres: """
        CREATE TABLE tracking_events (
            delivery_id uuid NOT NULL,
            app_id uuid NOT NULL,
            action integer NOT NULL,
            message_index bigint NOT NULL,
            repeats bigint NOT NULL,
            PRIMARY KEY (delivery_id, app_id, action, message_index)
        );

        CREATE INDEX deliveries_by_id ON deliveries (delivery_id)
        """)

    /// Dead letters (records the store refused for good, set aside so their partition moves
    /// on) and the store's creation time (one row, written by the first open).
    static let v5 = Step(5, sqlite: """
        CREATE TABLE dead_letters (
            topic TEXT NOT NULL,
            "partition" INTEGER NOT NULL,
            "offset" INTEGER NOT NULL,
            type TEXT,
            reason TEXT NOT NULL,
            request_id TEXT,
            value BLOB NOT NULL,
            recorded_at INTEGER NOT NULL,
            PRIMARY KEY (topic, "partition", "offset")
        ) STRICT, WITHOUT ROWID;

        CREATE TABLE store_info (
            singleton INTEGER NOT NULL PRIMARY KEY CHECK (singleton = 1),
            created_at INTEGER NOT NULL
        ) STRICT;
        """, postgres: """
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
        """)

    /// Tracking reports parked before their delivery's send: when each (delivery, app) was
    /// parked, so that reports whose send never comes expire (`TrackingHandler`).
    package static let v6 = Step(6, sqlite: """
        CREATE TABLE parked_tracking (
            delivery_id TEXT NOT NULL,
            app_id TEXT NOT NULL,
            parked_at INTEGER NOT NULL,
            PRIMARY KEY (delivery_id, app_id)
        ) STRICT, WITHOUT ROWID;
        CREATE INDEX parked_tracking_by_time ON parked_tracking (parked_at);
        """, postgres: """
        CREATE TABLE parked_tracking (
            delivery_id uuid NOT NULL,
            app_id uuid NOT NULL,
            parked_at bigint NOT NULL,
            PRIMARY KEY (delivery_id, app_id)
        );
        CREATE INDEX parked_tracking_by_time ON parked_tracking (parked_at)
        """)

    /// PostgreSQL keys device tokens by their SHA-256 (`token_key`, computed as
    /// `PostgresRows.tokenKey` does), not by their text: a B-tree entry there holds at most about
    /// 2,700 bytes, and a token may have 4,096. The token itself stays a column, read and dumped
    /// as before.
    ///
    /// SQLite needs no such step: an index entry of any length fits (it overflows to further
    /// pages), so its tables stay keyed by the token's text.
    static let v7 = Step(7, sqlite: nil, postgres: ["devices", "pending_notifications", "acks"].map { (table: String) -> String in
        let key = table == "devices" ? "app_id, token_key" : "app_id, token_key, notification_id"
        return """
            ALTER TABLE \(table) ADD COLUMN token_key bytea;
            UPDATE \(table) SET token_key = sha256(convert_to(device_token::text, 'UTF8'));
            ALTER TABLE \(table) ALTER COLUMN token_key SET NOT NULL;
            ALTER TABLE \(table) DROP CONSTRAINT \(table)_pkey;
            ALTER TABLE \(table) ADD PRIMARY KEY (\(key))
            """
    }.joined(separator: ";\n"))

    /// Each partition's event time beside its next offset (docs/ARCHITECTURE.md#state-is-a-function-of-the-log).
    package static let v8 = Step(8, sqliteIdentifier: "v7", sqlite: """
        ALTER TABLE partition_offsets ADD COLUMN event_time INTEGER NOT NULL DEFAULT 0
        """, postgres: """
        ALTER TABLE partition_offsets ADD COLUMN event_time bigint NOT NULL DEFAULT 0
        """)

    /// A park mark stays only while its delivery has no row: the send that settles a pair now
    /// removes its mark, and an older store kept marks of settled pairs until they expired.
    static let v9 = Step(9, sqliteIdentifier: "v8", sqlite: """
        DELETE FROM parked_tracking WHERE EXISTS (SELECT 1 FROM deliveries d WHERE d.delivery_id = parked_tracking.delivery_id)
        """, postgres: """
        DELETE FROM parked_tracking p WHERE EXISTS (SELECT 1 FROM deliveries d WHERE d.delivery_id = p.delivery_id)
        """)

    /// The changelog (docs/ARCHITECTURE.md#changelog-and-restore): the store's lineage and the
    /// number of its last commit, the committed entries not yet published, and the indexes a
    /// restore set aside until its end (kept, so a restore that stopped builds them when it is
    /// run again). A store that has consumed nothing yet starts a lineage; one that holds state
    /// from before keeps no changelog, since its history before this version is not in it.
    package static let v10 = Step(10, sqliteIdentifier: "v9", sqlite: """
        CREATE TABLE changelog_state (
            singleton INTEGER NOT NULL PRIMARY KEY CHECK (singleton = 1),
            lineage TEXT NOT NULL,
            seq INTEGER NOT NULL
        ) STRICT;
        INSERT INTO changelog_state (singleton, lineage, seq)
            SELECT 1, lower(hex(randomblob(16))), 0 WHERE NOT EXISTS (SELECT 1 FROM partition_offsets);

        CREATE TABLE changelog_outbox (
            seq INTEGER NOT NULL PRIMARY KEY,
            payload BLOB NOT NULL
        ) STRICT;

        CREATE TABLE restore_indexes (
            name TEXT NOT NULL PRIMARY KEY,
            definition TEXT NOT NULL
        ) STRICT;
        """, postgres: """
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
        """)

    /// Apps' push credentials (`PushCredentials` as JSON, secrets sealed; NULL: none).
    static let v11 = Step(11, sqliteIdentifier: "v10", sqlite: """
        ALTER TABLE apps ADD COLUMN push_credentials TEXT
        """, postgres: """
        ALTER TABLE apps ADD COLUMN push_credentials text COLLATE "C"
        """)

    /// What the sender reported of each push (docs/ARCHITECTURE.md#delivery): each device's last
    /// outcome of a delivery, by message index, and the counts per outcome beside the delivery.
    package static let v12 = Step(12, sqliteIdentifier: "v11", sqlite: """
        ALTER TABLE deliveries ADD COLUMN delivered INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE deliveries ADD COLUMN failed INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE deliveries ADD COLUMN unregistered INTEGER NOT NULL DEFAULT 0;
        CREATE TABLE delivery_outcomes (
            app_id TEXT NOT NULL,
            delivery_id TEXT NOT NULL,
            message_index INTEGER NOT NULL,
            device_token TEXT NOT NULL,
            outcome TEXT NOT NULL,
            reason TEXT,
            reported_at INTEGER NOT NULL,
            PRIMARY KEY (app_id, delivery_id, message_index)
        ) STRICT, WITHOUT ROWID;
        CREATE INDEX delivery_outcomes_by_outcome ON delivery_outcomes (app_id, delivery_id, outcome, message_index);
        """, postgres: """
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
        """)

    /// API tokens' scopes (`client`, `server` or `client,server`; NULL: a legacy token, every scope).
    static let v13 = Step(13, sqliteIdentifier: "v12", sqlite: """
        ALTER TABLE api_tokens ADD COLUMN scopes TEXT
        """, postgres: """
        ALTER TABLE api_tokens ADD COLUMN scopes text COLLATE "C"
        """)

    /// Named admin tokens (hash only) and the audit trail of the admin topic
    /// (docs/ARCHITECTURE.md#audit-trail): one row per admin command, keyed by its envelope id.
    package static let v14 = Step(14, sqliteIdentifier: "v13", sqlite: """
        CREATE TABLE admin_tokens (
            admin_token_id TEXT NOT NULL PRIMARY KEY,
            name TEXT NOT NULL,
            token_hash TEXT NOT NULL,
            revoked INTEGER NOT NULL,
            created_at INTEGER NOT NULL,
            revoked_at INTEGER
        ) STRICT;
        CREATE INDEX admin_tokens_by_hash ON admin_tokens (token_hash);

        CREATE TABLE audit_log (
            command_id TEXT NOT NULL PRIMARY KEY,
            at INTEGER NOT NULL,
            type TEXT NOT NULL,
            app_id TEXT,
            actor_id TEXT,
            actor_name TEXT,
            request_id TEXT,
            outcome TEXT NOT NULL,
            reason TEXT,
            changes TEXT NOT NULL
        ) STRICT;
        CREATE INDEX audit_log_by_time ON audit_log (at, command_id);
        CREATE INDEX audit_log_by_app ON audit_log (app_id, at, command_id);
        """, postgres: """
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
        """)

    /// Idempotency keys (docs/API.md#idempotency-keys): a send's key and body hash, and the later
    /// sends with that key, beside the delivery; the first request of a key on an admin create.
    static let v15 = Step(15, sqliteIdentifier: "v14", sqlite: """
        ALTER TABLE deliveries ADD COLUMN idempotency_key TEXT;
        ALTER TABLE deliveries ADD COLUMN request_hash TEXT;
        ALTER TABLE deliveries ADD COLUMN duplicates INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE deliveries ADD COLUMN conflicts INTEGER NOT NULL DEFAULT 0;
        CREATE TABLE idempotency_keys (
            scope TEXT NOT NULL,
            idempotency_key TEXT NOT NULL,
            resource_id TEXT NOT NULL,
            request_hash TEXT NOT NULL,
            first_at INTEGER NOT NULL,
            PRIMARY KEY (scope, idempotency_key)
        ) STRICT, WITHOUT ROWID;
        """, postgres: """
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
        """)

    /// Each device's time zone, as its last registration gave it (an IANA name; NULL: not given),
    /// for sends at the device's local time.
    package static let v16 = Step(16, sqlite: "ALTER TABLE devices ADD COLUMN time_zone TEXT",
                                  postgres: "ALTER TABLE devices ADD COLUMN time_zone text COLLATE \"C\"")

    /// Park marks expire by their app's clock, and a batch reads the old marks of its own apps
    /// only (docs/ARCHITECTURE.md#scale-out): the time index is by app.
    package static let v17 = Step(17, sqlite: """
        DROP INDEX IF EXISTS parked_tracking_by_time;
        CREATE INDEX parked_tracking_by_app_and_time ON parked_tracking (app_id, parked_at)
        """, postgres: """
        DROP INDEX IF EXISTS parked_tracking_by_time;
        CREATE INDEX parked_tracking_by_app_and_time ON parked_tracking (app_id, parked_at)
        """)

    /// An app in parts (docs/ARCHITECTURE.md#one-app-in-parts): the rows an app keeps per part
    /// (its settings and tokens, its deliveries, its tracking rows and park marks) have the part
    /// in their key; the rows there are part 0's. SQLite changes a primary key only by copying
    /// the table.
    package static let v18 = Step(18, sqliteIdentifier: "v18", sqlite: """
        CREATE TABLE apps_v18 (
            app_id TEXT NOT NULL,
            org_id TEXT NOT NULL,
            name TEXT NOT NULL,
            callback_url TEXT,
            callback_headers TEXT NOT NULL,
            webhook_retries INTEGER NOT NULL,
            created_at INTEGER NOT NULL,
            push_credentials TEXT,
            part INTEGER NOT NULL,
            PRIMARY KEY (app_id, part)
        ) STRICT;
        INSERT INTO apps_v18 SELECT app_id, org_id, name, callback_url, callback_headers, webhook_retries, created_at,
            push_credentials, 0 FROM apps;
        DROP TABLE apps;
        ALTER TABLE apps_v18 RENAME TO apps;

        CREATE TABLE api_tokens_v18 (
            token_id TEXT NOT NULL,
            app_id TEXT NOT NULL,
            token_hash TEXT NOT NULL,
            revoked INTEGER NOT NULL,
            created_at INTEGER NOT NULL,
            scopes TEXT,
            part INTEGER NOT NULL,
            PRIMARY KEY (token_id, part)
        ) STRICT;
        INSERT INTO api_tokens_v18 SELECT token_id, app_id, token_hash, revoked, created_at, scopes, 0 FROM api_tokens;
        DROP TABLE api_tokens;
        ALTER TABLE api_tokens_v18 RENAME TO api_tokens;
        CREATE INDEX api_tokens_by_app ON api_tokens (app_id);
        CREATE INDEX api_tokens_by_hash ON api_tokens (token_hash);

        CREATE TABLE deliveries_v18 (
            app_id TEXT NOT NULL,
            delivery_id TEXT NOT NULL,
            kind TEXT NOT NULL,
            managed INTEGER NOT NULL,
            tracking INTEGER NOT NULL,
            sent INTEGER NOT NULL,
            created_at INTEGER NOT NULL,
            delivered INTEGER NOT NULL,
            failed INTEGER NOT NULL,
            unregistered INTEGER NOT NULL,
            idempotency_key TEXT,
            request_hash TEXT,
            duplicates INTEGER NOT NULL,
            conflicts INTEGER NOT NULL,
            part INTEGER NOT NULL,
            PRIMARY KEY (app_id, delivery_id, part)
        ) STRICT, WITHOUT ROWID;
        INSERT INTO deliveries_v18 SELECT app_id, delivery_id, kind, managed, tracking, sent, created_at, delivered, failed,
            unregistered, idempotency_key, request_hash, duplicates, conflicts, 0 FROM deliveries;
        DROP TABLE deliveries;
        ALTER TABLE deliveries_v18 RENAME TO deliveries;
        CREATE INDEX deliveries_by_id ON deliveries (delivery_id);

        CREATE TABLE tracking_events_v18 (
            delivery_id TEXT NOT NULL,
            app_id TEXT NOT NULL,
            action INTEGER NOT NULL,
            message_index INTEGER NOT NULL,
            repeats INTEGER NOT NULL,
            part INTEGER NOT NULL,
            PRIMARY KEY (delivery_id, app_id, part, action, message_index)
        ) STRICT, WITHOUT ROWID;
        INSERT INTO tracking_events_v18 SELECT delivery_id, app_id, action, message_index, repeats, 0 FROM tracking_events;
        DROP TABLE tracking_events;
        ALTER TABLE tracking_events_v18 RENAME TO tracking_events;

        CREATE TABLE parked_tracking_v18 (
            delivery_id TEXT NOT NULL,
            app_id TEXT NOT NULL,
            parked_at INTEGER NOT NULL,
            part INTEGER NOT NULL,
            PRIMARY KEY (delivery_id, app_id, part)
        ) STRICT, WITHOUT ROWID;
        INSERT INTO parked_tracking_v18 SELECT delivery_id, app_id, parked_at, 0 FROM parked_tracking;
        DROP TABLE parked_tracking;
        ALTER TABLE parked_tracking_v18 RENAME TO parked_tracking;
        CREATE INDEX parked_tracking_by_app_and_time ON parked_tracking (app_id, parked_at)
        """, postgres: [
            ("apps", "app_id, part"), ("api_tokens", "token_id, part"), ("deliveries", "app_id, delivery_id, part"),
            ("tracking_events", "delivery_id, app_id, part, action, message_index"), ("parked_tracking", "delivery_id, app_id, part"),
        ].map { (table: String, key: String) -> String in
            """
            ALTER TABLE \(table) ADD COLUMN part integer NOT NULL DEFAULT 0;
            ALTER TABLE \(table) ALTER COLUMN part DROP DEFAULT;
            ALTER TABLE \(table) DROP CONSTRAINT \(table)_pkey;
            ALTER TABLE \(table) ADD PRIMARY KEY (\(key))
            """
        }.joined(separator: ";\n"))

    /// Verified user identity (docs/API.md#verified-user-identity): whether an app requires user
    /// assertions (existing apps do not), and its identity secret, sealed (NULL: none).
    package static let v19 = Step(19, sqlite: """
        ALTER TABLE apps ADD COLUMN identity_required INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE apps ADD COLUMN identity_secret TEXT
        """, postgres: """
        ALTER TABLE apps ADD COLUMN identity_required boolean NOT NULL DEFAULT false;
        ALTER TABLE apps ADD COLUMN identity_secret text COLLATE "C"
        """)

    /// The hosts an app's status webhooks may reach (docs/API.md#webhook-hosts), comma-separated;
    /// NULL: no list.
    package static let v20 = Step(20, sqlite: "ALTER TABLE apps ADD COLUMN webhook_hosts TEXT",
                                  postgres: "ALTER TABLE apps ADD COLUMN webhook_hosts text COLLATE \"C\"")

    /// Bounded growth (docs/ARCHITECTURE.md#bounded-growth). A registration status names the
    /// part of its app that decided it (each part prunes its own by its own clock; the statuses
    /// stored before are part 0's), and statuses and acks are found by app and age. Each app part
    /// counts its users (a user with a device in it), for the cap on users per app: counted here
    /// from the stored devices, every part of an app given the app's count (apps in parts came
    /// with step 18; a rebuild counts each part's own). A device keeps the window of its badge
    /// updates, for their rate limit.
    package static let v21 = Step(21, sqlite: """
        ALTER TABLE apps ADD COLUMN users INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE devices ADD COLUMN badges_since INTEGER;
        ALTER TABLE devices ADD COLUMN badges INTEGER NOT NULL DEFAULT 0;
        UPDATE apps SET users = (SELECT COUNT(DISTINCT user_id) FROM devices WHERE devices.app_id = apps.app_id);
        ALTER TABLE registration_status ADD COLUMN part INTEGER NOT NULL DEFAULT 0;
        CREATE INDEX registration_status_by_app_and_time ON registration_status (app_id, decided_at);
        CREATE INDEX acks_by_app_and_time ON acks (app_id, acked_at)
        """, postgres: """
        ALTER TABLE apps ADD COLUMN users bigint NOT NULL DEFAULT 0;
        ALTER TABLE apps ALTER COLUMN users DROP DEFAULT;
        ALTER TABLE devices ADD COLUMN badges_since bigint;
        ALTER TABLE devices ADD COLUMN badges bigint NOT NULL DEFAULT 0;
        ALTER TABLE devices ALTER COLUMN badges DROP DEFAULT;
        UPDATE apps SET users = (SELECT COUNT(DISTINCT user_id) FROM devices WHERE devices.app_id = apps.app_id);
        ALTER TABLE registration_status ADD COLUMN part integer NOT NULL DEFAULT 0;
        ALTER TABLE registration_status ALTER COLUMN part DROP DEFAULT;
        CREATE INDEX registration_status_by_app_and_time ON registration_status (app_id, decided_at);
        CREATE INDEX acks_by_app_and_time ON acks (app_id, acked_at)
        """)

    /// The claimable outbox jobs by app, in the order a claim takes them (docs/ARCHITECTURE.md#status-webhooks-and-app-callbacks):
    /// a claim finds each app with jobs, and that app's oldest due jobs, with one look each, so an
    /// app's backlog costs the other apps nothing.
    package static let v22 = Step(22, sqlite: claimableIndex, postgres: claimableIndex)
    static let claimableIndex = """
        CREATE INDEX outbox_claimable ON outbox (app_id, next_attempt_at, created_at, id)
            WHERE state = 'pending' AND kind <> '\(CallbackShare.jobKind)'
        """

    /// A device's properties besides its time zone (docs/API.md#device-properties): its locale
    /// and app version in canonical form, and its tags and topics, each a set of names kept
    /// sorted and joined by one space (names have no spaces); NULL: none given, or an empty set.
    package static let v23 = Step(23, sqlite: """
        ALTER TABLE devices ADD COLUMN locale TEXT;
        ALTER TABLE devices ADD COLUMN app_version TEXT;
        ALTER TABLE devices ADD COLUMN tags TEXT;
        ALTER TABLE devices ADD COLUMN topics TEXT
        """, postgres: """
        ALTER TABLE devices ADD COLUMN locale text COLLATE "C";
        ALTER TABLE devices ADD COLUMN app_version text COLLATE "C";
        ALTER TABLE devices ADD COLUMN tags text COLLATE "C";
        ALTER TABLE devices ADD COLUMN topics text COLLATE "C"
        """)

    /// A localized send's devices per locale it was sent in (docs/API.md#localized-content):
    /// `locale=count` pairs in locale order, joined by commas, `default` for the send's own text;
    /// NULL for a send without localized text.
    package static let v24 = Step(24, sqlite: "ALTER TABLE deliveries ADD COLUMN sent_by_locale TEXT",
                                  postgres: "ALTER TABLE deliveries ADD COLUMN sent_by_locale text COLLATE \"C\"")

    /// An app's devices in their tokens' byte order, the order an audience send reads them in
    /// pages (`StateReads.devicePage`). SQLite's key is that order already; PostgreSQL keys tokens
    /// by their SHA-256, so it gets an index on each token's first 256 characters
    /// (`PostgresRows.tokenOrder`: a B-tree entry cannot hold a 4,096-byte token).
    package static let v25 = Step(25, sqlite: nil, postgres: """
        CREATE INDEX devices_in_token_order ON devices (app_id, left(device_token, 256))
        """)

    /// A localized send's devices per locale by their last reported outcome
    /// (docs/API.md#delivery-outcomes): `locale=delivered/failed/unregistered` in locale order,
    /// joined by commas; NULL until one is reported, and for a send without localized text.
    package static let v26 = Step(26, sqlite: "ALTER TABLE deliveries ADD COLUMN outcomes_by_locale TEXT",
                                  postgres: "ALTER TABLE deliveries ADD COLUMN outcomes_by_locale text COLLATE \"C\"")

    /// The devices of each tag and topic of an app, in their tokens' byte order
    /// (`StateReads.devicePage`): an audience that requires a name reads that name's devices
    /// instead of every device of the app. A row per device and name, kept by triggers on
    /// `devices` (inserts, deletes and changes of `tags` or `topics`), so that every write of a
    /// device, a restore's too, keeps it; `kind` is `tag` or `topic`.
    ///
    /// SQLite splits the space-joined names as a JSON array (names have no quote, backslash or
    /// space). A change inserts only the names it adds: a trigger's own conflict clause gives way
    /// to that of the statement that fired it, an upsert. PostgreSQL keys a row by the token's
    /// first 256 characters and its `token_key` (a B-tree entry cannot hold a whole token), and
    /// keeps the rest of a longer token beside them (`token_rest`, empty for most): the two in
    /// order are the tokens' byte order.
    package static let v27 = Step(27, sqlite: """
        CREATE TABLE device_names (
            app_id TEXT NOT NULL,
            kind TEXT NOT NULL,
            name TEXT NOT NULL,
            device_token TEXT NOT NULL,
            PRIMARY KEY (app_id, kind, name, device_token)
        ) STRICT, WITHOUT ROWID;
        INSERT INTO device_names
            SELECT d.app_id, 'tag', j.value, d.device_token FROM devices d, json_each('["' || replace(d.tags, ' ', '","') || '"]') j
            WHERE d.tags IS NOT NULL
            UNION ALL
            SELECT d.app_id, 'topic', j.value, d.device_token FROM devices d, json_each('["' || replace(d.topics, ' ', '","') || '"]') j
            WHERE d.topics IS NOT NULL;
        CREATE TRIGGER device_names_inserted AFTER INSERT ON devices WHEN NEW.tags IS NOT NULL OR NEW.topics IS NOT NULL BEGIN
            INSERT INTO device_names
                SELECT NEW.app_id, 'tag', value, NEW.device_token FROM json_each('["' || replace(NEW.tags, ' ', '","') || '"]')
                WHERE NEW.tags IS NOT NULL
                UNION ALL
                SELECT NEW.app_id, 'topic', value, NEW.device_token FROM json_each('["' || replace(NEW.topics, ' ', '","') || '"]')
                WHERE NEW.topics IS NOT NULL;
        END;
        CREATE TRIGGER device_names_updated AFTER UPDATE OF tags, topics ON devices
        WHEN OLD.tags IS NOT NEW.tags OR OLD.topics IS NOT NEW.topics BEGIN
            DELETE FROM device_names WHERE app_id = OLD.app_id AND kind = 'tag' AND device_token = OLD.device_token AND name IN (
                SELECT value FROM json_each('["' || replace(OLD.tags, ' ', '","') || '"]') WHERE OLD.tags IS NOT NULL
                EXCEPT SELECT value FROM json_each('["' || replace(NEW.tags, ' ', '","') || '"]') WHERE NEW.tags IS NOT NULL);
            DELETE FROM device_names WHERE app_id = OLD.app_id AND kind = 'topic' AND device_token = OLD.device_token AND name IN (
                SELECT value FROM json_each('["' || replace(OLD.topics, ' ', '","') || '"]') WHERE OLD.topics IS NOT NULL
                EXCEPT SELECT value FROM json_each('["' || replace(NEW.topics, ' ', '","') || '"]') WHERE NEW.topics IS NOT NULL);
            INSERT INTO device_names
                SELECT NEW.app_id, 'tag', value, NEW.device_token FROM json_each('["' || replace(NEW.tags, ' ', '","') || '"]')
                WHERE NEW.tags IS NOT NULL
                EXCEPT SELECT NEW.app_id, 'tag', value, NEW.device_token FROM json_each('["' || replace(OLD.tags, ' ', '","') || '"]')
                WHERE OLD.tags IS NOT NULL;
            INSERT INTO device_names
                SELECT NEW.app_id, 'topic', value, NEW.device_token FROM json_each('["' || replace(NEW.topics, ' ', '","') || '"]')
                WHERE NEW.topics IS NOT NULL
                EXCEPT SELECT NEW.app_id, 'topic', value, NEW.device_token FROM json_each('["' || replace(OLD.topics, ' ', '","') || '"]')
                WHERE OLD.topics IS NOT NULL;
        END;
        CREATE TRIGGER device_names_deleted AFTER DELETE ON devices WHEN OLD.tags IS NOT NULL OR OLD.topics IS NOT NULL BEGIN
            DELETE FROM device_names WHERE app_id = OLD.app_id AND kind = 'tag' AND device_token = OLD.device_token AND name IN (
                SELECT value FROM json_each('["' || replace(OLD.tags, ' ', '","') || '"]') WHERE OLD.tags IS NOT NULL);
            DELETE FROM device_names WHERE app_id = OLD.app_id AND kind = 'topic' AND device_token = OLD.device_token AND name IN (
                SELECT value FROM json_each('["' || replace(OLD.topics, ' ', '","') || '"]') WHERE OLD.topics IS NOT NULL);
        END
        """, postgres: """
        CREATE TABLE device_names (
            app_id uuid NOT NULL,
            kind text COLLATE "C" NOT NULL,
            name text COLLATE "C" NOT NULL,
            token_prefix text COLLATE "C" NOT NULL,
            token_rest text COLLATE "C" NOT NULL,
            token_key bytea NOT NULL,
            PRIMARY KEY (app_id, kind, name, token_prefix, token_key)
        );
        INSERT INTO device_names
            SELECT app_id, 'tag', n, left(device_token, 256), substr(device_token, 257), token_key FROM devices, unnest(string_to_array(tags, ' ')) AS n
            UNION ALL
            SELECT app_id, 'topic', n, left(device_token, 256), substr(device_token, 257), token_key FROM devices, unnest(string_to_array(topics, ' ')) AS n;
        CREATE FUNCTION device_names_follow() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP = 'INSERT' THEN
                INSERT INTO device_names
                    SELECT NEW.app_id, 'tag', n, left(NEW.device_token, 256), substr(NEW.device_token, 257), NEW.token_key FROM unnest(string_to_array(NEW.tags, ' ')) AS n
                    UNION ALL
                    SELECT NEW.app_id, 'topic', n, left(NEW.device_token, 256), substr(NEW.device_token, 257), NEW.token_key FROM unnest(string_to_array(NEW.topics, ' ')) AS n
                    ON CONFLICT DO NOTHING;
            ELSIF TG_OP = 'DELETE' THEN
                DELETE FROM device_names WHERE app_id = OLD.app_id AND token_prefix = left(OLD.device_token, 256) AND token_key = OLD.token_key
                    AND (kind, name) IN (SELECT 'tag', unnest(string_to_array(OLD.tags, ' '))
                                         UNION ALL SELECT 'topic', unnest(string_to_array(OLD.topics, ' ')));
            ELSE
                DELETE FROM device_names WHERE app_id = OLD.app_id AND token_prefix = left(OLD.device_token, 256) AND token_key = OLD.token_key
                    AND (kind, name) IN (SELECT 'tag', unnest(string_to_array(OLD.tags, ' '))
                                         UNION ALL SELECT 'topic', unnest(string_to_array(OLD.topics, ' '))
                                         EXCEPT SELECT 'tag', unnest(string_to_array(NEW.tags, ' '))
                                         EXCEPT SELECT 'topic', unnest(string_to_array(NEW.topics, ' ')));
                INSERT INTO device_names
                    SELECT NEW.app_id, 'tag', n, left(NEW.device_token, 256), substr(NEW.device_token, 257), NEW.token_key FROM unnest(string_to_array(NEW.tags, ' ')) AS n
                    UNION ALL
                    SELECT NEW.app_id, 'topic', n, left(NEW.device_token, 256), substr(NEW.device_token, 257), NEW.token_key FROM unnest(string_to_array(NEW.topics, ' ')) AS n
                    ON CONFLICT DO NOTHING;
            END IF;
            RETURN NULL;
        END
        $$;
        CREATE TRIGGER device_names_inserted AFTER INSERT ON devices FOR EACH ROW
            WHEN (NEW.tags IS NOT NULL OR NEW.topics IS NOT NULL) EXECUTE FUNCTION device_names_follow();
        CREATE TRIGGER device_names_updated AFTER UPDATE OF tags, topics ON devices FOR EACH ROW
            WHEN (OLD.tags IS DISTINCT FROM NEW.tags OR OLD.topics IS DISTINCT FROM NEW.topics) EXECUTE FUNCTION device_names_follow();
        CREATE TRIGGER device_names_deleted AFTER DELETE ON devices FOR EACH ROW
            WHEN (OLD.tags IS NOT NULL OR OLD.topics IS NOT NULL) EXECUTE FUNCTION device_names_follow()
        """)

    /// SQLite: a device's row has a stable number (`row_id`, its rowid as an `INTEGER PRIMARY
    /// KEY`, which `VACUUM` keeps; the devices' key stays unique), and `device_names` keeps it
    /// beside each token (`device_row`), so that an audience's page fetches each device of a name
    /// by it instead of looking its token up in the devices' key (`StateReads.devicePage`).
    /// SQLite changes a table's key only by copying the table; the copy keeps each device's rowid,
    /// the names are indexed again, and the triggers of step 27 come back with the number.
    /// PostgreSQL keeps its index of names as it is: a send's pages look the tokens up by key.
    package static let v28 = Step(28, sqlite: """
        CREATE TABLE devices_v28 (
            row_id INTEGER PRIMARY KEY,
            app_id TEXT NOT NULL,
            device_token TEXT NOT NULL,
            user_id TEXT NOT NULL,
            platform TEXT NOT NULL,
            version INTEGER NOT NULL,
            updated_at INTEGER NOT NULL,
            time_zone TEXT,
            badges_since INTEGER,
            badges INTEGER NOT NULL DEFAULT 0,
            locale TEXT,
            app_version TEXT,
            tags TEXT,
            topics TEXT,
            UNIQUE (app_id, device_token)
        ) STRICT;
        INSERT INTO devices_v28 SELECT rowid, app_id, device_token, user_id, platform, version, updated_at, time_zone, badges_since,
            badges, locale, app_version, tags, topics FROM devices;
        DROP TABLE devices;
        ALTER TABLE devices_v28 RENAME TO devices;
        CREATE INDEX devices_by_user ON devices (app_id, user_id);

        DROP TABLE device_names;
        CREATE TABLE device_names (
            app_id TEXT NOT NULL,
            kind TEXT NOT NULL,
            name TEXT NOT NULL,
            device_token TEXT NOT NULL,
            device_row INTEGER NOT NULL,
            PRIMARY KEY (app_id, kind, name, device_token)
        ) STRICT, WITHOUT ROWID;
        INSERT INTO device_names
            SELECT d.app_id, 'tag', j.value, d.device_token, d.row_id FROM devices d, json_each('["' || replace(d.tags, ' ', '","') || '"]') j
            WHERE d.tags IS NOT NULL
            UNION ALL
            SELECT d.app_id, 'topic', j.value, d.device_token, d.row_id FROM devices d, json_each('["' || replace(d.topics, ' ', '","') || '"]') j
            WHERE d.topics IS NOT NULL;
        CREATE TRIGGER device_names_inserted AFTER INSERT ON devices WHEN NEW.tags IS NOT NULL OR NEW.topics IS NOT NULL BEGIN
            INSERT INTO device_names
                SELECT NEW.app_id, 'tag', value, NEW.device_token, NEW.row_id FROM json_each('["' || replace(NEW.tags, ' ', '","') || '"]')
                WHERE NEW.tags IS NOT NULL
                UNION ALL
                SELECT NEW.app_id, 'topic', value, NEW.device_token, NEW.row_id FROM json_each('["' || replace(NEW.topics, ' ', '","') || '"]')
                WHERE NEW.topics IS NOT NULL;
        END;
        CREATE TRIGGER device_names_updated AFTER UPDATE OF tags, topics ON devices
        WHEN OLD.tags IS NOT NEW.tags OR OLD.topics IS NOT NEW.topics BEGIN
            DELETE FROM device_names WHERE app_id = OLD.app_id AND kind = 'tag' AND device_token = OLD.device_token AND name IN (
                SELECT value FROM json_each('["' || replace(OLD.tags, ' ', '","') || '"]') WHERE OLD.tags IS NOT NULL
                EXCEPT SELECT value FROM json_each('["' || replace(NEW.tags, ' ', '","') || '"]') WHERE NEW.tags IS NOT NULL);
            DELETE FROM device_names WHERE app_id = OLD.app_id AND kind = 'topic' AND device_token = OLD.device_token AND name IN (
                SELECT value FROM json_each('["' || replace(OLD.topics, ' ', '","') || '"]') WHERE OLD.topics IS NOT NULL
                EXCEPT SELECT value FROM json_each('["' || replace(NEW.topics, ' ', '","') || '"]') WHERE NEW.topics IS NOT NULL);
            INSERT INTO device_names
                SELECT NEW.app_id, 'tag', value, NEW.device_token, NEW.row_id FROM json_each('["' || replace(NEW.tags, ' ', '","') || '"]')
                WHERE NEW.tags IS NOT NULL
                EXCEPT SELECT NEW.app_id, 'tag', value, NEW.device_token, NEW.row_id FROM json_each('["' || replace(OLD.tags, ' ', '","') || '"]')
                WHERE OLD.tags IS NOT NULL;
            INSERT INTO device_names
                SELECT NEW.app_id, 'topic', value, NEW.device_token, NEW.row_id FROM json_each('["' || replace(NEW.topics, ' ', '","') || '"]')
                WHERE NEW.topics IS NOT NULL
                EXCEPT SELECT NEW.app_id, 'topic', value, NEW.device_token, NEW.row_id FROM json_each('["' || replace(OLD.topics, ' ', '","') || '"]')
                WHERE OLD.topics IS NOT NULL;
        END;
        CREATE TRIGGER device_names_deleted AFTER DELETE ON devices WHEN OLD.tags IS NOT NULL OR OLD.topics IS NOT NULL BEGIN
            DELETE FROM device_names WHERE app_id = OLD.app_id AND kind = 'tag' AND device_token = OLD.device_token AND name IN (
                SELECT value FROM json_each('["' || replace(OLD.tags, ' ', '","') || '"]') WHERE OLD.tags IS NOT NULL);
            DELETE FROM device_names WHERE app_id = OLD.app_id AND kind = 'topic' AND device_token = OLD.device_token AND name IN (
                SELECT value FROM json_each('["' || replace(OLD.topics, ' ', '","') || '"]') WHERE OLD.topics IS NOT NULL);
        END
        """, postgres: nil)

    /// A delivery counts its devices whose push expired before a provider took it
    /// (docs/API.md#delivery-outcomes), beside `delivered`, `failed` and `unregistered`.
    package static let v29 = Step(29, sqlite: "ALTER TABLE deliveries ADD COLUMN expired INTEGER NOT NULL DEFAULT 0",
                                  postgres: "ALTER TABLE deliveries ADD COLUMN expired bigint NOT NULL DEFAULT 0")

    /// Scheduled sends (docs/API.md#scheduled-sends): a delivery keeps its send's time, where it
    /// stands, and while it waits its command, which its firing repeats; the waiting ones are
    /// found by time, and an app's scheduled ones by state and time.
    package static let v30 = Step(30, sqlite: """
        ALTER TABLE deliveries ADD COLUMN send_at INTEGER;
        ALTER TABLE deliveries ADD COLUMN schedule TEXT;
        ALTER TABLE deliveries ADD COLUMN scheduled_command TEXT;
        CREATE INDEX deliveries_waiting ON deliveries (send_at) WHERE schedule = 'waiting';
        CREATE INDEX deliveries_scheduled ON deliveries (app_id, schedule, send_at, delivery_id) WHERE schedule IS NOT NULL;
        """, postgres: """
        ALTER TABLE deliveries ADD COLUMN send_at bigint;
        ALTER TABLE deliveries ADD COLUMN schedule text COLLATE "C";
        ALTER TABLE deliveries ADD COLUMN scheduled_command text COLLATE "C";
        CREATE INDEX deliveries_waiting ON deliveries (send_at) WHERE schedule = 'waiting';
        CREATE INDEX deliveries_scheduled ON deliveries (app_id, schedule, send_at, delivery_id) WHERE schedule IS NOT NULL;
        """)

    /// Time (docs/API.md#local-time-sends, #quiet-hours, #frequency-caps): an app's default zone,
    /// quiet hours and caps, and its users with quiet hours of their own;
    /// a delivery's local time, its held, dropped and cancelled pushes and the times its held
    /// ones go out; the held pushes, found by delivery and time; each user's own settings and
    /// the pushes the caps count. A delivery that is `sending`
    /// waits for its next wave like one `waiting`.
    package static let v31 = Step(31, sqlite: """
        ALTER TABLE apps ADD COLUMN time_zone TEXT;
        ALTER TABLE apps ADD COLUMN quiet_hours TEXT;
        ALTER TABLE apps ADD COLUMN frequency_caps TEXT;
        ALTER TABLE apps ADD COLUMN quiet_users INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE deliveries ADD COLUMN send_at_local TEXT;
        ALTER TABLE deliveries ADD COLUMN held INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE deliveries ADD COLUMN dropped INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE deliveries ADD COLUMN cancelled INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE deliveries ADD COLUMN waves TEXT;
        ALTER TABLE deliveries ADD COLUMN capped INTEGER NOT NULL DEFAULT 0;
        DROP INDEX deliveries_waiting;
        CREATE INDEX deliveries_due ON deliveries (send_at) WHERE schedule IN ('waiting', 'sending');
        CREATE TABLE held_pushes (
            app_id TEXT NOT NULL,
            delivery_id TEXT NOT NULL,
            part INTEGER NOT NULL,
            device_token TEXT NOT NULL,
            user_id TEXT NOT NULL,
            release_at INTEGER NOT NULL,
            due_at INTEGER NOT NULL,
            badge INTEGER,
            PRIMARY KEY (app_id, delivery_id, part, device_token)
        ) STRICT, WITHOUT ROWID;
        CREATE INDEX held_pushes_by_release ON held_pushes (app_id, delivery_id, part, release_at);
        CREATE TABLE user_settings (
            app_id TEXT NOT NULL,
            user_id TEXT NOT NULL,
            part INTEGER NOT NULL,
            quiet_hours TEXT,
            capped TEXT,
            PRIMARY KEY (app_id, user_id, part)
        ) STRICT, WITHOUT ROWID;
        """, postgres: """
        ALTER TABLE apps ADD COLUMN time_zone text COLLATE "C";
        ALTER TABLE apps ADD COLUMN quiet_hours text COLLATE "C";
        ALTER TABLE apps ADD COLUMN frequency_caps text COLLATE "C";
        ALTER TABLE apps ADD COLUMN quiet_users bigint NOT NULL DEFAULT 0;
        ALTER TABLE deliveries ADD COLUMN send_at_local text COLLATE "C";
        ALTER TABLE deliveries ADD COLUMN held bigint NOT NULL DEFAULT 0;
        ALTER TABLE deliveries ADD COLUMN dropped bigint NOT NULL DEFAULT 0;
        ALTER TABLE deliveries ADD COLUMN cancelled bigint NOT NULL DEFAULT 0;
        ALTER TABLE deliveries ADD COLUMN waves text COLLATE "C";
        ALTER TABLE deliveries ADD COLUMN capped bigint NOT NULL DEFAULT 0;
        DROP INDEX deliveries_waiting;
        CREATE INDEX deliveries_due ON deliveries (send_at) WHERE schedule IN ('waiting', 'sending');
        CREATE TABLE held_pushes (
            app_id uuid NOT NULL,
            delivery_id uuid NOT NULL,
            part bigint NOT NULL,
            device_token text COLLATE "C" NOT NULL,
            user_id text COLLATE "C" NOT NULL,
            release_at bigint NOT NULL,
            due_at bigint NOT NULL,
            badge bigint,
            token_key bytea NOT NULL,
            PRIMARY KEY (app_id, delivery_id, part, token_key)
        );
        CREATE INDEX held_pushes_by_release ON held_pushes (app_id, delivery_id, part, release_at);
        CREATE TABLE user_settings (
            app_id uuid NOT NULL,
            user_id text COLLATE "C" NOT NULL,
            part bigint NOT NULL,
            quiet_hours text COLLATE "C",
            capped text COLLATE "C",
            PRIMARY KEY (app_id, user_id, part)
        );
        """)

    /// Frequency caps count a send to an audience once per app part, with the users it reached
    /// (docs/API.md#frequency-caps): the app's counted sends and its users counted on their own
    /// rows (counted here from the rows a store already has: a send reads users' settings only
    /// while there are some), and a row per counted send. The waiting sends are read a page at a time, by time and
    /// key (`ReaderReads.waitingSends`): PostgreSQL's index of them holds the key too, so that each
    /// page seeks to where the last ended (SQLite's does already: an index of a table keyed by
    /// those columns holds them).
    package static let v32 = Step(32, sqlite: """
        ALTER TABLE apps ADD COLUMN counted_users INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE apps ADD COLUMN counted_sends TEXT;
        UPDATE apps SET counted_users = (SELECT count(*) FROM user_settings s
            WHERE s.app_id = apps.app_id AND s.part = apps.part AND s.capped IS NOT NULL);
        CREATE TABLE counted_sends (
            app_id TEXT NOT NULL,
            part INTEGER NOT NULL,
            delivery TEXT NOT NULL,
            users BLOB NOT NULL,
            PRIMARY KEY (app_id, part, delivery)
        ) STRICT, WITHOUT ROWID;
        """, postgres: """
        ALTER TABLE apps ADD COLUMN counted_users bigint NOT NULL DEFAULT 0;
        ALTER TABLE apps ADD COLUMN counted_sends text COLLATE "C";
        UPDATE apps SET counted_users = (SELECT count(*) FROM user_settings s
            WHERE s.app_id = apps.app_id AND s.part = apps.part AND s.capped IS NOT NULL);
        CREATE TABLE counted_sends (
            app_id uuid NOT NULL,
            part bigint NOT NULL,
            delivery text COLLATE "C" NOT NULL,
            users bytea NOT NULL,
            PRIMARY KEY (app_id, part, delivery)
        );
        DROP INDEX deliveries_due;
        CREATE INDEX deliveries_due ON deliveries (send_at, app_id, delivery_id, part) WHERE schedule IN ('waiting', 'sending');
        """)
}
