import Foundation

/// A read written once for both stores: its SQL in pieces that are the same in SQLite and
/// PostgreSQL, its values typed, and the row it yields.
///
/// A store only renders it (`?` or `$n`, a key set as IN lists or arrays, a device token as
/// itself or its key) and binds its values; rows are decoded through `ReadRow` from the store's
/// `ColumnReader`. Reads like the write catalog's statements: a table's key or column is named
/// here once, not once per store (docs/ARCHITECTURE.md#reads).
public struct StoreRead<Row: ReadRow>: Sendable {
    /// The statement, or the branches of a `UNION` (PostgreSQL sends them as one statement;
    /// SQLite, whose key sets are split into IN lists, runs them one by one).
    public var branches: [ReadSQL]
    /// What the selected columns are called, for errors.
    public var columns: ReadColumns
    /// Whether every row's first column holds the first value the statement binds (a UUID: the
    /// app all the rows are of), so a store may take it from there instead of decoding it per row.
    public var firstColumnIsFirstValue: Bool

    public init(_ sql: ReadSQL, columns: ReadColumns, firstColumnIsFirstValue: Bool = false) {
        self.branches = [sql]
        self.columns = columns
        self.firstColumnIsFirstValue = firstColumnIsFirstValue
    }

    /// The rows of every read, duplicates once (the reads select the same columns).
    public init(union reads: [StoreRead<Row>]) {
        precondition(!reads.isEmpty, "a union of no reads")
        self.branches = reads.flatMap(\.branches)
        self.columns = reads[0].columns
        self.firstColumnIsFirstValue = reads.allSatisfy(\.firstColumnIsFirstValue)
    }
}

extension StoreRead where Row: CatalogRow {
    /// `SELECT` every column of `Row.table` `FROM` it, then `rest` (its `WHERE`, `ORDER BY`, …).
    public init(_ rest: ReadSQL, firstColumnIsFirstValue: Bool = false) {
        let table = Row.table
        self.init("SELECT \(unescaped: table.columnList) FROM \(unescaped: table.name) " + rest, columns: ReadColumns(table),
                  firstColumnIsFirstValue: firstColumnIsFirstValue)
    }
}

/// A row a `StoreRead` yields, read from its selected columns in order.
public protocol ReadRow: Sendable {
    init(columns: inout some ColumnReader) throws
}

/// The names of a read's selected columns, for errors (`apps.name`).
public struct ReadColumns: Sendable {
    private let table: String
    /// A catalog table's columns first (kept as the catalog's array, not copied), then `names`.
    private let catalog: [CatalogColumn]
    private let names: [String]

    public init(table: String, _ names: [String]) {
        self.table = table
        self.catalog = []
        self.names = names
    }

    /// Every column of `table`, in catalog order; `extra` after them.
    public init(_ table: CatalogTable, extra: [String] = []) {
        self.table = table.name
        self.catalog = table.columns
        self.names = extra
    }

    /// `table.column` of the column at `index` (`#index` past the last named one).
    public func name(at index: Int) -> String {
        let extra = index - catalog.count
        let name = extra < 0 ? catalog[index].name : extra < names.count ? names[extra] : "#\(index)"
        return "\(table).\(name)"
    }
}
