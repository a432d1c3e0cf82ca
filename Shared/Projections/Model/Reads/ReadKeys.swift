import Foundation

/// The keys a read asks for, as the condition `(columns) IN keys`.
///
/// Keys are grouped by the values of every column but the last: SQLite runs its statement once
/// per group and IN list (`lead = ? AND last IN (?, …)`, each probing an index from its first
/// column); PostgreSQL binds each column as one array (`= ANY($1)` for one column, an `unnest`ed
/// row of arrays for more), one statement for all the keys.
public struct ReadKeys: Sendable {
    public struct Column: Sendable {
        public var name: String
        /// A device token, which PostgreSQL keys by its SHA-256 (`token_key`, `TableCatalog.postgresStoreColumns`).
        public var isToken: Bool

        public init(_ name: String, isToken: Bool = false) {
            self.name = name
            self.isToken = isToken
        }
    }

    public struct Group: Sendable {
        /// One value for each column but the last.
        public var leading: [ReadValue]
        public var last: ReadValues

        public init(_ leading: [ReadValue], _ last: ReadValues) {
            self.leading = leading
            self.last = last
        }
    }

    public var columns: [Column]
    public var groups: [Group]

    public init(_ columns: [Column], groups: [Group]) {
        precondition(groups.allSatisfy { $0.leading.count == columns.count - 1 }, "a group names every column but the last")
        self.columns = columns
        self.groups = groups
    }

    /// `column IN values`.
    public init(_ column: Column, _ values: ReadValues) {
        self.init([column], groups: [Group([], values)])
    }

    /// Whether there is no key (a read of none finds nothing, and is not run).
    public var isEmpty: Bool { groups.allSatisfy { $0.last.count == 0 } }
}

/// The values of one key column: an array parameter in PostgreSQL, IN lists in SQLite.
public enum ReadValues: Sendable, Equatable {
    case uuids([UUID])
    case texts([String])
    case ints([Int64])

    public var count: Int {
        switch self {
        case .uuids(let values): values.count
        case .texts(let values): values.count
        case .ints(let values): values.count
        }
    }
}
