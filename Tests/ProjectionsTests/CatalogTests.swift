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
        #expect(ProjectionDump.tables.first { $0.table == "tracking_events" }?.orderBy == "delivery_id, app_id, part, action, message_index")
    }

    @Test func testTheStatementsBuiltFromAnEntryNameEveryColumnOnceAndUpdateAllButTheKey() {
        let devices = TableCatalog.devices
        #expect(devices.sqliteUpsert == """
            INSERT INTO devices (app_id, device_token, user_id, platform, version, updated_at, time_zone, badges_since, badges, \
            locale, app_version, tags, topics) \
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) \
            ON CONFLICT (app_id, device_token) DO UPDATE SET user_id = excluded.user_id, platform = excluded.platform, \
            version = excluded.version, updated_at = excluded.updated_at, time_zone = excluded.time_zone, \
            badges_since = excluded.badges_since, badges = excluded.badges, locale = excluded.locale, \
            app_version = excluded.app_version, tags = excluded.tags, topics = excluded.topics
            """)
        #expect(devices.sqliteDeleteByKey == "DELETE FROM devices WHERE app_id = ? AND device_token = ?")
        #expect(TableCatalog.parkedTracking.sqliteInsertUnlessStored.hasSuffix("ON CONFLICT (delivery_id, app_id, part) DO NOTHING"))
        for table in TableCatalog.tables {
            #expect(Set(table.columns.map(\.name)).count == table.columns.count, "\(table.name) names a column twice")
        }
    }

    /// Every row type writes exactly its table's columns, each of the catalog's kind (a NULL only
    /// where the catalog allows one), and reads back the row it wrote, with its optional values
    /// present and absent.
    @Test func testEveryRowTypeWritesItsCatalogColumnsInOrderAndReadsThemBack() throws {
        let app = UUID(), at = Fixture.at(7)
        try Self.roundTrip(Fixture.app(app, name: "a", callbackUrl: "https://example.test/h"))
        try Self.roundTrip(AppRow(appId: app, orgId: UUID(), name: "w", createdAt: at, webhookHosts: ["hooks.example.test", "*.example.net"]))
        try Self.roundTrip(AppRow(appId: app, orgId: UUID(), name: "b", callbackHeaders: ["X-A": "1"], webhookRetries: 3, createdAt: at,
                                  pushCredentials: Fixture.pushCredentials(1)))
        try Self.roundTrip(Fixture.token(app: app, revoked: true))
        try Self.roundTrip(ApiTokenRow(tokenId: UUID(), appId: app, tokenHash: "h", createdAt: at, scopes: [.client]))
        try Self.roundTrip(Fixture.device(app: app, token: "t", user: "u", platform: .android, version: 4))
        try Self.roundTrip(DeviceRow(appId: app, deviceToken: "t", userId: "u", platform: .ios, version: 1, updatedAt: at,
                                     timeZone: "America/Sao_Paulo"))
        try Self.roundTrip(DeviceRow(appId: app, deviceToken: "t", userId: "u", platform: .ios, version: 1, updatedAt: at,
                                     locale: "pt-BR", appVersion: "5.2.1", tags: ["team:benfica", "vip"], topics: ["news"]))
        try Self.roundTrip(Fixture.status(app: app))
        try Self.roundTrip(RegistrationStatusRow(requestId: UUID(), appId: app, status: .Failed, failureReason: .DeviceTokenTooLong, decidedAt: at))
        try Self.roundTrip(Fixture.pending(app: app, token: "t", nid: "n"))
        try Self.roundTrip(Fixture.ack(app: app, token: "t", nid: "n", business: "b"))
        try Self.roundTrip(Fixture.ack(app: app, token: "t", nid: "n"))
        try Self.roundTrip(Fixture.delivery(app: app))
        try Self.roundTrip(DeliveryRow(appId: app, deliveryId: UUID(), kind: .alert, managed: false, tracking: true, sent: 9, createdAt: at,
                                       sentByLocale: ["default": 2, "pt": 3, "pt-BR": 4]))
        try Self.roundTrip(DeliveryRow(appId: app, deliveryId: UUID(), kind: .im, managed: false, tracking: true, sent: 5, createdAt: at,
                                       delivered: 1, failed: 2, unregistered: 3, idempotencyKey: "k", requestHash: "h", duplicates: 4,
                                       conflicts: 5))
        try Self.roundTrip(DeliveryOutcomeRow(appId: app, deliveryId: UUID(), messageIndex: 9, deviceToken: "t", outcome: .failed,
                                              reason: "BadDeviceToken", reportedAt: at))
        try Self.roundTrip(RestoredRows.TrackingRow(deliveryId: UUID(), appId: app, action: 2, messageIndex: 11, repeats: 3))
        try Self.roundTrip(Fixture.job("j1", app: app))
        try Self.roundTrip(OutboxJob(id: "j2", kind: "k", appId: nil, url: "u", headers: ["A": "b"], body: Data([0, 255]), maxAttempts: 2,
                                     attempts: 1, nextAttemptAt: at, state: .failed, lastStatus: 500, lastError: "e", createdAt: at))
        try Self.roundTrip(AdminTokenRow(adminTokenId: UUID(), name: "n", tokenHash: "h", createdAt: at))
        try Self.roundTrip(AdminTokenRow(adminTokenId: UUID(), name: "n", tokenHash: "h", revoked: true, createdAt: at, revokedAt: at))
        try Self.roundTrip(AuditEntryRow(commandId: UUID(), at: at, type: "t", appId: app, actorId: UUID(), actorName: "a", requestId: "r",
                                         outcome: "applied", reason: nil, changes: "{}"))
        try Self.roundTrip(AuditEntryRow(commandId: UUID(), at: at, type: "t", appId: nil, actorId: nil, actorName: nil, requestId: nil,
                                         outcome: "rejected", reason: "why", changes: "{}"))
        try Self.roundTrip(IdempotencyKeyRow(scope: "s", key: "k", resourceId: UUID(), requestHash: "h", firstAt: at))
    }

    private static func roundTrip<Row: CatalogRow & Equatable>(_ row: Row, sourceLocation: SourceLocation = #_sourceLocation) throws {
        var columns = MemoryColumns()
        try row.writeColumns(to: &columns)
        let table = Row.table
        #expect(columns.values.count == table.columns.count, "\(table.name): \(columns.values.count) values", sourceLocation: sourceLocation)
        for (value, column) in zip(columns.values, table.columns) {
            if let kind = value.kind {
                #expect(kind == column.kind, "\(table.name).\(column.name)", sourceLocation: sourceLocation)
            } else {
                #expect(column.nullable, "\(table.name).\(column.name) got NULL", sourceLocation: sourceLocation)
            }
        }
        var reader = MemoryColumns(values: columns.values)
        #expect(try Row(columns: &reader) == row, sourceLocation: sourceLocation)
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

/// Column values in memory, with the kind each was written as.
private struct MemoryColumns: ColumnWriter, ColumnReader {
    enum Value {
        case null, uuid(UUID), text(String), int(Int64), bool(Bool), millis(Date), bytes(Data)

        var kind: CatalogColumn.Kind? {
            switch self {
            case .null: nil
            case .uuid: .uuid
            case .text: .text
            case .int: .integer
            case .bool: .boolean
            case .millis: .millis
            case .bytes: .bytes
            }
        }
    }

    var values: [Value] = []
    var index = 0

    mutating func null() { values.append(.null) }
    mutating func uuid(_ value: UUID) { values.append(.uuid(value)) }
    mutating func text(_ value: String) { values.append(.text(value)) }
    mutating func int(_ value: Int64) { values.append(.int(value)) }
    mutating func bool(_ value: Bool) { values.append(.bool(value)) }
    mutating func millis(_ value: Date) { values.append(.millis(value)) }
    mutating func bytes(_ value: Data) { values.append(.bytes(value)) }

    var column: String { "#\(index)" }

    mutating func nextIsNull() throws -> Bool {
        guard case .null = values[index] else { return false }
        index += 1
        return true
    }

    private struct WrongKind: Error {}

    private mutating func next() -> Value { defer { index += 1 }; return values[index] }
    mutating func uuid() throws -> UUID { guard case .uuid(let v) = next() else { throw WrongKind() }; return v }
    mutating func text() throws -> String { guard case .text(let v) = next() else { throw WrongKind() }; return v }
    mutating func int() throws -> Int64 { guard case .int(let v) = next() else { throw WrongKind() }; return v }
    mutating func bool() throws -> Bool { guard case .bool(let v) = next() else { throw WrongKind() }; return v }
    // As the stores keep it: whole milliseconds.
    mutating func millis() throws -> Date {
        guard case .millis(let v) = next() else { throw WrongKind() }
        return ProjectionValues.date(millis: ProjectionValues.millis(v))
    }
    mutating func bytes() throws -> Data { guard case .bytes(let v) = next() else { throw WrongKind() }; return v }
}
