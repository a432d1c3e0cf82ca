import Foundation

/// Takes a row's column values in catalog order. Each store writes them its own way: SQLite binds
/// them to a statement, PostgreSQL collects them into typed arrays for one `unnest` statement or
/// writes `COPY` text. Dates are kept as integer milliseconds (`ProjectionValues.millis`).
public protocol ColumnWriter {
    mutating func null()
    mutating func uuid(_ value: UUID)
    mutating func text(_ value: String)
    mutating func int(_ value: Int64)
    mutating func bool(_ value: Bool)
    mutating func millis(_ value: Date)
    mutating func bytes(_ value: Data)
}

extension ColumnWriter {
    @inlinable public mutating func uuid(_ value: UUID?) { if let value { uuid(value) } else { null() } }
    @inlinable public mutating func text(_ value: String?) { if let value { text(value) } else { null() } }
    @inlinable public mutating func int(_ value: Int64?) { if let value { int(value) } else { null() } }
    @inlinable public mutating func int(_ value: Int) { int(Int64(value)) }
    @inlinable public mutating func int(_ value: Int?) { int(value.map(Int64.init)) }
    @inlinable public mutating func millis(_ value: Date?) { if let value { millis(value) } else { null() } }
}

/// Gives a row's column values in catalog order, read from a stored row.
public protocol ColumnReader {
    /// The table and column being read, for errors (`apps.name`).
    var column: String { get }
    /// Whether the next column is NULL; a NULL is read by this call, any other value is not.
    mutating func nextIsNull() throws -> Bool
    mutating func uuid() throws -> UUID
    mutating func text() throws -> String
    mutating func int() throws -> Int64
    mutating func bool() throws -> Bool
    mutating func millis() throws -> Date
    mutating func bytes() throws -> Data
}

extension ColumnReader {
    @inlinable public mutating func optionalUUID() throws -> UUID? { try nextIsNull() ? nil : uuid() }
    @inlinable public mutating func optionalText() throws -> String? { try nextIsNull() ? nil : text() }
    @inlinable public mutating func optionalInt() throws -> Int64? { try nextIsNull() ? nil : int() }
    @inlinable public mutating func optionalMillis() throws -> Date? { try nextIsNull() ? nil : millis() }
    @inlinable public mutating func intValue() throws -> Int { Int(try int()) }

    /// An enumeration stored as its raw text.
    public mutating func raw<T: RawRepresentable>(_: T.Type) throws -> T where T.RawValue == String {
        let name = column
        return try ProjectionValues.decode(T.self, try text(), column: name)
    }

    public mutating func optionalRaw<T: RawRepresentable>(_: T.Type) throws -> T? where T.RawValue == String {
        try nextIsNull() ? nil : raw(T.self)
    }

    /// A header map stored as sorted-key JSON.
    public mutating func headers() throws -> [String: String] {
        let name = column
        return try ProjectionValues.headers(json: try text(), column: name)
    }
}

/// A row type of a catalog table: it writes and reads its columns in the order of its
/// `TableCatalog` entry, in a file beside it (`…Rows+Columns.swift`). Every store's statements
/// for plain rows, their reads (`StoreRead`), the `COPY` text of a restore and the round trip
/// tests go through these two.
public protocol CatalogRow: ReadRow {
    static var table: CatalogTable { get }
    func writeColumns(to columns: inout some ColumnWriter) throws
}
