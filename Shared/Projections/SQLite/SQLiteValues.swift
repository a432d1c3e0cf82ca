import Contracts
import Foundation
import ProjectionChangelog
import Projections
import WireCodec

/// How model values become SQLite column values and back.
///
/// UUIDs are lower-case text; dates, headers and enumerations as in every backend
/// (`ProjectionValues`).
enum SQLiteValues {
    static func text(_ id: UUID) -> String {
        id.lowercasedString
    }

    static func uuid(_ text: String, column: String) throws -> UUID {
        guard let id = UUID(parsing: text) else {
            throw ProjectionStoreError.database("column \(column) holds '\(text)', which is not a UUID")
        }
        return id
    }

    static func millis(_ date: Date) -> Int64 { ProjectionValues.millis(date) }

    static func date(millis: Int64) -> Date { ProjectionValues.date(millis: millis) }

    static func decode<T: RawRepresentable>(_ type: T.Type, _ raw: T.RawValue, column: String) throws -> T {
        try ProjectionValues.decode(type, raw, column: column)
    }
}
