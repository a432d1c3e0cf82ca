import Foundation
import ProjectionChangelog
import Projections
import Logging
import PostgresNIO
import WireCodec

/// `ProjectionDump`'s text, read from PostgreSQL, byte for byte what SQLite's store dumps for
/// the same content: UUIDs as lower-case text, booleans as 0 and 1, bodies as SQLite shows its
/// blobs, key order by `uuid` and `COLLATE "C"` bytes.
enum PostgresDump {
    static func dump(on connection: PostgresConnection, logger: Logger) async throws -> String {
        var text = ""
        for (table, columns, orderBy) in ProjectionDump.tables {
            let rows = try await connection.query(
                PostgresQuery(unsafeSQL: "SELECT \(columns) FROM \(table) ORDER BY \(orderBy)"), logger: logger)
            for try await row in rows {
                ProjectionDump.appendLine(table: table, try row.map { cell in (cell.columnName, try value(cell)) }, to: &text)
            }
        }
        return text
    }

    private static func value(_ cell: PostgresCell) throws -> ProjectionDump.Value {
        guard cell.bytes != nil else { return .null }
        switch cell.dataType {
        case .int2, .int4, .int8: return .integer(try cell.decode(Int64.self))
        case .bool: return .integer(try cell.decode(Bool.self) ? 1 : 0)
        case .uuid: return .text(try cell.decode(UUID.self).lowercasedString)
        case .bytea: return .bytes(try cell.decode(Data.self))
        case .float4, .float8: return .real(try cell.decode(Double.self))
        default: return .text(try cell.decode(String.self))
        }
    }
}
