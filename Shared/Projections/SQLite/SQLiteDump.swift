import Foundation
import GRDB

/// The deterministic text dump of the projected tables, for comparing stores across runs
/// (replay, scale-out): same commits in the same order give the same text.
///
/// One line per row, tables in a fixed order, rows by primary key, `column=value` pairs with
/// strings quoted and escaped so that no value can break a line. Outbox jobs appear without
/// their delivery progress, and offsets not at all: both legitimately differ between runs
/// that built the same state.
enum SQLiteDump {
    private static let queries: [(table: String, sql: String)] = [
        ("apps", "SELECT \(SQLiteRows.appColumns) FROM apps ORDER BY app_id"),
        ("api_tokens", "SELECT \(SQLiteRows.tokenColumns) FROM api_tokens ORDER BY token_id"),
        ("devices", "SELECT \(SQLiteRows.deviceColumns) FROM devices ORDER BY app_id, device_token"),
        ("registration_status", "SELECT \(SQLiteRows.statusColumns) FROM registration_status ORDER BY request_id"),
        ("pending_notifications", """
            SELECT \(SQLiteRows.pendingColumns) FROM pending_notifications ORDER BY app_id, device_token, notification_id
            """),
        ("acks", "SELECT \(SQLiteRows.ackColumns) FROM acks ORDER BY app_id, device_token, notification_id"),
        ("deliveries", "SELECT \(SQLiteRows.deliveryColumns) FROM deliveries ORDER BY app_id, delivery_id"),
        ("tracking_events", """
            SELECT delivery_id, \(SQLiteRows.trackedColumns) FROM tracking_events
            ORDER BY delivery_id, app_id, action, message_index
            """),
        ("outbox", "SELECT id, kind, app_id, url, headers, body, max_attempts FROM outbox ORDER BY id"),
    ]

    static func dump(_ db: Database) throws -> String {
        var text = ""
        for (table, sql) in queries {
            let rows = try Row.fetchCursor(db, sql: sql)
            while let row = try rows.next() {
                text += table
                for (column, value) in row {
                    text += " \(column)=\(render(value))"
                }
                text += "\n"
            }
        }
        return text
    }

    private static func render(_ value: DatabaseValue) -> String {
        switch value.storage {
        case .null: "null"
        case .int64(let n): String(n)
        case .double(let d): String(d)
        case .string(let s): quote(s)
        // Bodies are JSON text; anything that is not UTF-8 is shown as hex rather than mangled.
        case .blob(let data): String(validating: data, as: UTF8.self).map(quote)
            ?? "0x" + data.map { String(format: "%02x", $0) }.joined()
        }
    }

    private static func quote(_ s: String) -> String {
        var out = "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20 || scalar.value == 0x7f:
                out += String(format: "\\u%04x", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
