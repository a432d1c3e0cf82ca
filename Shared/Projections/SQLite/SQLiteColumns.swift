import Foundation
import GRDB
import GRDBSQLite
import Projections

/// Binds a row's columns to a statement's parameters, from `index` on, as SQLite keeps them:
/// UUIDs as lower-case text, dates as milliseconds, flags as 0/1.
struct SQLiteColumnBinder: ColumnWriter {
    let statement: SQLiteRawStatement
    var index: Int32

    init(_ statement: SQLiteRawStatement, from index: Int32 = 1) {
        self.statement = statement
        self.index = index
    }

    mutating func null() { statement.bindNull(index); index += 1 }
    mutating func uuid(_ value: UUID) { statement.bind(index, value); index += 1 }
    mutating func text(_ value: String) { statement.bind(index, value); index += 1 }
    mutating func int(_ value: Int64) { statement.bind(index, value); index += 1 }
    mutating func bool(_ value: Bool) { statement.bind(index, value); index += 1 }
    mutating func millis(_ value: Date) { statement.bind(index, value); index += 1 }
    mutating func bytes(_ value: Data) { statement.bind(index, value); index += 1 }
}

/// Reads a row's columns from a GRDB row that selected its table's `columnList`.
struct SQLiteRowColumns: ColumnReader {
    let row: Row
    let table: CatalogTable
    private(set) var index: Int

    init(_ row: Row, _ table: CatalogTable, from index: Int = 0) {
        self.row = row
        self.table = table
        self.index = index
    }

    var column: String { table.columnName(at: index) }

    mutating func nextIsNull() throws -> Bool {
        guard row.hasNull(atIndex: index) else { return false }
        index += 1
        return true
    }

    mutating func uuid() throws -> UUID { let name = column; return try SQLiteValues.uuid(next(), column: name) }
    mutating func text() throws -> String { try next() }
    mutating func int() throws -> Int64 { try next() }
    mutating func bool() throws -> Bool { try next() }
    mutating func millis() throws -> Date { SQLiteValues.date(millis: try next()) }
    mutating func bytes() throws -> Data { try next() }

    private mutating func next<T: DatabaseValueConvertible>() throws -> T {
        defer { index += 1 }
        return try row.decode(atIndex: index)
    }
}

/// Reads a row's columns from the current row of a statement run through SQLite's C API (every
/// `StoreRead`). `firstUUID`: the value of the first column when the query selected on it (a
/// send's devices are all of one app), which spares parsing its text on every row.
struct SQLiteStatementColumns: ColumnReader {
    let statement: SQLiteRawStatement
    let columns: ReadColumns
    let firstUUID: UUID?
    private(set) var index: Int32 = 0

    init(_ statement: SQLiteRawStatement, _ columns: ReadColumns, firstUUID: UUID? = nil) {
        self.statement = statement
        self.columns = columns
        self.firstUUID = firstUUID
    }

    var column: String { columns.name(at: Int(index)) }

    mutating func nextIsNull() throws -> Bool {
        guard statement.isNull(index) else { return false }
        index += 1
        return true
    }

    mutating func uuid() throws -> UUID {
        defer { index += 1 }
        if index == 0, let firstUUID { return firstUUID }
        guard let id = statement.uuid(index) else { return try SQLiteValues.uuid(statement.text(index), column: column) }
        return id
    }

    mutating func text() throws -> String { defer { index += 1 }; return statement.text(index) }
    mutating func int() throws -> Int64 { defer { index += 1 }; return statement.int64(index) }
    mutating func bool() throws -> Bool { defer { index += 1 }; return statement.int64(index) != 0 }
    mutating func millis() throws -> Date { defer { index += 1 }; return SQLiteValues.date(millis: statement.int64(index)) }
    mutating func bytes() throws -> Data { defer { index += 1 }; return statement.blob(index) }
}

extension CatalogRow {
    /// A row of `Self.table` that a query selected as its `columnList`.
    init(sqlite row: Row) throws {
        var columns = SQLiteRowColumns(row, Self.table)
        try self.init(columns: &columns)
    }

    /// Binds the row's columns to `statement` from parameter `index` on.
    func bind(to statement: SQLiteRawStatement, from index: Int32 = 1) throws {
        var binder = SQLiteColumnBinder(statement, from: index)
        try writeColumns(to: &binder)
    }
}
