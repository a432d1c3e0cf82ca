import Foundation
import ProjectionChangelog
import Projections
import GRDB

/// `ProjectionDump`'s text, read from SQLite: one read of each table in key order.
enum SQLiteDump {
    static func dump(_ db: Database) throws -> String {
        var text = ""
        for (table, columns, orderBy) in ProjectionDump.tables {
            let rows = try Row.fetchCursor(db, sql: "SELECT \(columns) FROM \(table) ORDER BY \(orderBy)")
            while let row = try rows.next() {
                ProjectionDump.appendLine(table: table, row.map { ($0, value($1)) }, to: &text)
            }
        }
        return text
    }

    private static func value(_ value: DatabaseValue) -> ProjectionDump.Value {
        switch value.storage {
        case .null: .null
        case .int64(let n): .integer(n)
        case .double(let d): .real(d)
        case .string(let s): .text(s)
        case .blob(let data): .bytes(data)
        }
    }
}
