import Foundation
import Projections

/// A row's catalog columns in a changelog entry: their count, then each value as the entry
/// writes that kind of field — UUIDs their 16 bytes, text and bytes a length and their bytes,
/// integers zig-zag, flags a byte, dates the bit pattern of their `timeIntervalSince1970` — with
/// a presence byte before each column the catalog lets be NULL.
///
/// An entry written before a column existed has fewer columns: the missing ones read as NULL, so
/// a column added later is nullable (or its row type gives a default for NULL). An entry with more
/// columns than this code knows is refused rather than misread.
struct ChangelogColumns: ColumnWriter {
    var writer = ChangelogWriter()
    let table: CatalogTable
    private var index = 0

    init(table: CatalogTable) {
        self.table = table
    }

    /// A value follows: its presence byte, where the column may be NULL.
    private mutating func present() {
        if table.columns[index].nullable { writer.byte(1) }
        index += 1
    }

    mutating func null() {
        precondition(table.columns[index].nullable, "\(table.name).\(table.columns[index].name) cannot be NULL")
        writer.byte(0)
        index += 1
    }

    mutating func uuid(_ value: UUID) { present(); writer.uuid(value) }
    mutating func text(_ value: String) { present(); writer.string(value) }
    mutating func int(_ value: Int64) { present(); writer.int(value) }
    mutating func bool(_ value: Bool) { present(); writer.bool(value) }
    mutating func millis(_ value: Date) { present(); writer.date(value) }
    mutating func bytes(_ value: Data) { present(); writer.data(value) }

    /// Reads what `ChangelogColumns` wrote.
    struct Reader: ColumnReader {
        var reader: ChangelogReader
        let table: CatalogTable
        /// The columns the entry holds.
        var count = 0
        private(set) var index = 0
        /// Whether the current column's presence byte was read (and said a value follows).
        private var presenceRead = false

        init(reader: ChangelogReader, table: CatalogTable) {
            self.reader = reader
            self.table = table
        }

        var column: String { table.columnName(at: index) }

        mutating func nextIsNull() throws -> Bool {
            if index >= count {
                index += 1
                return true
            }
            guard index < table.columns.count, table.columns[index].nullable else { return false }
            if try reader.bool() {
                presenceRead = true
                return false
            }
            index += 1
            return true
        }

        /// Before a value: the entry must hold the column, and a nullable one must say a value follows.
        private mutating func value() throws {
            guard index < count else { throw ChangelogFormatError("\(column) is missing") }
            if index < table.columns.count, table.columns[index].nullable, !presenceRead {
                guard try reader.bool() else { throw ChangelogFormatError("\(column) is NULL") }
            }
            presenceRead = false
            index += 1
        }

        mutating func uuid() throws -> UUID { try value(); return try reader.uuid() }
        mutating func text() throws -> String { try value(); return try reader.string() }
        mutating func int() throws -> Int64 { try value(); return try reader.int() }
        mutating func bool() throws -> Bool { try value(); return try reader.bool() }
        mutating func millis() throws -> Date { try value(); return try reader.date() }
        mutating func bytes() throws -> Data { try value(); return try reader.data() }
    }
}
