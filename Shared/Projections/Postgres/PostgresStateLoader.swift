import Contracts
import Foundation
import ProjectionChangelog
import Projections
import Logging
import PostgresNIO

/// Answers a `StateQuery` inside one repeatable-read transaction, so the snapshot is
/// consistent: one statement per kind of row asked for, each joining the table with its keys
/// as `unnest`ed arrays, so thousands of keys cost one round trip, not thousands.
struct PostgresStateLoader {
    let connection: PostgresConnection
    let logger: Logger

    func load(_ query: StateQuery) async throws -> StateSnapshot {
        var snapshot = StateSnapshot()
        try await loadApps(query.appIds, into: &snapshot)
        try await loadAdminTokens(query.adminTokenIds, into: &snapshot)
        try await loadDevices(query, into: &snapshot)
        try await loadPendingCounts(query, into: &snapshot)
        try await loadPending(query.pendingKeys, into: &snapshot)
        try await loadDeliveries(query.deliveryIds, into: &snapshot)
        try await loadTracked(query.trackedDeliveries, into: &snapshot)
        try await loadParked(query, into: &snapshot)
        try await loadOutcomes(query.outcomeKeys, into: &snapshot)
        try await loadAged(query, into: &snapshot)
        return snapshot
    }

    private func loadOutcomes(_ keys: Set<DeliveryOutcomeKey>, into snapshot: inout StateSnapshot) async throws {
        guard !keys.isEmpty else { return }
        let keys = Array(keys)
        for row in try await rows("""
            SELECT o.app_id, o.delivery_id, o.message_index, o.outcome FROM delivery_outcomes o
            JOIN unnest(\(keys.map(\.appId))::uuid[], \(keys.map(\.deliveryId))::uuid[], \(keys.map { Int64($0.messageIndex) })::bigint[])
                AS k(app_id, delivery_id, message_index)
                ON o.app_id = k.app_id AND o.delivery_id = k.delivery_id AND o.message_index = k.message_index
            """) {
            let (appId, deliveryId, index, outcome) = try row.decode((UUID, UUID, Int, String).self)
            snapshot.outcomes[DeliveryOutcomeKey(appId: appId, deliveryId: deliveryId, messageIndex: index)] =
                try ProjectionValues.decode(DeliveryOutcome.self, outcome, column: "delivery_outcomes.outcome")
        }
    }

    private func rows(_ query: PostgresQuery) async throws -> [PostgresRow] {
        try await connection.rows(query, logger: logger)
    }

    private func loadAdminTokens(_ ids: Set<UUID>, into snapshot: inout StateSnapshot) async throws {
        guard !ids.isEmpty else { return }
        for row in try await rows("""
            SELECT \(unescaped: TableCatalog.adminTokens.columnList) FROM admin_tokens WHERE admin_token_id = ANY(\(Array(ids))::uuid[])
            """) {
            let token = try AdminTokenRow(postgres: row)
            snapshot.adminTokens[token.adminTokenId] = token
        }
    }

    private func loadApps(_ appIds: Set<UUID>, into snapshot: inout StateSnapshot) async throws {
        guard !appIds.isEmpty else { return }
        for row in try await rows("SELECT \(unescaped: TableCatalog.apps.columnList) FROM apps WHERE app_id = ANY(\(Array(appIds))::uuid[])") {
            let app = try AppRow(postgres: row)
            snapshot.apps[AppPart(app.appId, part: app.part)] = app
            snapshot.tokens[AppPart(app.appId, part: app.part)] = []
        }
        // Only apps that exist have tokens worth asking for.
        guard !snapshot.apps.isEmpty else { return }
        for row in try await rows("""
            SELECT \(unescaped: TableCatalog.apiTokens.columnList) FROM api_tokens
            WHERE app_id = ANY(\(Array(Set(snapshot.apps.keys.map(\.appId))))::uuid[])
            ORDER BY app_id, part, created_at, token_id
            """) {
            let token = try ApiTokenRow(postgres: row)
            snapshot.tokens[AppPart(token.appId, part: token.part), default: []].append(token)
        }
    }

    /// Devices by key and every device of the asked users, in one statement.
    private func loadDevices(_ query: StateQuery, into snapshot: inout StateSnapshot) async throws {
        guard !query.deviceKeys.isEmpty || !query.userKeys.isEmpty || !query.deviceOwners.isEmpty else { return }
        let keys = Array(query.deviceKeys.union(query.deviceOwners)), users = Array(query.userKeys), owned = Array(query.deviceOwners)
        // The third branch: every device of the users of `deviceOwners`.
        let found = try await rows("""
            SELECT \(unescaped: TableCatalog.devices.columnList) FROM devices d
            WHERE (d.app_id, d.token_key) IN (SELECT k.app_id, \(unescaped: PostgresRows.unnestedTokenKey)
                FROM unnest(\(keys.map(\.appId))::uuid[], \(keys.map(\.deviceToken))::text[]) AS k(app_id, device_token))
            UNION
            SELECT \(unescaped: TableCatalog.devices.columnList) FROM devices d
            WHERE (d.app_id, d.user_id) IN (SELECT * FROM unnest(\(users.map(\.appId))::uuid[], \(users.map(\.userId))::text[]))
            UNION
            SELECT \(unescaped: TableCatalog.devices.columnList) FROM devices d
            WHERE (d.app_id, d.user_id) IN (SELECT o.app_id, o.user_id FROM devices o
                WHERE (o.app_id, o.token_key) IN (SELECT k.app_id, \(unescaped: PostgresRows.unnestedTokenKey)
                    FROM unnest(\(owned.map(\.appId))::uuid[], \(owned.map(\.deviceToken))::text[]) AS k(app_id, device_token)))
            """)
        snapshot.add(devices: try found.map(DeviceRow.init(postgres:)))
    }

    /// Counts the pending rows of every loaded device the query asks counts for, in one grouped
    /// statement.
    private func loadPendingCounts(_ query: StateQuery, into snapshot: inout StateSnapshot) async throws {
        guard !query.pendingCountDevices.isEmpty || !query.pendingCountUsers.isEmpty else { return }
        let counted = snapshot.devices.values.filter { query.countsPending(of: $0) }.map(\.key)
        guard !counted.isEmpty else { return }
        for row in try await rows("""
            SELECT k.app_id, k.device_token, count(*) FROM pending_notifications p
            JOIN unnest(\(counted.map(\.appId))::uuid[], \(counted.map(\.deviceToken))::text[]) AS k(app_id, device_token)
                ON p.app_id = k.app_id AND p.token_key = \(unescaped: PostgresRows.unnestedTokenKey)
            GROUP BY k.app_id, k.device_token
            """) {
            let (appId, token, count) = try row.decode((UUID, String, Int).self)
            snapshot.pendingCounts[DeviceKey(appId: appId, deviceToken: token)] = count
        }
    }

    private func loadPending(_ keys: Set<PendingKey>, into snapshot: inout StateSnapshot) async throws {
        guard !keys.isEmpty else { return }
        let keys = Array(keys)
        for row in try await rows("""
            SELECT \(unescaped: TableCatalog.pendingNotifications.columnList) FROM pending_notifications p
            WHERE (p.app_id, p.token_key, p.notification_id) IN (SELECT k.app_id, \(unescaped: PostgresRows.unnestedTokenKey), k.notification_id
                FROM unnest(\(keys.map(\.appId))::uuid[], \(keys.map(\.deviceToken))::text[], \(keys.map(\.notificationId))::text[])
                AS k(app_id, device_token, notification_id))
            """) {
            let pending = try PendingNotificationRow(postgres: row)
            snapshot.pending[pending.key] = pending
        }
    }

    private func loadDeliveries(_ ids: Set<UUID>, into snapshot: inout StateSnapshot) async throws {
        guard !ids.isEmpty else { return }
        for row in try await rows("""
            SELECT \(unescaped: TableCatalog.deliveries.columnList) FROM deliveries WHERE delivery_id = ANY(\(Array(ids))::uuid[])
            """) {
            let delivery = try DeliveryRow(postgres: row)
            snapshot.deliveries[delivery.key] = delivery
        }
    }

    /// Usually finds nothing: rows exist before their send only when the tracking topic ran
    /// ahead of the notification topic.
    private func loadTracked(_ ids: Set<UUID>, into snapshot: inout StateSnapshot) async throws {
        guard !ids.isEmpty else { return }
        for row in try await rows("""
            SELECT \(unescaped: PostgresRows.trackedColumns) FROM tracking_events WHERE delivery_id = ANY(\(Array(ids))::uuid[])
            """) {
            let (deliveryId, event) = try PostgresRows.tracked(row)
            snapshot.trackedEvents[deliveryId, default: []].append(event)
        }
    }

    /// The marks of the requested deliveries' pairs, and those of `parkedApps` older than
    /// `parkedBefore` (an index range per app: usually none).
    private func loadParked(_ query: StateQuery, into snapshot: inout StateSnapshot) async throws {
        let apps = query.parkedBefore == nil ? [] : Array(query.parkedApps)
        guard !query.parkedDeliveries.isEmpty || !apps.isEmpty else { return }
        let before = query.parkedBefore.map(ProjectionValues.millis) ?? Int64.min
        // Two branches, so that each reads its own index (the key; the app and time).
        for row in try await rows("""
            SELECT delivery_id, app_id, parked_at, part FROM parked_tracking
            WHERE delivery_id = ANY(\(Array(query.parkedDeliveries))::uuid[])
            UNION SELECT delivery_id, app_id, parked_at, part FROM parked_tracking WHERE app_id = ANY(\(apps)::uuid[]) AND parked_at < \(before)
            """) {
            let (deliveryId, appId, millis, part) = try row.decode((UUID, UUID, Int64, Int).self)
            snapshot.parkedTracking[TrackingPair(deliveryId: deliveryId, appId: appId, part: part)] = ProjectionValues.date(millis: millis)
        }
    }

    /// The statuses and acks of `parkedApps` older than `statusesBefore` and `acksBefore` (an
    /// index range per app).
    private func loadAged(_ query: StateQuery, into snapshot: inout StateSnapshot) async throws {
        guard !query.parkedApps.isEmpty else { return }
        let apps = Array(query.parkedApps)
        if let before = query.statusesBefore.map(ProjectionValues.millis) {
            for row in try await rows("""
                SELECT \(unescaped: TableCatalog.registrationStatus.columnList) FROM registration_status
                WHERE app_id = ANY(\(apps)::uuid[]) AND decided_at < \(before)
                """) {
                snapshot.agedStatuses.append(try RegistrationStatusRow(postgres: row))
            }
        }
        if let before = query.acksBefore.map(ProjectionValues.millis) {
            for row in try await rows("""
                SELECT \(unescaped: TableCatalog.acks.columnList) FROM acks WHERE app_id = ANY(\(apps)::uuid[]) AND acked_at < \(before)
                """) {
                snapshot.agedAcks.append(try AckRow(postgres: row))
            }
        }
    }
}
