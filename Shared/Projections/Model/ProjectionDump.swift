import Foundation

/// The deterministic text dump of the projected tables that every backend produces, for
/// comparing stores across runs (replay, scale-out) and across backends: the same commits in
/// the same order give the same text in SQLite and PostgreSQL.
///
/// One line per row, tables in a fixed order, rows by primary key in byte order,
/// `column=value` pairs with strings quoted and escaped so that no value can break a line.
/// Outbox jobs appear without their delivery progress, and offsets and their event times not at
/// all: they legitimately differ between runs that built the same state (a processor's own
/// progress marks take their event time from its clock).
package enum ProjectionDump {
    /// A column value as the dump shows it. Booleans are integers (0, 1), UUIDs and dates are
    /// what the stores keep (lower-case text, integer milliseconds).
    package enum Value {
        case null
        case integer(Int64)
        case real(Double)
        case text(String)
        case bytes(Data)
    }

    /// The dumped tables, in dump order: the column list and the primary key each is ordered by.
    /// Both backends run these as they are (PostgreSQL's text columns compare bytewise, as
    /// SQLite's do).
    package static let tables: [(table: String, columns: String, orderBy: String)] = [
        ("apps", "app_id, org_id, name, callback_url, callback_headers, webhook_retries, created_at, push_credentials", "app_id"),
        ("api_tokens", "token_id, app_id, token_hash, revoked, created_at, scopes", "token_id"),
        ("devices", "app_id, device_token, user_id, platform, version, updated_at", "app_id, device_token"),
        ("registration_status", "request_id, app_id, status, failure_reason, decided_at", "request_id"),
        ("pending_notifications", "app_id, device_token, notification_id, delivery_id, sent_at, text, business_id",
         "app_id, device_token, notification_id"),
        ("acks", "app_id, device_token, notification_id, business_id, acked_at", "app_id, device_token, notification_id"),
        ("deliveries", "app_id, delivery_id, kind, managed, tracking, sent, created_at, delivered, failed, unregistered, idempotency_key, request_hash, duplicates, conflicts", "app_id, delivery_id"),
        ("delivery_outcomes", "app_id, delivery_id, message_index, device_token, outcome, reason, reported_at",
         "app_id, delivery_id, message_index"),
        ("tracking_events", "delivery_id, app_id, action, message_index, repeats", "delivery_id, app_id, action, message_index"),
        ("parked_tracking", "delivery_id, app_id, parked_at", "delivery_id, app_id"),
        ("outbox", "id, kind, app_id, url, headers, body, max_attempts", "id"),
        ("admin_tokens", "admin_token_id, name, token_hash, revoked, created_at, revoked_at", "admin_token_id"),
        ("audit_log", "command_id, at, type, app_id, actor_id, actor_name, request_id, outcome, reason, changes", "command_id"),
        ("idempotency_keys", "scope, idempotency_key, resource_id, request_hash, first_at", "scope, idempotency_key"),
    ]

    /// Appends one row's line to `text`.
    package static func appendLine(table: String, _ columns: some Sequence<(String, Value)>, to text: inout String) {
        text += table
        for (column, value) in columns {
            text += " \(column)=\(render(value))"
        }
        text += "\n"
    }

    package static func render(_ value: Value) -> String {
        switch value {
        case .null: "null"
        case .integer(let n): String(n)
        case .real(let d): String(d)
        case .text(let s): quote(s)
        // Bodies are JSON text; anything that is not UTF-8 is shown as hex rather than mangled.
        case .bytes(let data): String(validating: data, as: UTF8.self).map(quote)
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
