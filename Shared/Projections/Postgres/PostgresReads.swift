import Contracts
import Foundation
import Logging
import PostgresNIO
import Projections

/// Runs `StoreRead`s in PostgreSQL: `$n` for each value, a key set bound as one array per column
/// (`= ANY($1::uuid[])`, or a row of them `IN (SELECT … FROM unnest(…))`, a device token by its
/// SHA-256 key), a union's branches as one statement. Thousands of keys cost one round trip.
extension PostgresConnection {
    func rows<Row: ReadRow>(_ read: StoreRead<Row>, logger: Logger) async throws -> [Row] {
        guard let query = PostgresReadSQL.query(read) else { return [] }
        let found = try await rows(query, logger: logger)
        var rows: [Row] = []
        rows.reserveCapacity(found.count)
        for row in found {
            var columns = PostgresRowColumns(row, read.columns)
            rows.append(try Row(columns: &columns))
        }
        return rows
    }

    /// Answers a `StateQuery` (`StateReads`); the caller holds the snapshot (a repeatable-read transaction).
    func load(_ query: StateQuery, logger: Logger) async throws -> StateSnapshot {
        var snapshot = StateSnapshot()
        for read in StateReads.first(query) { try await add(read, to: &snapshot, logger: logger) }
        for read in StateReads.then(query, after: snapshot) { try await add(read, to: &snapshot, logger: logger) }
        return snapshot
    }

    private func add(_ step: some SnapshotRead, to snapshot: inout StateSnapshot, logger: Logger) async throws {
        step.add(try await rows(step.read, logger: logger), to: &snapshot)
    }
}

/// A `StoreRead` rendered as PostgreSQL's SQL and bindings.
enum PostgresReadSQL {
    /// Nil when every branch asks for no keys: the read finds nothing.
    static func query<Row>(_ read: StoreRead<Row>) -> PostgresQuery? {
        var sql = ""
        var bindings = PostgresBindings()
        for branch in read.branches where !(branch.keys?.isEmpty ?? false) {
            if !sql.isEmpty { sql += " UNION " }
            for piece in branch.pieces {
                switch piece {
                case .sql(let text): sql += text
                case .value(let value): sql += "$\(bind(value, into: &bindings))"
                case .deviceToken(let token): sql += "token_key = " + PostgresRows.tokenKey("$\(bind(.text(token), into: &bindings))")
                case .tokenAfter(let token): sql += PostgresRows.tokenAfter("$\(bind(.text(token), into: &bindings))::text")
                case .tokenOrder: sql += PostgresRows.tokenOrder
                case .keys(let keys): sql += condition(keys, into: &bindings)
                case .namedDevicePage(let named): sql += namedDevicePage(named, into: &bindings)
                }
            }
        }
        return sql.isEmpty ? nil : PostgresQuery(unsafeSQL: sql, binds: bindings)
    }

    /// `column = ANY($n::type[])` for one column; else `(columns) IN (SELECT k.… FROM unnest(…) AS k(…))`,
    /// a device token's column as its `token_key`.
    private static func condition(_ keys: ReadKeys, into bindings: inout PostgresBindings) -> String {
        let arrays = keys.columns.indices.map { column(keys, at: $0) }
        if keys.columns.count == 1, !keys.columns[0].isToken {
            return "\(keys.columns[0].name) = ANY(\(parameter(arrays[0], into: &bindings)))"
        }
        let parameters = arrays.map { parameter($0, into: &bindings) }
        let names = keys.columns.map(\.name).joined(separator: ", ")
        let left = keys.columns.map { $0.isToken ? "token_key" : $0.name }.joined(separator: ", ")
        let right = keys.columns.map { $0.isToken ? PostgresRows.tokenKey("k.\($0.name)") : "k.\($0.name)" }.joined(separator: ", ")
        return "(\(left)) IN (SELECT \(right) FROM unnest(\(parameters.joined(separator: ", "))) AS k(\(names)))"
    }

    /// The devices whose `token_key = ANY(ARRAY(…))`: the first name's devices from `device_names`
    /// in the tokens' byte order (their first characters, then the rest: `PostgresRows.tokenOrder`),
    /// each looked up under the other names by its key. The array is read once, then the devices
    /// by their key; the look-ups are scalar subqueries, so that the planner reads the names in
    /// order and stops at the limit instead of joining every device of a name.
    private static func namedDevicePage(_ named: NamedTokens, into bindings: inout PostgresBindings) -> String {
        let prefix = PostgresRows.tokenOrderPrefix
        let app = "$\(bind(.uuid(named.app), into: &bindings))"
        var sql = "SELECT \(TableCatalog.devices.columnList) FROM devices WHERE app_id = \(app)"
        sql += " AND token_key = ANY(ARRAY(SELECT n.token_key FROM device_names n WHERE n.app_id = \(app)"
        sql += " AND n.kind = $\(bind(.text(named.names[0].kind.rawValue), into: &bindings)) AND n.name = $\(bind(.text(named.names[0].name), into: &bindings))"
        if let after = named.after {
            let token = "$\(bind(.text(after), into: &bindings))::text"
            sql += " AND n.token_prefix >= left(\(token), \(prefix))"
            sql += " AND (n.token_prefix > left(\(token), \(prefix)) OR n.token_rest > substr(\(token), \(prefix + 1)))"
        }
        for other in named.names.dropFirst() {
            sql += " AND (SELECT true FROM device_names o WHERE o.app_id = n.app_id"
            sql += " AND o.kind = $\(bind(.text(other.kind.rawValue), into: &bindings)) AND o.name = $\(bind(.text(other.name), into: &bindings))"
            sql += " AND o.token_prefix = n.token_prefix AND o.token_key = n.token_key)"
        }
        let limit = "$\(bind(.int(Int64(named.limit)), into: &bindings))"
        return sql + " ORDER BY n.token_prefix, n.token_rest LIMIT \(limit))) ORDER BY \(PostgresRows.tokenOrder) LIMIT \(limit)"
    }

    /// The values of the key column at `index` over every group, in order.
    private static func column(_ keys: ReadKeys, at index: Int) -> ReadValues {
        let groups = keys.groups
        guard index < keys.columns.count - 1 else {
            switch groups.first?.last {
            case .uuids?: return .uuids(groups.flatMap { group -> [UUID] in if case .uuids(let ids) = group.last { ids } else { [] } })
            case .ints?: return .ints(groups.flatMap { group -> [Int64] in if case .ints(let ints) = group.last { ints } else { [] } })
            case .texts?, nil: return .texts(groups.flatMap { group -> [String] in if case .texts(let texts) = group.last { texts } else { [] } })
            }
        }
        func repeated<T>(_ value: (ReadValue) -> T?) -> [T] {
            var values: [T] = []
            values.reserveCapacity(groups.reduce(0) { $0 + $1.last.count })
            for group in groups {
                if let value = value(group.leading[index]) { values.append(contentsOf: repeatElement(value, count: group.last.count)) }
            }
            return values
        }
        switch groups.first?.leading[index] {
        case .uuid?: return .uuids(repeated { if case .uuid(let id) = $0 { id } else { nil } })
        case .int?: return .ints(repeated { if case .int(let int) = $0 { int } else { nil } })
        case .text?, nil: return .texts(repeated { if case .text(let text) = $0 { text } else { nil } })
        }
    }

    /// Binds `value`; its parameter's number.
    private static func bind(_ value: ReadValue, into bindings: inout PostgresBindings) -> Int {
        switch value {
        case .uuid(let id): bindings.append(id)
        case .text(let text): bindings.append(text)
        case .int(let int): bindings.append(int)
        }
        return bindings.count
    }

    /// Binds `values` as one array; `$n::type[]`.
    private static func parameter(_ values: ReadValues, into bindings: inout PostgresBindings) -> String {
        let type: String
        switch values {
        case .uuids(let ids): bindings.append(ids); type = "uuid[]"
        case .texts(let texts): bindings.append(texts); type = "text[]"
        case .ints(let ints): bindings.append(ints); type = "bigint[]"
        }
        return "$\(bindings.count)::\(type)"
    }
}
