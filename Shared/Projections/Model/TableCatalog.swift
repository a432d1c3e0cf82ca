import Foundation

/// A column of a projected table as both stores keep it: its name, what it holds, and whether
/// it may be NULL. The stores' declared types follow from the kind (docs/ARCHITECTURE.md#the-store-catalog).
public struct CatalogColumn: Sendable, Equatable {
    /// What a column holds, in both stores: UUIDs as lower-case text in SQLite and `uuid` in
    /// PostgreSQL, dates as integer milliseconds since 1970, flags as 0/1 in SQLite.
    public enum Kind: Sendable, Equatable {
        case uuid, text, integer, boolean, millis, bytes
    }

    public var name: String
    public var kind: Kind
    public var nullable: Bool
    /// Whether the dump shows it. Delivery progress (an outbox job's attempts and state) is
    /// not: it legitimately differs between runs that built the same state.
    public var dumped: Bool

    public init(_ name: String, _ kind: Kind, nullable: Bool = false, dumped: Bool = true) {
        self.name = name
        self.kind = kind
        self.nullable = nullable
        self.dumped = dumped
    }
}

/// A projected table, described once: its name, its primary key and its columns in the order
/// every statement lists them. Both stores' column lists, upserts and the dump are built from
/// it; the migrations that create it are in each store's schema, and a test holds the two
/// together on both stores.
public struct CatalogTable: Sendable, Equatable {
    public var name: String
    /// The primary key's columns, in key order (the dump's row order).
    public var key: [String]
    public var columns: [CatalogColumn]
    /// A column by which a stored row is replaced only by a newer one (a greater value), so that
    /// rows of one key written by processors of different shards end the same in whatever order
    /// they commit; nil: the last write wins.
    public var newerBy: String?

    public init(_ name: String, key: [String], newerBy: String? = nil, _ columns: [CatalogColumn]) {
        precondition(key.allSatisfy { k in columns.contains { $0.name == k } }, "\(name): key columns must be columns")
        precondition(newerBy.map { n in columns.contains { $0.name == n } } ?? true, "\(name): newerBy must be a column")
        self.name = name
        self.key = key
        self.columns = columns
        self.newerBy = newerBy
    }

    /// `a, b, c`: every column, in order.
    public var columnList: String { columns.map(\.name).joined(separator: ", ") }

    /// The columns the dump shows, in order.
    public var dumpedColumnList: String { columns.filter(\.dumped).map(\.name).joined(separator: ", ") }

    public var keyList: String { key.joined(separator: ", ") }

    /// `table.column` of the column at `index`, for errors (`#index` past the last column).
    public func columnName(at index: Int) -> String {
        "\(name).\(index < columns.count ? columns[index].name : "#\(index)")"
    }

    /// `INSERT INTO t (columns) VALUES (?, …) ON CONFLICT (key) DO UPDATE SET c = excluded.c, …`:
    /// writes a whole row, replacing the row of its key. SQLite's parameters are `?`, bound in
    /// column order.
    public var sqliteUpsert: String { sqliteInsert + " ON CONFLICT (\(keyList)) DO \(updateSet)" }

    /// Inserts a whole row; a row whose key is stored already is left as it is.
    public var sqliteInsertUnlessStored: String { sqliteInsert + " ON CONFLICT (\(keyList)) DO NOTHING" }

    private var sqliteInsert: String {
        "INSERT INTO \(name) (\(columnList)) VALUES (\(columns.map { _ in "?" }.joined(separator: ", ")))"
    }

    /// `DELETE FROM t WHERE k1 = ? AND …`: the row of one key, bound in key order.
    public var sqliteDeleteByKey: String {
        "DELETE FROM \(name) WHERE " + key.map { "\($0) = ?" }.joined(separator: " AND ")
    }

    /// `UPDATE SET` every column outside the key (`NOTHING` when there is none), for `ON CONFLICT … DO`.
    public var updateSet: String {
        let rest = columns.filter { !key.contains($0.name) }
        guard !rest.isEmpty else { return "NOTHING" }
        let set = "UPDATE SET " + rest.map { "\($0.name) = excluded.\($0.name)" }.joined(separator: ", ")
        return set + (newerBy.map { " WHERE excluded.\($0) > \(name).\($0)" } ?? "")
    }
}

/// Every projected table, once. Adding a column is its row type, one line here and one migration.
public enum TableCatalog {
    /// Tables an app keeps per part (`AppPart`) have a `part` column, last, in their key; 0 in an
    /// app that is not split.
    public static let apps = CatalogTable("apps", key: ["app_id", "part"], [
        .init("app_id", .uuid), .init("org_id", .uuid), .init("name", .text), .init("callback_url", .text, nullable: true),
        // Sorted-key JSON (`ProjectionValues.headersJSON`).
        .init("callback_headers", .text), .init("webhook_retries", .integer), .init("created_at", .millis),
        // `PushCredentials` as JSON, secrets sealed; NULL: none.
        .init("push_credentials", .text, nullable: true), .init("part", .integer),
        // Whether user assertions are required; the identity secret, `SealedSecret` as JSON (NULL: none).
        .init("identity_required", .boolean), .init("identity_secret", .text, nullable: true),
        // The hosts its status webhooks may reach, comma-separated (`WebhookHosts`); NULL: no list.
        .init("webhook_hosts", .text, nullable: true),
        // Users with a device in the part (`AppRow.users`).
        .init("users", .integer),
        // The zone of devices that gave none; its default quiet hours, `22:00-08:00` (NULL: UTC, none).
        .init("time_zone", .text, nullable: true), .init("quiet_hours", .text, nullable: true),
        // Its frequency caps, `marketing:3/86400,*:10/86400` (NULL: none); the users of the part with quiet hours of their own.
        .init("frequency_caps", .text, nullable: true), .init("quiet_users", .integer),
        // Its users with pushes counted on their own row; its sends to an audience its caps counted
        // (`AppRow.countedUsers`, `countedSends`).
        .init("counted_users", .integer), .init("counted_sends", .text, nullable: true),
    ])

    public static let apiTokens = CatalogTable("api_tokens", key: ["token_id", "part"], [
        .init("token_id", .uuid), .init("app_id", .uuid), .init("token_hash", .text), .init("revoked", .boolean),
        .init("created_at", .millis),
        // `client`, `server` or `client,server`; NULL: a legacy token, every scope.
        .init("scopes", .text, nullable: true), .init("part", .integer),
    ])

    public static let devices = CatalogTable("devices", key: ["app_id", "device_token"], [
        .init("app_id", .uuid), .init("device_token", .text), .init("user_id", .text), .init("platform", .text),
        .init("version", .integer), .init("updated_at", .millis),
        // An IANA time zone name, as the last registration gave it; NULL: not given.
        .init("time_zone", .text, nullable: true),
        // The badge updates sent in the device's current window of log time, and when it started.
        .init("badges_since", .millis, nullable: true), .init("badges", .integer),
        // Its canonical locale and app version (`DeviceLocale`, `AppVersion`); NULL: not given.
        .init("locale", .text, nullable: true), .init("app_version", .text, nullable: true),
        // Its tags and topics, sorted and joined by a space (`DeviceLabels`); NULL: none.
        .init("tags", .text, nullable: true), .init("topics", .text, nullable: true),
    ])

    public static let registrationStatus = CatalogTable("registration_status", key: ["request_id"], [
        .init("request_id", .uuid), .init("app_id", .uuid), .init("status", .text), .init("failure_reason", .text, nullable: true),
        .init("decided_at", .millis), .init("part", .integer),
    ])

    public static let pendingNotifications = CatalogTable("pending_notifications", key: ["app_id", "device_token", "notification_id"], [
        .init("app_id", .uuid), .init("device_token", .text), .init("notification_id", .text), .init("delivery_id", .uuid),
        .init("sent_at", .millis), .init("text", .text), .init("business_id", .text, nullable: true),
    ])

    public static let acks = CatalogTable("acks", key: ["app_id", "device_token", "notification_id"], [
        .init("app_id", .uuid), .init("device_token", .text), .init("notification_id", .text),
        .init("business_id", .text, nullable: true), .init("acked_at", .millis),
    ])

    public static let deliveries = CatalogTable("deliveries", key: ["app_id", "delivery_id", "part"], [
        .init("app_id", .uuid), .init("delivery_id", .uuid), .init("kind", .text), .init("managed", .boolean),
        .init("tracking", .boolean), .init("sent", .integer), .init("created_at", .millis),
        .init("delivered", .integer), .init("failed", .integer), .init("unregistered", .integer),
        .init("idempotency_key", .text, nullable: true), .init("request_hash", .text, nullable: true),
        .init("duplicates", .integer), .init("conflicts", .integer), .init("part", .integer),
        // A localized send's devices per locale (`DeliveryRow.sentByLocale`); NULL: not localized.
        .init("sent_by_locale", .text, nullable: true),
        // Its devices per locale by their last outcome (`DeliveryRow.outcomesByLocale`); NULL: none reported.
        .init("outcomes_by_locale", .text, nullable: true),
        // Its devices whose push expired before a provider took it (`DeliveryOutcome.expired`).
        .init("expired", .integer),
        // A scheduled send's time, where it stands, and, while it waits, its command
        // (`DeliveryRow.sendAt`, `schedule`, `scheduledCommand`); NULL for a send made at once.
        .init("send_at", .millis, nullable: true), .init("schedule", .text, nullable: true),
        .init("scheduled_command", .text, nullable: true),
        // A local-time send's wall-clock time; its pushes held, dropped in quiet hours, and held
        // ones cancelled; the times its held ones go out (milliseconds, comma-separated).
        .init("send_at_local", .text, nullable: true), .init("held", .integer), .init("dropped", .integer),
        .init("cancelled", .integer), .init("waves", .text, nullable: true),
        // Its pushes over a frequency cap.
        .init("capped", .integer),
    ])

    /// A user's own settings and the pushes the app's caps count (`UserSettingsRow`), per part.
    public static let userSettings = CatalogTable("user_settings", key: ["app_id", "user_id", "part"], [
        .init("app_id", .uuid), .init("user_id", .text), .init("part", .integer),
        // `22:00-08:00`; NULL: the app's.
        .init("quiet_hours", .text, nullable: true),
        // `CappedPushes`; NULL: none counted.
        .init("capped", .text, nullable: true),
    ])

    /// The users a send to an audience reached, as the app part's caps count them (`CountedSendRow`).
    public static let countedSends = CatalogTable("counted_sends", key: ["app_id", "part", "delivery"], [
        .init("app_id", .uuid), .init("part", .integer), .init("delivery", .text),
        // `CountedSend.bytes`: 8 bytes per user.
        .init("users", .bytes),
    ])

    /// Pushes a send holds for a later time (`HeldPushRow`).
    public static let heldPushes = CatalogTable("held_pushes", key: ["app_id", "delivery_id", "part", "device_token"], [
        .init("app_id", .uuid), .init("delivery_id", .uuid), .init("part", .integer), .init("device_token", .text),
        .init("user_id", .text), .init("release_at", .millis), .init("due_at", .millis), .init("badge", .integer, nullable: true),
    ])

    public static let deliveryOutcomes = CatalogTable("delivery_outcomes", key: ["app_id", "delivery_id", "message_index"], [
        .init("app_id", .uuid), .init("delivery_id", .uuid), .init("message_index", .integer), .init("device_token", .text),
        .init("outcome", .text), .init("reason", .text, nullable: true), .init("reported_at", .millis),
    ])

    public static let trackingEvents = CatalogTable("tracking_events", key: ["delivery_id", "app_id", "part", "action", "message_index"], [
        .init("delivery_id", .uuid), .init("app_id", .uuid), .init("action", .integer), .init("message_index", .integer),
        // Reports after the first.
        .init("repeats", .integer), .init("part", .integer),
    ])

    public static let parkedTracking = CatalogTable("parked_tracking", key: ["delivery_id", "app_id", "part"], [
        .init("delivery_id", .uuid), .init("app_id", .uuid), .init("parked_at", .millis), .init("part", .integer),
    ])

    public static let outbox = CatalogTable("outbox", key: ["id"], [
        .init("id", .text), .init("kind", .text), .init("app_id", .uuid, nullable: true), .init("url", .text),
        .init("headers", .text), .init("body", .bytes), .init("max_attempts", .integer),
        .init("attempts", .integer, dumped: false), .init("next_attempt_at", .millis, dumped: false),
        .init("state", .text, dumped: false), .init("last_status", .integer, nullable: true, dumped: false),
        .init("last_error", .text, nullable: true, dumped: false), .init("created_at", .millis, dumped: false),
    ])

    public static let adminTokens = CatalogTable("admin_tokens", key: ["admin_token_id"], [
        .init("admin_token_id", .uuid), .init("name", .text), .init("token_hash", .text), .init("revoked", .boolean),
        .init("created_at", .millis), .init("revoked_at", .millis, nullable: true),
    ])

    public static let auditLog = CatalogTable("audit_log", key: ["command_id"], [
        .init("command_id", .uuid), .init("at", .millis), .init("type", .text), .init("app_id", .uuid, nullable: true),
        .init("actor_id", .uuid, nullable: true), .init("actor_name", .text, nullable: true),
        .init("request_id", .text, nullable: true), .init("outcome", .text), .init("reason", .text, nullable: true),
        .init("changes", .text),
    ])

    /// A key names the first create of its window; a key whose window ended names the next one,
    /// which may be another app, of another shard: the newest first request wins.
    public static let idempotencyKeys = CatalogTable("idempotency_keys", key: ["scope", "idempotency_key"], newerBy: "first_at", [
        .init("scope", .text), .init("idempotency_key", .text), .init("resource_id", .uuid), .init("request_hash", .text),
        .init("first_at", .millis),
    ])

    /// The projected tables in dump order.
    public static let tables: [CatalogTable] = [
        apps, apiTokens, devices, registrationStatus, pendingNotifications, acks, deliveries, deliveryOutcomes,
        trackingEvents, parkedTracking, outbox, adminTokens, auditLog, idempotencyKeys, heldPushes, userSettings, countedSends,
    ]

    /// Columns a store keeps beside a table's catalog columns, for its own work; no row type
    /// carries them. Both stores: an outbox job's lease. SQLite: a device's row number, which
    /// its index of names refers to (`row_id`, schema step 28). PostgreSQL: the SHA-256 key of a
    /// device token (a B-tree entry holds at most about 2,700 bytes, and a token may have 4,096).
    public static let storeColumns: [String: Set<String>] = ["outbox": ["lease_until"], "devices": ["row_id"]]
    public static let postgresStoreColumns: [String: Set<String>] = [
        "outbox": ["lease_until"], "devices": ["token_key"], "pending_notifications": ["token_key"], "acks": ["token_key"],
        "held_pushes": ["token_key"],
    ]
}
