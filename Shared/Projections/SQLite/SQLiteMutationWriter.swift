import Foundation
import ProjectionChangelog
import Projections
import GRDB

/// Writes one commit's mutations inside its write transaction: their `WritePlan`, table by
/// table, as PostgreSQL writes it.
///
/// This is the processor's hot path: each table's statement is looked up once per commit
/// (GRDB's statement cache) and the arguments are bound directly, so a row costs one
/// `sqlite3_step`. A key written several times in a commit is written once.
struct SQLiteMutationWriter {
    let db: Database

    func write(_ plan: WritePlan) throws {
        try put(plan.apps.values)
        try put(plan.tokens.values)
        try writeDevices(plan.devices.values)
        try writeStatuses(plan.statuses.values)
        try writeOutbox(plan)
        try writePending(plan)
        try writeAcks(plan.acks.values)
        try put(plan.deliveries.values)
        try put(plan.outcomes.values)
        for phase in plan.phases {
            try writeTracking(phase)
        }
        for park in plan.parks.values {
            if let at = park.at {
                try SQLiteParkedTracking.park(park.pair, at: at, in: db)
            } else {
                try SQLiteParkedTracking.unpark(park.pair, in: db)
            }
        }
        for (key, row) in plan.deadLetters {
            if let row { try SQLiteDeadLetters.put(row, in: db) } else { try SQLiteDeadLetters.delete(key, in: db) }
        }
        try put(plan.adminTokens.values)
        try put(plan.audit.values)
        try put(plan.idempotencyKeys.values)
        try writeHeld(plan.heldPushes.values)
        try put(plan.userSettings.values)
        try writeCounted(plan.countedSends.values)
    }

    private func writeCounted(_ counted: [(key: CountedSendKey, row: CountedSendRow?)]) throws {
        let deleted = counted.filter { $0.row == nil }
        if !deleted.isEmpty {
            let delete = try raw(TableCatalog.countedSends.sqliteDeleteByKey)
            for (key, _) in deleted {
                delete.bind(1, key.appId); delete.bind(2, Int64(key.part)); delete.bind(3, key.delivery)
                try delete.run(in: db)
            }
        }
        try put(counted.compactMap(\.row))
    }

    private func writeHeld(_ held: [(key: HeldPushKey, row: HeldPushRow?)]) throws {
        let deleted = held.filter { $0.row == nil }
        if !deleted.isEmpty {
            let delete = try raw(TableCatalog.heldPushes.sqliteDeleteByKey)
            for (key, _) in deleted {
                delete.bind(1, key.delivery.appId); delete.bind(2, key.delivery.deliveryId); delete.bind(3, Int64(key.delivery.part))
                delete.bind(4, key.deviceToken)
                try delete.run(in: db)
            }
        }
        try put(held.compactMap(\.row))
    }

    /// Writes whole rows of one table; by default each replaces the row of its key
    /// (`CatalogTable.sqliteUpsert`).
    private func put<Row: CatalogRow>(_ rows: [Row], _ sql: @autoclosure () -> String = Row.table.sqliteUpsert) throws {
        guard !rows.isEmpty else { return }
        let statement = try raw(sql())
        for row in rows {
            try row.bind(to: statement)
            try statement.run(in: db)
        }
    }

    /// The cached statement of `sql`, to be run through the C API (`SQLiteRawStatement`).
    private func raw(_ sql: String) throws -> SQLiteRawStatement {
        SQLiteRawStatement(try db.cachedStatement(sql: sql))
    }

    private func writeDevices(_ devices: [(key: DeviceKey, row: DeviceRow?)]) throws {
        let deleted = devices.filter { $0.row == nil }
        if !deleted.isEmpty {
            // The device row only: its pending rows go with an explicit `.clearPending`.
            let delete = try raw(TableCatalog.devices.sqliteDeleteByKey)
            for (key, _) in deleted {
                delete.bind(1, key.appId); delete.bind(2, key.deviceToken)
                try delete.run(in: db)
            }
        }
        try put(devices.compactMap(\.row))
    }

    private func writeStatuses(_ statuses: [(id: UUID, row: RegistrationStatusRow?)]) throws {
        let deleted = statuses.filter { $0.row == nil }
        if !deleted.isEmpty {
            let delete = try raw(TableCatalog.registrationStatus.sqliteDeleteByKey)
            for (id, _) in deleted {
                delete.bind(1, id)
                try delete.run(in: db)
            }
        }
        try put(statuses.compactMap(\.row))
    }

    private func writeAcks(_ acks: [(key: PendingKey, row: AckRow?)]) throws {
        let deleted = acks.filter { $0.row == nil }
        if !deleted.isEmpty {
            let delete = try raw(TableCatalog.acks.sqliteDeleteByKey)
            for (key, _) in deleted {
                delete.bind(1, key.appId); delete.bind(2, key.deviceToken); delete.bind(3, key.notificationId)
                try delete.run(in: db)
            }
        }
        try put(acks.compactMap(\.row))
    }

    private func writeOutbox(_ plan: WritePlan) throws {
        let (enqueued, restored) = plan.outboxByKind
        // A job id derives from the command that caused it: a replayed command finds its job and
        // leaves it (and its delivery progress) alone.
        try put(enqueued, TableCatalog.outbox.sqliteInsertUnlessStored)
        // Every column, the lease released; the attempts numbered above the restored count go.
        try put(restored.map(\.job), TableCatalog.outbox.sqliteUpsert + ", lease_until = NULL")
        guard !restored.isEmpty else { return }
        let attempts = try raw("DELETE FROM outbox_attempts WHERE job_id = ? AND attempt > ?")
        for (job, lowest) in restored {
            attempts.bind(1, job.id); attempts.bind(2, lowest)
            try attempts.run(in: db)
        }
    }

    private func writePending(_ plan: WritePlan) throws {
        if !plan.pendingCleared.isEmpty {
            let clear = try raw("DELETE FROM pending_notifications WHERE app_id = ? AND device_token = ?")
            for key in plan.pendingCleared.values {
                clear.bind(1, key.appId); clear.bind(2, key.deviceToken)
                try clear.run(in: db)
            }
        }
        if !plan.pendingDeleted.isEmpty {
            let delete = try raw(TableCatalog.pendingNotifications.sqliteDeleteByKey)
            for key in plan.pendingDeleted.values {
                delete.bind(1, key.appId); delete.bind(2, key.deviceToken); delete.bind(3, key.notificationId)
                try delete.run(in: db)
            }
        }
        try put(plan.pendingPuts.values)
    }

    private func writeTracking(_ phase: WritePlan.TrackingPhase) throws {
        if !phase.drops.isEmpty {
            let drop = try raw("DELETE FROM tracking_events WHERE delivery_id = ? AND app_id = ? AND part = ?")
            for pair in phase.drops {
                drop.bind(1, pair.deliveryId); drop.bind(2, pair.appId); drop.bind(3, Int64(pair.part))
                try drop.run(in: db)
            }
        }
        if !phase.deletes.isEmpty {
            let delete = try raw(TableCatalog.trackingEvents.sqliteDeleteByKey)
            for key in phase.deletes {
                delete.bind(1, key.deliveryId); delete.bind(2, key.appId); delete.bind(3, Int64(key.part))
                delete.bind(4, Int64(key.action)); delete.bind(5, key.messageIndex)
                try delete.run(in: db)
            }
        }
        // Rows go in statements of `trackingRowsPerStatement`; the remainder one by one.
        let counts = phase.reports.values
        var start = 0
        if counts.count >= Self.trackingRowsPerStatement {
            let many = try raw(Self.countTrackingManySQL)
            while counts.count - start >= Self.trackingRowsPerStatement {
                for (i, count) in counts[start..<(start + Self.trackingRowsPerStatement)].enumerated() {
                    bind(count, to: many, from: Int32(1 + 6 * i))
                }
                try many.run(in: db)
                start += Self.trackingRowsPerStatement
            }
        }
        guard start < counts.count else { return }
        let one = try raw(Self.countTrackingOneSQL)
        for count in counts[start...] {
            bind(count, to: one, from: 1)
            try one.run(in: db)
        }
    }

    private func bind(_ count: (key: WritePlan.TrackingKey, reports: Int64), to statement: SQLiteRawStatement, from index: Int32) {
        statement.bind(index, count.key.deliveryId); statement.bind(index + 1, count.key.appId)
        statement.bind(index + 2, Int64(count.key.action)); statement.bind(index + 3, count.key.messageIndex)
        statement.bind(index + 4, count.reports - 1); statement.bind(index + 5, Int64(count.key.part))
    }

    /// Multi-row inserts cost far less per row than one statement per row.
    static let trackingRowsPerStatement = 64

    /// A first report stores the row; every later one of the same (device, action) is a repeat.
    /// `excluded.repeats` is the phase's reports minus one.
    private static let countTrackingOneSQL = countTrackingSQL(rows: 1)
    private static let countTrackingManySQL = countTrackingSQL(rows: trackingRowsPerStatement)

    private static func countTrackingSQL(rows: Int) -> String {
        """
        INSERT INTO tracking_events (\(TableCatalog.trackingEvents.columnList)) VALUES
        \(Array(repeating: "(?, ?, ?, ?, ?, ?)", count: rows).joined(separator: ", "))
        ON CONFLICT (delivery_id, app_id, part, action, message_index) DO UPDATE SET repeats = repeats + excluded.repeats + 1
        """
    }
}
