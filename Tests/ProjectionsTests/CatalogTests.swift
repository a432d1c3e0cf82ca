import Foundation
@testable import Projections
@testable import PostgresProjections
@testable import SQLiteProjections
import Testing

/// The table catalog against what each store's migrations create, and the statements built from it.
@Suite(.serialized) struct CatalogTests {
    /// Every catalog column exists in the migrated store, in catalog order, with the declared type
    /// its kind says and its nullability; the store has no other column but those it keeps for
    /// its own work. A migration that adds a column without its catalog line (or the reverse) fails here.
    @Test(arguments: StoreBackend.allCases)
    func testEveryStoreTableHasExactlyItsCatalogColumns(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { harness in
            _ = try await harness.openStore()
            for table in TableCatalog.tables {
                let described = try await harness.strings(Self.describeColumns(of: table.name, backend)).map { $0 ?? "" }
                let ownColumns = (backend == .sqlite ? TableCatalog.storeColumns : TableCatalog.postgresStoreColumns)[table.name] ?? []
                let stored = described.filter { !ownColumns.contains(String($0.prefix { $0 != ":" })) }
                let expected = table.columns.map { "\($0.name):\(Self.declaredType($0.kind, backend)):\($0.nullable ? "null" : "not null")" }
                #expect(stored.map(Self.normalized) == expected, "\(backend) \(table.name)")
                #expect(described.count == stored.count + ownColumns.count, "\(backend) \(table.name): store columns \(ownColumns)")
            }
        }
    }

    @Test func testTheDumpShowsEveryCatalogTableInCatalogOrderByItsKey() {
        #expect(ProjectionDump.tables.map(\.table) == TableCatalog.tables.map(\.name))
        #expect(ProjectionDump.tables.first { $0.table == "outbox" }?.columns == "id, kind, app_id, url, headers, body, max_attempts")
        #expect(ProjectionDump.tables.first { $0.table == "tracking_events" }?.orderBy == "delivery_id, app_id, action, message_index")
    }

    @Test func testTheStatementsBuiltFromAnEntryNameEveryColumnOnceAndUpdateAllButTheKey() {
        let devices = TableCatalog.devices
        #expect(devices.sqliteUpsert == """
            INSERT INTO devices (app_id, device_token, user_id, platform, version, updated_at) VALUES (?, ?, ?, ?, ?, ?) \
            ON CONFLICT (app_id, device_token) DO UPDATE SET user_id = excluded.user_id, platform = excluded.platform, \
            version = excluded.version, updated_at = excluded.updated_at
            """)
        #expect(devices.sqliteDeleteByKey == "DELETE FROM devices WHERE app_id = ? AND device_token = ?")
        #expect(TableCatalog.parkedTracking.sqliteInsertUnlessStored.hasSuffix("ON CONFLICT (delivery_id, app_id) DO NOTHING"))
        for table in TableCatalog.tables {
            #expect(Set(table.columns.map(\.name)).count == table.columns.count, "\(table.name) names a column twice")
        }
    }

    /// `name:type:null|not null`, one row per column in column order.
    private static func describeColumns(of table: String, _ backend: StoreBackend) -> String {
        switch backend {
        case .sqlite:
            "SELECT name || ':' || type || ':' || (CASE \"notnull\" WHEN 1 THEN 'not null' ELSE 'null' END) FROM pragma_table_info('\(table)') ORDER BY cid"
        case .postgres:
            """
            SELECT column_name || ':' || data_type || ':' || (CASE is_nullable WHEN 'YES' THEN 'null' ELSE 'not null' END)
            FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = '\(table)' ORDER BY ordinal_position
            """
        }
    }

    private static func declaredType(_ kind: CatalogColumn.Kind, _ backend: StoreBackend) -> String {
        switch (kind, backend) {
        case (.uuid, .sqlite), (.text, .sqlite): "TEXT"
        case (.integer, .sqlite), (.boolean, .sqlite), (.millis, .sqlite): "INTEGER"
        case (.bytes, .sqlite): "BLOB"
        case (.uuid, .postgres): "uuid"
        case (.text, .postgres): "text"
        case (.integer, .postgres), (.millis, .postgres): "bigint"
        case (.boolean, .postgres): "boolean"
        case (.bytes, .postgres): "bytea"
        }
    }

    /// PostgreSQL's `integer` columns (tracking actions, 32 bits) hold what the catalog calls an integer too.
    private static func normalized(_ described: String) -> String {
        described.replacingOccurrences(of: ":integer:", with: ":bigint:")
    }
}
