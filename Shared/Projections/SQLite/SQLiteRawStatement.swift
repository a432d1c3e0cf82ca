import Contracts
import Foundation
import ProjectionChangelog
import Projections
import GRDB
import GRDBSQLite
import WireCodec

/// A prepared statement run through SQLite's C API: values bound one by one from the caller's
/// own bytes, then stepped and reset. The writer's hot mutations go through it (binding an
/// argument array costs an allocation and a boxed value per column, which was about a fifth of
/// a commit's time), and so does the read of a send's devices (docs/BENCHMARKS.md).
struct SQLiteRawStatement {
    private let statement: Statement
    private let handle: OpaquePointer

    init(_ statement: Statement) {
        self.statement = statement
        self.handle = statement.sqliteStatement
    }

    private static let transient = unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)

    func bind(_ index: Int32, _ text: String) {
        var text = text
        text.withUTF8 { utf8 in
            if let base = utf8.baseAddress {
                _ = sqlite3_bind_text(handle, index, UnsafeRawPointer(base).assumingMemoryBound(to: CChar.self), Int32(utf8.count),
                                      Self.transient)
            } else {
                _ = sqlite3_bind_text(handle, index, "", 0, Self.transient)
            }
        }
    }

    func bind(_ index: Int32, _ text: String?) {
        guard let text else { return bindNull(index) }
        bind(index, text)
    }

    /// The UUID as its lower-case text, as every store keeps it.
    func bind(_ index: Int32, _ id: UUID) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 36) { buffer in
            UUIDHex.write(id, to: buffer)
            _ = sqlite3_bind_text(handle, index, UnsafeRawPointer(buffer.baseAddress!).assumingMemoryBound(to: CChar.self), 36, Self.transient)
        }
    }

    func bind(_ index: Int32, _ value: Int64) {
        _ = sqlite3_bind_int64(handle, index, value)
    }

    func bind(_ index: Int32, _ value: Int) { bind(index, Int64(value)) }
    func bind(_ index: Int32, _ value: Bool) { bind(index, Int64(value ? 1 : 0)) }
    func bind(_ index: Int32, _ date: Date) { bind(index, SQLiteValues.millis(date)) }

    func bind(_ index: Int32, _ data: Data) {
        data.withUnsafeBytes { bytes in
            _ = sqlite3_bind_blob(handle, index, bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(bytes.count), Self.transient)
        }
    }

    func bindNull(_ index: Int32) {
        _ = sqlite3_bind_null(handle, index)
    }

    /// Runs a query: `row` is called for each row the statement yields, then the statement is
    /// reset and its values cleared for the next run.
    func forEachRow(in db: Database, _ row: () throws -> Void) throws {
        defer {
            sqlite3_reset(handle)
            sqlite3_clear_bindings(handle)
        }
        while true {
            let code = sqlite3_step(handle)
            if code == SQLITE_DONE { return }
            guard code == SQLITE_ROW else {
                throw DatabaseError(resultCode: ResultCode(rawValue: code), message: db.lastErrorMessage, sql: statement.sql)
            }
            try row()
        }
    }

    /// Column `index` of the current row as text (a NULL reads as empty).
    func text(_ index: Int32) -> String {
        guard let bytes = sqlite3_column_text(handle, index) else { return "" }
        return String(decoding: UnsafeBufferPointer(start: bytes, count: Int(sqlite3_column_bytes(handle, index))), as: UTF8.self)
    }

    /// Column `index` of the current row as a UUID, parsed from its text in place; nil when it is not one.
    func uuid(_ index: Int32) -> UUID? {
        guard let bytes = sqlite3_column_text(handle, index) else { return nil }
        return UUIDHex.parse(UnsafeBufferPointer(start: bytes, count: Int(sqlite3_column_bytes(handle, index))))
    }

    func isNull(_ index: Int32) -> Bool {
        sqlite3_column_type(handle, index) == SQLITE_NULL
    }

    /// Column `index` of the current row as bytes (a NULL reads as empty).
    func blob(_ index: Int32) -> Data {
        guard let bytes = sqlite3_column_blob(handle, index) else { return Data() }
        return Data(bytes: bytes, count: Int(sqlite3_column_bytes(handle, index)))
    }

    func int64(_ index: Int32) -> Int64 {
        sqlite3_column_int64(handle, index)
    }

    /// Runs the statement once, then resets it and clears its values for the next run.
    func run(in db: Database) throws {
        let code = sqlite3_step(handle)
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
        guard code == SQLITE_DONE else {
            throw DatabaseError(resultCode: ResultCode(rawValue: code), message: db.lastErrorMessage, sql: statement.sql)
        }
    }
}
