import Foundation
import NIOCore
import PostgresNIO
import Projections

/// Reads a row's columns from a PostgreSQL row, in the order a read selected them.
struct PostgresRowColumns: ColumnReader {
    let row: PostgresRandomAccessRow
    let columns: ReadColumns
    private(set) var index = 0

    init(_ row: PostgresRow, _ columns: ReadColumns) {
        self.row = row.makeRandomAccess()
        self.columns = columns
    }

    init(_ row: PostgresRow, _ table: CatalogTable) {
        self.init(row, ReadColumns(table))
    }

    var column: String { columns.name(at: index) }

    mutating func nextIsNull() throws -> Bool {
        guard row[index].bytes == nil else { return false }
        index += 1
        return true
    }

    mutating func uuid() throws -> UUID { try next() }
    mutating func text() throws -> String { try next() }
    mutating func int() throws -> Int64 { try next() }
    mutating func bool() throws -> Bool { try next() }
    mutating func millis() throws -> Date { ProjectionValues.date(millis: try next()) }
    mutating func bytes() throws -> Data { Data((try next() as ByteBuffer).readableBytesView) }

    private mutating func next<T: PostgresDecodable>() throws -> T {
        defer { index += 1 }
        return try row[index].decode(T.self, context: .default)
    }
}

extension CatalogRow {
    /// A row of `Self.table` that a query selected as its `columnList`.
    init(postgres row: PostgresRow) throws {
        var columns = PostgresRowColumns(row, Self.table)
        try self.init(columns: &columns)
    }
}

/// The columns of many rows of one table as typed arrays, bound as the parameters of one
/// `INSERT … SELECT … FROM unnest($1::uuid[], $2::text[], …)`: a commit writes each table's rows
/// in one round trip. Nullable or not, every column is bound as a `PostgresArray`.
struct PostgresColumnArrays: ColumnWriter {
    let table: CatalogTable
    /// Per column, where its values go: the array of its kind, and its place among them.
    private let slots: [(kind: CatalogColumn.Kind, slot: Int)]
    private var uuids: [[UUID?]], texts: [[String?]], ints: [[Int64?]], bools: [[Bool?]], bytes: [[ByteBuffer?]]
    private var column = 0

    init<Row: CatalogRow>(_ rows: some Collection<Row>) throws {
        table = Row.table
        var counts: [CatalogColumn.Kind: Int] = [:]
        slots = table.columns.map { column in
            let kind = Self.arrayKind(column.kind)
            defer { counts[kind, default: 0] += 1 }
            return (kind, counts[kind, default: 0])
        }
        func arrays<T>(_ kind: CatalogColumn.Kind) -> [[T?]] {
            Array(repeating: { var a = [T?](); a.reserveCapacity(rows.count); return a }(), count: counts[kind, default: 0])
        }
        (uuids, texts, ints, bools, bytes) = (arrays(.uuid), arrays(.text), arrays(.integer), arrays(.boolean), arrays(.bytes))
        for row in rows {
            column = 0
            try row.writeColumns(to: &self)
        }
    }

    /// Dates are integer milliseconds.
    private static func arrayKind(_ kind: CatalogColumn.Kind) -> CatalogColumn.Kind { kind == .millis ? .integer : kind }

    /// `$1::uuid[], $2::text[], …` for `unnest`, the first parameter numbered `first`.
    func unnestArguments(first: Int = 1) -> String {
        table.columns.enumerated().map { i, column in
            "$\(first + i)::" + Self.arrayType(column.kind)
        }.joined(separator: ", ")
    }

    private static func arrayType(_ kind: CatalogColumn.Kind) -> String {
        switch kind {
        case .uuid: "uuid[]"
        case .text: "text[]"
        case .integer, .millis: "bigint[]"
        case .boolean: "boolean[]"
        case .bytes: "bytea[]"
        }
    }

    /// The arrays, in column order.
    func bind(into bindings: inout PostgresBindings) {
        for (kind, slot) in slots {
            switch kind {
            case .uuid: bindings.append(PostgresArray(uuids[slot]))
            case .text: bindings.append(PostgresArray(texts[slot]))
            case .integer, .millis: bindings.append(PostgresArray(ints[slot]))
            case .boolean: bindings.append(PostgresArray(bools[slot]))
            case .bytes: bindings.append(PostgresArray(bytes[slot]))
            }
        }
    }

    mutating func null() {
        let (kind, slot) = slots[column]
        switch kind {
        case .uuid: uuids[slot].append(nil)
        case .text: texts[slot].append(nil)
        case .integer, .millis: ints[slot].append(nil)
        case .boolean: bools[slot].append(nil)
        case .bytes: bytes[slot].append(nil)
        }
        column += 1
    }

    mutating func uuid(_ value: UUID) { uuids[slots[column].slot].append(value); column += 1 }
    mutating func text(_ value: String) { texts[slots[column].slot].append(value); column += 1 }
    mutating func int(_ value: Int64) { ints[slots[column].slot].append(value); column += 1 }
    mutating func bool(_ value: Bool) { bools[slots[column].slot].append(value); column += 1 }
    mutating func millis(_ value: Date) { int(ProjectionValues.millis(value)) }
    mutating func bytes(_ value: Data) { bytes[slots[column].slot].append(ByteBuffer(bytes: value)); column += 1 }
}
