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

    /// The dumped tables, in dump order: the columns shown and the primary key each is ordered
    /// by (`TableCatalog`). Both backends run these as they are (PostgreSQL's text columns
    /// compare bytewise, as SQLite's do).
    package static let tables: [(table: String, columns: String, orderBy: String)] =
        TableCatalog.tables.map { ($0.name, $0.dumpedColumnList, $0.keyList) }

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
