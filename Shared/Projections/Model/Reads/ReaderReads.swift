import Contracts
import Foundation

/// The reads of ingest's routes and of store inspection, each written once for both stores
/// (`ProjectionReader`, `StoreInspection`; `ReadRunner` runs them).
public enum ReaderReads {
    public static func app(_ appId: UUID) -> StoreRead<AppRow> {
        StoreRead("WHERE app_id = \(appId) AND part = 0")
    }

    public static func apps(after: UUID?, limit: Int) -> StoreRead<AppRow> {
        var filter: ReadSQL = "WHERE part = 0"
        if let after { filter += " AND app_id > \(after)" }
        return StoreRead(filter + " ORDER BY app_id LIMIT \(limit)")
    }

    public static func apiTokens(app appId: UUID) -> StoreRead<ApiTokenRow> {
        StoreRead("WHERE app_id = \(appId) AND part = 0 ORDER BY created_at, token_id")
    }

    /// Hashes of generated tokens do not collide; the order only makes the answer stable if they did.
    public static func apiToken(hash: String) -> StoreRead<ApiTokenRow> {
        StoreRead("WHERE token_hash = \(hash) AND part = 0 ORDER BY created_at, token_id LIMIT 1")
    }

    public static func adminTokens(after: UUID?, limit: Int) -> StoreRead<AdminTokenRow> {
        var filter: ReadSQL = ""
        if let after { filter += "WHERE admin_token_id > \(after) " }
        return StoreRead(filter + "ORDER BY admin_token_id LIMIT \(limit)")
    }

    public static func adminToken(id: UUID) -> StoreRead<AdminTokenRow> {
        StoreRead("WHERE admin_token_id = \(id)")
    }

    public static func adminToken(hash: String) -> StoreRead<AdminTokenRow> {
        StoreRead("WHERE token_hash = \(hash) ORDER BY created_at, admin_token_id LIMIT 1")
    }

    public static func idempotencyKey(scope: String, key: String) -> StoreRead<IdempotencyKeyRow> {
        StoreRead("WHERE scope = \(scope) AND idempotency_key = \(key)")
    }

    /// Only the filters given are in the statement, so each combination reads its index.
    public static func auditEntries(_ query: AuditQuery) -> StoreRead<AuditEntryRow> {
        var conditions: [ReadSQL] = []
        if let app = query.appId { conditions.append("app_id = \(app)") }
        switch query.actor {
        case .bootstrap?: conditions.append("actor_id IS NULL AND actor_name = \(AdminActor.bootstrapName)")
        case .token(let id)?: conditions.append("actor_id = \(id)")
        case nil: break
        }
        if let type = query.type { conditions.append("type = \(type)") }
        if let since = query.since { conditions.append("at >= \(millis: since)") }
        if let until = query.until { conditions.append("at < \(millis: until)") }
        if let before = query.before {
            conditions.append("(at < \(before.atMillis) OR (at = \(before.atMillis) AND command_id < \(before.commandId)))")
        }
        var filter: ReadSQL = ""
        for (index, condition) in conditions.enumerated() { filter += (index == 0 ? "WHERE " : " AND ") + condition }
        return StoreRead(filter + " ORDER BY at DESC, command_id DESC LIMIT \(query.limit)")
    }

    public static func devices(app appId: UUID, user userId: String) -> StoreRead<DeviceRow> {
        StoreRead("WHERE app_id = \(appId) AND user_id = \(userId) ORDER BY device_token", firstColumnIsFirstValue: true)
    }

    public static func device(_ key: DeviceKey) -> StoreRead<DeviceRow> {
        StoreRead("WHERE app_id = \(key.appId) AND \(deviceToken: key.deviceToken)", firstColumnIsFirstValue: true)
    }

    /// The app filter is what keeps one app's token from reading another app's statuses.
    public static func registrationStatuses(app appId: UUID, requestIds: [UUID]) -> StoreRead<RegistrationStatusRow> {
        StoreRead("WHERE app_id = \(appId) AND \(keys: ReadKeys(.init("request_id"), .uuids(Array(Set(requestIds)))))")
    }

    public static func pendingNotifications(_ device: DeviceKey) -> StoreRead<PendingNotificationRow> {
        StoreRead("WHERE app_id = \(device.appId) AND \(deviceToken: device.deviceToken) ORDER BY sent_at, notification_id",
                  firstColumnIsFirstValue: true)
    }

    /// Each part that applied the send has its row (`DeliveryRow.part`, `DeliveryRow.summed`).
    /// The sends that wait for their time, or for the next time some of their pushes are held
    /// until (`sending`), whose time is `dueBy` or before, the earliest first (the condition on
    /// `schedule` is written out as the index's, so that both stores read it).
    public static func waitingSends(dueBy: Date, after: DeliveryRow?, limit: Int) -> StoreRead<DeliveryRow> {
        var filter: ReadSQL = "WHERE schedule IN ('waiting', 'sending') AND send_at <= \(millis: dueBy)"
        if let after, let sendAt = after.sendAt {
            // A row value, which both stores seek to in the index (nested ORs were read from the
            // first row of the time: every page of sends due at one time read all those before it).
            filter += " AND (send_at, app_id, delivery_id, part) > (\(millis: sendAt), \(after.appId), \(after.deliveryId), \(after.part))"
        }
        return StoreRead(filter + " ORDER BY send_at, app_id, delivery_id, part LIMIT \(limit)")
    }

    /// An app's scheduled sends in `state`, by time then delivery id (part 0's rows: every part
    /// keeps the send, at one time).
    public static func scheduledSends(app appId: UUID, state: ScheduleState, after: (sendAt: Date, deliveryId: UUID)?,
                                      limit: Int) -> StoreRead<DeliveryRow> {
        var filter: ReadSQL = "WHERE app_id = \(appId) AND part = 0 AND schedule = \(state.rawValue)"
        if let after {
            filter += " AND (send_at > \(millis: after.sendAt) OR (send_at = \(millis: after.sendAt) AND delivery_id > \(after.deliveryId)))"
        }
        return StoreRead(filter + " ORDER BY send_at, delivery_id LIMIT \(limit)")
    }

    public static func delivery(app appId: UUID, deliveryId: UUID) -> StoreRead<DeliveryRow> {
        StoreRead("WHERE app_id = \(appId) AND delivery_id = \(deliveryId)", firstColumnIsFirstValue: true)
    }

    /// One row per part and tracked action (one with no action for a part with none), in one
    /// statement. Rows past the sent count or of another app are discarded when the send is
    /// applied; the bound here also holds while a report and its send race. Each part's rows
    /// count within its part's sent count (`AppParts.messageIndex`), once its part applied the send.
    public static func deliveryStats(app appId: UUID, deliveryId: UUID) -> StoreRead<DeliveryStatsPart> {
        let table = TableCatalog.deliveries
        return StoreRead("""
            SELECT \(unescaped: table.columns.map { "d." + $0.name }.joined(separator: ", ")), c.action, c.devices, c.repeats
            FROM deliveries d LEFT JOIN (
                SELECT t.part, t.action, COUNT(*) AS devices, CAST(SUM(t.repeats) AS BIGINT) AS repeats FROM tracking_events t
                JOIN deliveries e ON e.app_id = t.app_id AND e.delivery_id = t.delivery_id AND e.part = t.part
                WHERE t.delivery_id = \(deliveryId) AND t.app_id = \(appId) AND e.tracking
                    AND t.message_index < CAST(e.part AS BIGINT) * \(unescaped: String(AppParts.indexStride)) + e.sent
                GROUP BY t.part, t.action) c ON c.part = d.part
            WHERE d.app_id = \(appId) AND d.delivery_id = \(deliveryId)
            """, columns: ReadColumns(table, extra: ["action", "devices", "repeats"]))
    }

    /// Only the filters given are in the statement.
    public static func deliveryOutcomes(app appId: UUID, deliveryId: UUID, outcome: DeliveryOutcome?, after: Int?,
                                        limit: Int) -> StoreRead<DeliveryOutcomeRow> {
        var filter: ReadSQL = "WHERE app_id = \(appId) AND delivery_id = \(deliveryId)"
        if let outcome { filter += " AND outcome = \(outcome.rawValue)" }
        if let after { filter += " AND message_index > \(after)" }
        return StoreRead(filter + " ORDER BY message_index LIMIT \(limit)")
    }

    /// The app's devices counted by the properties an audience reads: one row per combination,
    /// so that an audience is counted by matching combinations, not devices.
    public static func devicePropertyCounts(app appId: UUID) -> StoreRead<DevicePropertiesCount> {
        let properties = "platform, locale, time_zone, app_version, tags, topics"
        return StoreRead("""
            SELECT \(unescaped: properties), COUNT(*) FROM devices WHERE app_id = \(appId) GROUP BY \(unescaped: properties)
            """, columns: ReadColumns(table: "devices", ["platform", "locale", "time_zone", "app_version", "tags", "topics", "count"]))
    }

    /// The stored `column` (`next_offset` or `event_time`) of every partition of these topics.
    public static func partitions(_ column: String, topics: [String]) -> StoreRead<PartitionValueRow> {
        StoreRead("""
            SELECT topic, "partition", \(unescaped: column) FROM partition_offsets WHERE \(keys: ReadKeys(.init("topic"), .texts(Array(Set(topics)))))
            """, columns: ReadColumns(table: "partition_offsets", ["topic", "partition", column]))
    }

    /// Every held app part's rows (`HeldApp.key(on:)`): their names, offsets and event times.
    public static let heldLanes = StoreRead<HeldLaneRow>("""
        SELECT topic, "partition", next_offset, event_time FROM partition_offsets WHERE topic LIKE \(HeldApp.prefix + "%")
        """, columns: ReadColumns(table: "partition_offsets", ["topic", "partition", "next_offset", "event_time"]))

    public static func outboxJob(_ id: String) -> StoreRead<OutboxJob> {
        StoreRead("WHERE id = \(id)")
    }

    /// Ids compare by their bytes in both stores (SQLite's BINARY, PostgreSQL's `COLLATE "C"`).
    public static func outboxJobs(after id: String?, limit: Int) -> StoreRead<OutboxJob> {
        var filter: ReadSQL = ""
        if let id { filter += "WHERE id > \(id) " }
        return StoreRead(filter + "ORDER BY id LIMIT \(limit)")
    }

    /// The earliest next attempt of a pending job that is not a callback share.
    public static let nextOutboxDue = StoreRead<OptionalIntRow>(
        "SELECT MIN(next_attempt_at) FROM outbox WHERE state = 'pending' AND kind <> \(CallbackShare.jobKind)",
        columns: ReadColumns(table: "outbox", ["next_attempt_at"]))
}
