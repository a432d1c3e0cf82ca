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
        for park in rows.parks { try SQLiteParkedTracking.park(park.pair, at: park.at, in: db) }
        for letter in rows.deadLetters { try SQLiteDeadLetters.put(letter, in: db) }
        try insert(rows.apps)
        try insert(rows.tokens)
        try insert(rows.devices)
        try insert(rows.statuses)
        try insert(rows.outbox)
        try insert(rows.pending)
        try insert(rows.acks)
        try insert(rows.deliveries)
        try insert(rows.outcomes)
        try insert(rows.tracking)
        try insert(rows.adminTokens)
        try insert(rows.audit)
        try insert(rows.idempotencyKeys)
        try insert(rows.heldPushes)
        try insert(rows.userSettings)
        try insert(rows.countedSends)
    }

    /// Inserts `rows` into their table.
    private func insert<Row: CatalogRow>(_ rows: [Row]) throws {
        let table = Row.table
        let columns = table.columns.count
        func statement(rows: Int) throws -> SQLiteRawStatement {
            let values = "(" + Array(repeating: "?", count: columns).joined(separator: ", ") + ")"
            let sql = "INSERT INTO \(table.name) (\(table.columnList)) VALUES " + Array(repeating: values, count: rows).joined(separator: ", ")
            return SQLiteRawStatement(try db.cachedStatement(sql: sql))
        }
        var start = 0
        if rows.count >= Self.rowsPerStatement {
            let many = try statement(rows: Self.rowsPerStatement)
            while rows.count - start >= Self.rowsPerStatement {
                for i in 0..<Self.rowsPerStatement { try rows[start + i].bind(to: many, from: Int32(1 + i * columns)) }
                try many.run(in: db)
                start += Self.rowsPerStatement
            }
        }
        guard start < rows.count else { return }
        let one = try statement(rows: 1)
        for row in rows[start...] {
            try row.bind(to: one)
            try one.run(in: db)
        }
    }
}
