import Foundation
import ProjectionChangelog
import Projections
import GRDB

/// Writes a restore's final rows (`RestoredRows`) into the empty tables `beginRestore`
/// prepared: plain inserts in key order, `rowsPerStatement` rows to a statement, so a row costs
/// a B-tree append and no conflict check (docs/ARCHITECTURE.md#changelog-and-restore).
struct SQLiteRestoreLoader {
    let db: Database
    /// Multi-row statements cost far less per row than one statement per row.
    static let rowsPerStatement = 50

    func load(_ rows: RestoredRows) throws {
        // Few rows: written as the processor writes them.
        var writer = SQLiteMutationWriter(db: db)
        for app in rows.apps { try writer.apply(.upsertApp(app)) }
        for token in rows.tokens { try writer.apply(.upsertApiToken(token)) }
        for job in rows.outbox { try writer.apply(.enqueueOutbox(job)) }
        for park in rows.parks { try writer.apply(.parkTracking(park.pair, at: park.at)) }
        for letter in rows.deadLetters { try writer.apply(.putDeadLetter(letter)) }
        for token in rows.adminTokens { try writer.apply(.upsertAdminToken(token)) }
        for entry in rows.audit { try writer.apply(.putAuditEntry(entry)) }
        for row in rows.idempotencyKeys { try writer.apply(.putIdempotencyKey(row)) }

        try insert(rows.devices, into: "devices", TableCatalog.devices.columnList) { $0.bind($2, from: $1) }
        try insert(rows.statuses, into: "registration_status", TableCatalog.registrationStatus.columnList) { $0.bind($2, from: $1) }
        try insert(rows.pending, into: "pending_notifications", TableCatalog.pendingNotifications.columnList) { $0.bind($2, from: $1) }
        try insert(rows.acks, into: "acks", TableCatalog.acks.columnList) { $0.bind($2, from: $1) }
        try insert(rows.deliveries, into: "deliveries", TableCatalog.deliveries.columnList) { $0.bind($2, from: $1) }
        try insert(rows.outcomes, into: "delivery_outcomes", TableCatalog.deliveryOutcomes.columnList) { $0.bind($2, from: $1) }
        try insert(rows.tracking, into: "tracking_events", "delivery_id, \(SQLiteRows.trackedColumns)") { s, start, row in
            s.bind(start, row.deliveryId); s.bind(start + 1, row.appId); s.bind(start + 2, Int64(row.action))
            s.bind(start + 3, row.messageIndex); s.bind(start + 4, row.repeats)
        }
    }

    /// Inserts `rows` into `table`: `bind` binds one row's values from the parameter it is given.
    private func insert<Row>(_ rows: [Row], into table: String, _ columnList: String,
                             bind: (SQLiteRawStatement, Int32, Row) -> Void) throws {
        let columns = columnList.split(separator: ",").count
        func statement(rows: Int) throws -> SQLiteRawStatement {
            let values = "(" + Array(repeating: "?", count: columns).joined(separator: ", ") + ")"
            let sql = "INSERT INTO \(table) (\(columnList)) VALUES " + Array(repeating: values, count: rows).joined(separator: ", ")
            return SQLiteRawStatement(try db.cachedStatement(sql: sql))
        }
        var start = 0
        if rows.count >= Self.rowsPerStatement {
            let many = try statement(rows: Self.rowsPerStatement)
            while rows.count - start >= Self.rowsPerStatement {
                for i in 0..<Self.rowsPerStatement { bind(many, Int32(1 + i * columns), rows[start + i]) }
                try many.run(in: db)
                start += Self.rowsPerStatement
            }
        }
        guard start < rows.count else { return }
        let one = try statement(rows: 1)
        for row in rows[start...] {
            bind(one, 1, row)
            try one.run(in: db)
        }
    }
}
