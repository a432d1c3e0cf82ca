import Contracts
import Foundation
import ProjectionChangelog
import Projections
import GRDB

/// Answers a `StateQuery` inside one read transaction, so the snapshot is consistent.
///
/// Keys are asked for in `IN` lists (see `SQLiteInList`) rather than one by one; devices are
/// grouped by app first so that every list probes the `(app_id, …)` indexes directly.
struct SQLiteStateLoader {
    let db: Database

    func load(_ query: StateQuery) throws -> StateSnapshot {
        var snapshot = StateSnapshot()
        try loadApps(query.appIds, into: &snapshot)
        try loadAdminTokens(query.adminTokenIds, into: &snapshot)
        try loadDevices(query.deviceKeys.union(query.deviceOwners), into: &snapshot)
        try loadUsers(query.userKeys, into: &snapshot)
        try loadUsers(owners(of: query.deviceOwners, in: snapshot).subtracting(query.userKeys), into: &snapshot)
        try loadPendingCounts(query, into: &snapshot)
        try loadPending(query.pendingKeys, into: &snapshot)
        try loadDeliveries(query.deliveryIds, into: &snapshot)
        try loadTracked(query.trackedDeliveries, into: &snapshot)
        try loadParked(query, into: &snapshot)
        try loadOutcomes(query.outcomeKeys, into: &snapshot)
        try loadAged(query, into: &snapshot)
        return snapshot
    }

    /// Grouped by (app, delivery), so that the tokens of one delivery share IN lists.
    private func loadOutcomes(_ keys: Set<DeliveryOutcomeKey>, into snapshot: inout StateSnapshot) throws {
        for (pair, keys) in Dictionary(grouping: keys, by: { TrackingPair(deliveryId: $0.deliveryId, appId: $0.appId) }) {
            let head = [SQLiteValues.text(pair.appId), SQLiteValues.text(pair.deliveryId)]
            for list in SQLiteInList.split(keys.map { String($0.messageIndex) }) {
                let sql = """
                    SELECT message_index, outcome FROM delivery_outcomes
                    WHERE app_id = ? AND delivery_id = ? AND message_index IN \(list.placeholders)
                    """
                try forEachRow(sql: sql, arguments: StatementArguments(head + list.values)) { row in
                    let key = DeliveryOutcomeKey(appId: pair.appId, deliveryId: pair.deliveryId, messageIndex: try row.decode(atIndex: 0))
                    snapshot.outcomes[key] = try SQLiteValues.decode(DeliveryOutcome.self, row.decode(atIndex: 1),
                                                                     column: "delivery_outcomes.outcome")
                }
            }
        }
    }

    private func loadDeliveries(_ ids: Set<UUID>, into snapshot: inout StateSnapshot) throws {
        for list in SQLiteInList.split(ids.map(SQLiteValues.text)) {
            let sql = "SELECT \(TableCatalog.deliveries.columnList) FROM deliveries WHERE delivery_id IN \(list.placeholders)"
            try forEachRow(sql: sql, arguments: StatementArguments(list.values)) { row in
                let delivery = try DeliveryRow(sqlite: row)
                snapshot.deliveries[delivery.key] = delivery
            }
        }
    }

    /// Usually finds nothing: rows exist before their send only when the tracking topic ran
    /// ahead of the notification topic.
    private func loadTracked(_ ids: Set<UUID>, into snapshot: inout StateSnapshot) throws {
        for list in SQLiteInList.split(ids.map(SQLiteValues.text)) {
            let sql = """
                SELECT delivery_id, \(SQLiteRows.trackedColumns) FROM tracking_events
                WHERE delivery_id IN \(list.placeholders)
                """
            try forEachRow(sql: sql, arguments: StatementArguments(list.values)) { row in
                let deliveryId = try SQLiteValues.uuid(row.decode(atIndex: 0), column: "tracking_events.delivery_id")
                snapshot.trackedEvents[deliveryId, default: []].append(try SQLiteRows.tracked(row, from: 1))
            }
        }
    }

    /// The marks of the requested deliveries' pairs, and those of `parkedApps` older than
    /// `parkedBefore` (an index range per app: usually none).
    private func loadParked(_ query: StateQuery, into snapshot: inout StateSnapshot) throws {
        let add = { (row: Row, snapshot: inout StateSnapshot) throws in
            let pair = TrackingPair(deliveryId: try SQLiteValues.uuid(row.decode(atIndex: 0), column: "parked_tracking.delivery_id"),
                                    appId: try SQLiteValues.uuid(row.decode(atIndex: 1), column: "parked_tracking.app_id"),
                                    part: try row.decode(atIndex: 3))
            snapshot.parkedTracking[pair] = SQLiteValues.date(millis: try row.decode(atIndex: 2))
        }
        for list in SQLiteInList.split(query.parkedDeliveries.map(SQLiteValues.text)) {
            let sql = "SELECT delivery_id, app_id, parked_at, part FROM parked_tracking WHERE delivery_id IN \(list.placeholders)"
            try forEachRow(sql: sql, arguments: StatementArguments(list.values)) { try add($0, &snapshot) }
        }
        if let before = query.parkedBefore {
            for list in SQLiteInList.split(query.parkedApps.map(SQLiteValues.text)) {
                let sql = "SELECT delivery_id, app_id, parked_at, part FROM parked_tracking WHERE app_id IN \(list.placeholders) AND parked_at < ?"
                try forEachRow(sql: sql, arguments: StatementArguments(list.values + [SQLiteValues.millis(before)])) { try add($0, &snapshot) }
            }
        }
    }

    /// The statuses and acks of `parkedApps` older than `statusesBefore` and `acksBefore` (an
    /// index range per app).
    private func loadAged(_ query: StateQuery, into snapshot: inout StateSnapshot) throws {
        for list in SQLiteInList.split(query.parkedApps.map(SQLiteValues.text)) {
            if let before = query.statusesBefore {
                let sql = """
                    SELECT \(TableCatalog.registrationStatus.columnList) FROM registration_status
                    WHERE app_id IN \(list.placeholders) AND decided_at < ?
                    """
                try forEachRow(sql: sql, arguments: StatementArguments(list.values + [SQLiteValues.millis(before)])) { row in
                    snapshot.agedStatuses.append(try RegistrationStatusRow(sqlite: row))
                }
            }
            if let before = query.acksBefore {
                let sql = "SELECT \(TableCatalog.acks.columnList) FROM acks WHERE app_id IN \(list.placeholders) AND acked_at < ?"
                try forEachRow(sql: sql, arguments: StatementArguments(list.values + [SQLiteValues.millis(before)])) { row in
                    snapshot.agedAcks.append(try AckRow(sqlite: row))
                }
            }
        }
    }

    private func loadApps(_ appIds: Set<UUID>, into snapshot: inout StateSnapshot) throws {
        for list in SQLiteInList.split(appIds.map(SQLiteValues.text)) {
            let sql = "SELECT \(TableCatalog.apps.columnList) FROM apps WHERE app_id IN \(list.placeholders)"
            try forEachRow(sql: sql, arguments: StatementArguments(list.values)) { row in
                let app = try AppRow(sqlite: row)
                snapshot.apps[AppPart(app.appId, part: app.part)] = app
                snapshot.tokens[AppPart(app.appId, part: app.part)] = []
            }
        }
        // Only apps that exist have tokens worth asking for.
        for list in SQLiteInList.split(Set(snapshot.apps.keys.map(\.appId)).map(SQLiteValues.text)) {
            let sql = """
                SELECT \(TableCatalog.apiTokens.columnList) FROM api_tokens WHERE app_id IN \(list.placeholders)
                ORDER BY app_id, part, created_at, token_id
                """
            try forEachRow(sql: sql, arguments: StatementArguments(list.values)) { row in
                let token = try ApiTokenRow(sqlite: row)
                snapshot.tokens[AppPart(token.appId, part: token.part), default: []].append(token)
            }
        }
    }

    private func loadAdminTokens(_ ids: Set<UUID>, into snapshot: inout StateSnapshot) throws {
        for list in SQLiteInList.split(ids.map(SQLiteValues.text)) {
            let sql = "SELECT \(TableCatalog.adminTokens.columnList) FROM admin_tokens WHERE admin_token_id IN \(list.placeholders)"
            try forEachRow(sql: sql, arguments: StatementArguments(list.values)) { row in
                let token = try AdminTokenRow(sqlite: row)
                snapshot.adminTokens[token.adminTokenId] = token
            }
        }
    }

    private func loadDevices(_ keys: Set<DeviceKey>, into snapshot: inout StateSnapshot) throws {
        for (appId, keys) in Dictionary(grouping: keys, by: \.appId) {
            snapshot.add(devices: try deviceRows(appId: appId, where: "device_token", in: keys.map(\.deviceToken)))
        }
    }

    /// The users the loaded ones of these devices belong to.
    private func owners(of keys: Set<DeviceKey>, in snapshot: StateSnapshot) -> Set<UserKey> {
        Set(keys.compactMap { key in snapshot.devices[key].map { UserKey(appId: $0.appId, userId: $0.userId) } })
    }

    private func loadUsers(_ keys: Set<UserKey>, into snapshot: inout StateSnapshot) throws {
        snapshot.add(devices: try deviceRows(of: keys))
    }

    /// Every device of these users, and the pending counts `query` asks for among them: a part
    /// of a load that `SQLiteProjectionStore.load` reads on a connection of its own.
    func users(_ keys: Set<UserKey>, countingFor query: StateQuery) throws -> (devices: [DeviceRow], pendingCounts: [DeviceKey: Int]) {
        let rows = try deviceRows(of: keys)
        return (rows, try pendingCounts(of: rows.lazy.filter { query.countsPending(of: $0) }.map(\.key)))
    }

    private func deviceRows(of keys: Set<UserKey>) throws -> [DeviceRow] {
        var rows: [DeviceRow] = []
        for (appId, keys) in Dictionary(grouping: keys, by: \.appId) {
            rows.append(contentsOf: try deviceRows(appId: appId, where: "user_id", in: keys.map(\.userId)))
        }
        return rows
    }

    /// The app's devices whose `column` is one of `values`: read through SQLite's C API, each row
    /// straight into a `DeviceRow`, at about half the processor time of reading them through
    /// GRDB's `Row` (100,000 rows of a fan-out, docs/BENCHMARKS.md).
    private func deviceRows(appId: UUID, where column: String, in values: [String]) throws -> [DeviceRow] {
        var rows: [DeviceRow] = []
        for list in SQLiteInList.split(values) {
            let statement = SQLiteRawStatement(try db.cachedStatement(sql: """
                SELECT \(TableCatalog.devices.columnList) FROM devices
                WHERE app_id = ? AND \(column) IN \(list.placeholders)
                """))
            statement.bind(1, appId)
            for (index, value) in list.values.enumerated() { statement.bind(Int32(index + 2), value) }
            try statement.forEachRow(in: db) { rows.append(try DeviceRow(sqlite: statement, firstUUID: appId)) }
        }
        return rows
    }

    /// Counts the pending rows of every loaded device, however it was asked for: a few
    /// grouped counts per app and IN list, each a range of the pending primary key per token,
    /// so that a snapshot of 100,000 devices costs some 200 statements, not 100,000.
    private func loadPendingCounts(_ query: StateQuery, into snapshot: inout StateSnapshot) throws {
        guard !query.pendingCountDevices.isEmpty || !query.pendingCountUsers.isEmpty else { return }
        snapshot.pendingCounts = try pendingCounts(of: snapshot.devices.values.lazy.filter { query.countsPending(of: $0) }.map(\.key))
    }

    private func pendingCounts(of devices: some Sequence<DeviceKey>) throws -> [DeviceKey: Int] {
        var counts: [DeviceKey: Int] = [:]
        for (appId, keys) in Dictionary(grouping: devices, by: \.appId) {
            let app = SQLiteValues.text(appId)
            for list in SQLiteInList.split(keys.map(\.deviceToken)) {
                let sql = """
                    SELECT device_token, COUNT(*) FROM pending_notifications
                    WHERE app_id = ? AND device_token IN \(list.placeholders)
                    GROUP BY device_token
                    """
                try forEachRow(sql: sql, arguments: StatementArguments([app] + list.values)) { row in
                    counts[try DeviceKey(appId: appId, deviceToken: row.decode(atIndex: 0))] = try row.decode(atIndex: 1)
                }
            }
        }
        return counts
    }

    /// Keys are grouped by notification: a managed send asks for one notification on many
    /// devices, which then share IN lists; acks ask for a few keys only.
    private func loadPending(_ keys: Set<PendingKey>, into snapshot: inout StateSnapshot) throws {
        try forEachRow(of: keys, select: "SELECT \(TableCatalog.pendingNotifications.columnList) FROM pending_notifications") { _, row in
            let pending = try PendingNotificationRow(sqlite: row)
            snapshot.pending[pending.key] = pending
        }
    }

    /// Runs `select` (a table keyed by app, notification and device token) for `keys`, grouped
    /// by notification so that the tokens of one notification share IN lists.
    private func forEachRow(of keys: Set<PendingKey>, select: String, _ body: (NotificationKey, Row) throws -> Void) throws {
        let byNotification = Dictionary(grouping: keys) { NotificationKey(appId: $0.appId, notificationId: $0.notificationId) }
        for (notification, keys) in byNotification {
            let fixed = [SQLiteValues.text(notification.appId), notification.notificationId]
            for list in SQLiteInList.split(keys.map(\.deviceToken)) {
                let sql = "\(select) WHERE app_id = ? AND notification_id = ? AND device_token IN \(list.placeholders)"
                try forEachRow(sql: sql, arguments: StatementArguments(fixed + list.values)) { try body(notification, $0) }
            }
        }
    }

    private func forEachRow(sql: String, arguments: StatementArguments, _ body: (Row) throws -> Void) throws {
        let statement = try db.cachedStatement(sql: sql)
        let rows = try Row.fetchCursor(statement, arguments: arguments)
        while let row = try rows.next() {
            try body(row)
        }
    }
}
