import Foundation
import ProjectionChangelog
import Projections
import GRDB
import Logging

/// The versioned schema of the SQLite projection store.
///
/// Each migration also sets `PRAGMA user_version` to its number, so that a store written by
/// newer code is recognised (and refused) before any migration touches it: older code
/// could otherwise misread or damage tables it does not know.
enum SQLiteSchema {
    /// The newest schema version this code creates and understands.
    static let version = 14

    static func prepare(_ pool: DatabasePool, logger: Logger) throws {
        let found = try pool.read { db in try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0 }
        guard found <= version else {
            throw ProjectionStoreError.unsupportedSchemaVersion(found: found, supported: version)
        }
        do {
            try migrator.migrate(pool)
        } catch {
            // Another process opening the same new file may have migrated it between our look
            // at the applied migrations and our own migration; a second pass then finds them applied.
            logger.debug("retrying projection store migration", metadata: ["error": "\(error)"])
            try migrator.migrate(pool)
        }
        try pool.write { db in try SQLiteDeadLetters.recordCreation(foundVersion: found, now: Date(), in: db) }
        if found < version {
            logger.info("projection store schema migrated", metadata: ["from": "\(found)", "to": "\(version)"])
        }
    }

    /// Internal so that tests can build a store of an older version (`migrate(_:upTo:)`).
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        // Each migration sets `user_version` to its number; no version 4 was ever released.
        for (number, sql) in [(1, v1), (2, v2), (3, v3), (5, v5), (6, v6), (7, v7), (8, v8), (9, v9), (10, v10), (11, v11), (12, v12),
                              (13, v13), (14, v14)] {
            migrator.registerMigration("v\(number)") { db in
                try db.execute(sql: sql)
                try db.execute(sql: "PRAGMA user_version = \(number)")
            }
        }
        return migrator
    }

    /// STRICT tables make SQLite reject a value of the wrong type instead of storing it.
    private static let v1 = """
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
        """

    /// Managed notifications: pending rows, acks and deliveries.
    ///
    /// Pending rows and acks are keyed by device first and kept WITHOUT ROWID, so a device's
    /// rows lie together in the primary key: counting them (`GROUP BY device_token`), listing
    /// them and clearing them are each one range of the key. A device's list is ordered by
    /// `sent_at` when read; it is short (its badge), so no second index is kept for that order.
    /// Acks are also looked up per notification; that index carries the device token (the
    /// primary key rides along in a WITHOUT ROWID index), so it answers on its own.
    private static let v2 = """
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
        """

    /// Engagement tracking: one row per (delivery, app, action, device), the device named by its
    /// message index, with the number of repeated reports.
    ///
    /// Keyed by delivery first, so that a delivery's statistics, and the check of rows reported
    /// before the send, are each one range of the key. `app_id` is part of the key because a
    /// report names an app and a delivery that need not match: until the send is applied, the
    /// pair is not known to be valid. Deliveries get an index by id alone for the same reason.
    private static let v3 = """
        CREATE TABLE tracking_events (
            delivery_id TEXT NOT NULL,
            app_id TEXT NOT NULL,
            action INTEGER NOT NULL,
            message_index INTEGER NOT NULL,
            repeats INTEGER NOT NULL,
            PRIMARY KEY (delivery_id, app_id, action, message_index)
        ) STRICT, WITHOUT ROWID;

        CREATE INDEX deliveries_by_id ON deliveries (delivery_id);
        """

    /// Dead letters (records the store refused for good, set aside so their partition moves
    /// on) and the store's creation time (one row, written by the first open).
    private static let v5 = """
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
        """

    /// Tracking reports parked before their delivery's send: when each (delivery, app) was
    /// parked, so that reports whose send never comes expire (`TrackingHandler`).
    private static let v6 = """
        CREATE TABLE parked_tracking (
            delivery_id TEXT NOT NULL,
            app_id TEXT NOT NULL,
            parked_at INTEGER NOT NULL,
            PRIMARY KEY (delivery_id, app_id)
        ) STRICT, WITHOUT ROWID;
        CREATE INDEX parked_tracking_by_time ON parked_tracking (parked_at);
        """

    /// Each partition's event time beside its next offset (docs/ARCHITECTURE.md#state-is-a-function-of-the-log).
    private static let v7 = "ALTER TABLE partition_offsets ADD COLUMN event_time INTEGER NOT NULL DEFAULT 0"

    /// A park mark stays only while its delivery has no row: the send that settles a pair now
    /// removes its mark, and an older store kept marks of settled pairs until they expired.
    private static let v8 = """
        DELETE FROM parked_tracking WHERE EXISTS (SELECT 1 FROM deliveries d WHERE d.delivery_id = parked_tracking.delivery_id)
        """

    /// The changelog (docs/ARCHITECTURE.md#changelog-and-restore): the store's lineage and the
    /// number of its last commit, the committed entries not yet published, and the indexes a
    /// restore set aside until its end (kept, so a restore that stopped builds them when it is
    /// run again). A store that
    /// has consumed nothing yet starts a lineage; one that holds state from before keeps no
    /// changelog, since its history before this version is not in it.
    private static let v9 = """
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
        """

    /// Apps' push credentials (`PushCredentials` as JSON, secrets sealed; NULL: none).
    private static let v10 = "ALTER TABLE apps ADD COLUMN push_credentials TEXT"

    /// What the sender reported of each push (docs/ARCHITECTURE.md#delivery): each device's last
    /// outcome of a delivery, and the counts per outcome beside the delivery.
    private static let v11 = """
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
        """

    /// Idempotency keys (docs/API.md#idempotency-keys): a send's key and body hash, and the later
    /// sends with that key, beside the delivery; the first request of a key on an admin create.
    private static let v14 = """
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
        """
    /// API tokens' scopes (`client`, `server` or `client,server`; NULL: a legacy token, every scope).
    private static let v12 = "ALTER TABLE api_tokens ADD COLUMN scopes TEXT"
    /// Named admin tokens (hash only) and the audit trail of the admin topic
    /// (docs/ARCHITECTURE.md#audit-trail): one row per admin command, keyed by its envelope id.
    private static let v13 = """
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
        """
}
