import Contracts
import Foundation
import Projections
import GRDB

/// Runs `StoreRead`s in SQLite: `?` for each value, a key set as `lead = ? AND … AND last IN
/// (?, …)` once per group and fixed-length list (`SQLiteInList`), a union's branches one by one.
/// Statements come from GRDB's cache, values are bound and rows decoded through SQLite's C API
/// (`SQLiteRawStatement`, `SQLiteStatementColumns`): no boxed value per column.
extension Database {
    func rows<Row: ReadRow>(_ read: StoreRead<Row>) throws -> [Row] {
        var rows: [Row] = []
        for branch in read.branches {
            guard let keys = branch.keys else {
                try run(branch, read, keys: nil, into: &rows)
                continue
            }
            for group in keys.groups {
                for list in SQLiteInList.lists(of: group.last.count) { try run(branch, read, keys: (group, list), into: &rows) }
            }
        }
        return rows
    }

    /// Answers a `StateQuery` (`StateReads`); the caller holds the snapshot (a read transaction).
    func load(_ query: StateQuery) throws -> StateSnapshot {
        var snapshot = StateSnapshot()
        for read in StateReads.first(query) { try add(read, to: &snapshot) }
        for read in StateReads.then(query, after: snapshot) { try add(read, to: &snapshot) }
        return snapshot
    }

    /// Every device of these users, and the pending counts `query` asks for among them: a part
    /// of a load that `SQLiteProjectionStore.load` reads on a connection of its own.
    func users(_ keys: Set<UserKey>, countingFor query: StateQuery) throws -> (devices: [DeviceRow], pendingCounts: [DeviceKey: Int]) {
        let devices = try StateReads.devices(ofUsers: keys).map { try rows($0) } ?? []
        var counts: [DeviceKey: Int] = [:]
        if let read = StateReads.pendingCounts(of: devices.lazy.filter { query.countsPending(of: $0) }.map(\.key)) {
            for row in try rows(read) { counts[row.device] = row.count }
        }
        return (devices, counts)
    }

    private func add(_ step: some SnapshotRead, to snapshot: inout StateSnapshot) throws {
        step.add(try rows(step.read), to: &snapshot)
    }

    /// One statement of `branch`: for a key set, one group's values and one list of its last column.
    private func run<Row: ReadRow>(_ branch: ReadSQL, _ read: StoreRead<Row>, keys: (group: ReadKeys.Group, list: SQLiteInList)?,
                                   into rows: inout [Row]) throws {
        var sql = ""
        for piece in branch.pieces {
            switch piece {
            case .sql(let text): sql += text
            case .value: sql += "?"
            case .deviceToken: sql += "device_token = ?"
            case .tokenAfter: sql += "device_token > ?"
            case .tokenOrder: sql += "device_token"
            case .keys(let set):
                for column in set.columns.dropLast() { sql += column.name + " = ? AND " }
                sql += set.columns[set.columns.count - 1].name + " IN " + (keys?.list.placeholders ?? "()")
            case .namedDevicePage(let named): sql += Self.namedDevicePage(named)
            }
        }
        let statement = SQLiteRawStatement(try cachedStatement(sql: sql))
        var binder = SQLiteValueBinder(statement: statement)
        for piece in branch.pieces {
            switch piece {
            case .sql: break
            case .value(let value): binder.bind(value)
            case .deviceToken(let token), .tokenAfter(let token): binder.bind(.text(token))
            case .tokenOrder: break
            case .namedDevicePage(let named):
                binder.bind(.uuid(named.app))
                binder.bind(.text(named.names[0].kind.rawValue))
                binder.bind(.text(named.names[0].name))
                if let after = named.after { binder.bind(.text(after)) }
                for name in named.names.dropFirst() { binder.bind(.text(name.name)) }
                binder.bind(.int(Int64(named.limit)))
            case .keys:
                guard let (group, list) = keys else { break }
                for value in group.leading { binder.bind(value) }
                for index in list.indices { binder.bind(group.last, at: index) }
            }
        }
        let first = read.firstColumnIsFirstValue ? binder.firstUUID : nil
        try statement.forEachRow(in: self) {
            var columns = SQLiteStatementColumns(statement, read.columns, firstUUID: first)
            rows.append(try Row(columns: &columns))
        }
    }
}

extension Database {
    /// The devices of the first name, walked in `device_names`' key (the tokens' byte order) and
    /// each fetched by its `row_id` (schema step 28): a page costs what the same devices cost
    /// in the devices' own key. The other names are checked on the device's row (its `tags` or
    /// `topics`, the names `device_names` holds, joined by single spaces). Bound as `NamedTokens`
    /// lists its values: app, the first name's kind and name, `after`, the other names, limit.
    fileprivate static func namedDevicePage(_ named: NamedTokens) -> String {
        var sql = "SELECT " + TableCatalog.devices.columns.map { "d." + $0.name }.joined(separator: ", ")
            + " FROM device_names n JOIN devices d ON d.row_id = n.device_row WHERE n.app_id = ? AND n.kind = ? AND n.name = ?"
        if named.after != nil { sql += " AND n.device_token > ?" }
        for name in named.names.dropFirst() {
            let column = name.kind == .tag ? "d.tags" : "d.topics"
            sql += " AND instr(' ' || \(column) || ' ', ' ' || ? || ' ') > 0"
        }
        return sql + " ORDER BY n.device_token LIMIT ?"
    }
}

/// Binds values to a statement's parameters in order, noting the first if it is a UUID.
private struct SQLiteValueBinder {
    let statement: SQLiteRawStatement
    var index: Int32 = 1
    var firstUUID: UUID?

    init(statement: SQLiteRawStatement) {
        self.statement = statement
    }

    mutating func bind(_ value: ReadValue) {
        switch value {
        case .uuid(let id):
            if index == 1 { firstUUID = id }
            statement.bind(index, id)
        case .text(let text): statement.bind(index, text)
        case .int(let int): statement.bind(index, int)
        }
        index += 1
    }

    mutating func bind(_ values: ReadValues, at position: Int) {
        switch values {
        case .uuids(let ids): statement.bind(index, ids[position])
        case .texts(let texts): statement.bind(index, texts[position])
        case .ints(let ints): statement.bind(index, ints[position])
        }
        index += 1
    }
}
