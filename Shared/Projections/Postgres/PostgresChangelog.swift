import ProjectionChangelog
import Projections
import Logging
import PostgresNIO

/// The changelog outbox and position of the PostgreSQL store (schema version 10).
enum PostgresChangelog {
    static func position(on connection: PostgresConnection, logger: Logger) async throws -> ChangelogPosition? {
        try await connection.rows("SELECT lineage, seq FROM changelog_state", logger: logger).first.map {
            let (lineage, seq) = try $0.decode((String, Int64).self)
            return ChangelogPosition(lineage: lineage, seq: seq)
        }
    }

    /// Numbers the commit's entry and keeps it for publishing, inside the commit's transaction.
    static func append(_ payload: [UInt8], on connection: PostgresConnection, logger: Logger) async throws {
        try await connection.run("""
            WITH s AS (UPDATE changelog_state SET seq = seq + 1 RETURNING seq)
            INSERT INTO changelog_outbox (seq, payload) SELECT seq, \(ByteBuffer(bytes: payload)) FROM s
            """, logger: logger)
    }

    static func unpublished(after seq: Int64, limit: Int, on connection: PostgresConnection,
                            logger: Logger) async throws -> [ChangelogOutboxRow] {
        try await connection.rows("""
            SELECT seq, payload FROM changelog_outbox WHERE seq > \(seq) ORDER BY seq LIMIT \(limit)
            """, logger: logger).map { row in
            let (seq, payload) = try row.decode((Int64, ByteBuffer).self)
            return ChangelogOutboxRow(seq: seq, payload: Array(payload.readableBytesView))
        }
    }

    static func published(through seq: Int64, on connection: PostgresConnection, logger: Logger) async throws {
        try await connection.run("DELETE FROM changelog_outbox WHERE seq <= \(seq)", logger: logger)
    }

    static func setPosition(_ position: ChangelogPosition, on connection: PostgresConnection, logger: Logger) async throws {
        try await connection.run("""
            INSERT INTO changelog_state (singleton, lineage, seq) VALUES (true, \(position.lineage), \(position.seq))
            ON CONFLICT (singleton) DO UPDATE SET lineage = excluded.lineage, seq = excluded.seq
            """, logger: logger)
    }

    /// Keeps the definitions of the secondary indexes (SQLite's, and its own) and of the primary
    /// keys of the tables a restore copies into (`restoredKeys`), and drops them. A key is kept
    /// as its unique index, which `build` attaches again as the key.
    static func setIndexesAside(on connection: PostgresConnection, logger: Logger) async throws {
        let found = try await connection.rows("""
            SELECT indexname::text, indexdef FROM pg_indexes
            WHERE schemaname = current_schema()
              AND indexname = ANY(\(SecondaryIndexes.names + SecondaryIndexes.postgresOnly + restoredKeys.keys)::text[])
            """, logger: logger).map { try $0.decode((String, String).self) }
        for (name, definition) in found {
            try await connection.run("""
                INSERT INTO restore_indexes (name, definition) VALUES (\(name), \(definition))
                ON CONFLICT (name) DO UPDATE SET definition = excluded.definition
                """, logger: logger)
            let drop = restoredKeys[name].map { "ALTER TABLE \"\($0)\" DROP CONSTRAINT \"\(name)\"" } ?? "DROP INDEX \"\(name)\""
            try await connection.run(PostgresQuery(unsafeSQL: drop), logger: logger)
        }
    }

    /// The primary keys a restore sets aside, by name (PostgreSQL's, `<table>_pkey`), and their
    /// tables: those `PostgresRestoreLoader` copies into. Built once over the loaded rows, a key
    /// costs a sort; kept during the load, a B-tree descent per row, at a random page for the
    /// keys of device tokens (their SHA-256) (docs/ARCHITECTURE.md#changelog-and-restore).
    static let restoredKeys = Dictionary(uniqueKeysWithValues: [
        "devices", "registration_status", "pending_notifications", "acks", "deliveries", "delivery_outcomes", "tracking_events",
    ].map { ($0 + "_pkey", $0) })

    /// The indexes `setIndexesAside` kept, largest table first, so that builds run side by side
    /// end close together (the table is read from the definition, `pg_get_indexdef`'s
    /// `… ON [ONLY] table USING …`, for the order only).
    static func indexesSetAside(on connection: PostgresConnection, logger: Logger) async throws -> [(name: String, definition: String)] {
        try await connection.rows("""
            SELECT name::text, definition FROM restore_indexes
            ORDER BY pg_relation_size(to_regclass(substring(definition FROM ' ON (?:ONLY )?(\\S+) USING '))) DESC NULLS LAST, name
            """, logger: logger).map { try $0.decode((String, String).self) }
    }

    /// What ends a restore, in order: building each index `setIndexesAside` kept, then analyzing
    /// each table of the store, the largest first.
    enum FinishStep: Sendable {
        case build(name: String, definition: String)
        case analyze(table: String)

        func run(on connection: PostgresConnection, logger: Logger) async throws {
            switch self {
            case .build(let name, let definition): try await PostgresChangelog.build((name, definition), on: connection, logger: logger)
            case .analyze(let table): try await connection.run(PostgresQuery(unsafeSQL: "ANALYZE \"\(table)\""), logger: logger)
            }
        }
    }

    static func finishSteps(on connection: PostgresConnection, logger: Logger) async throws -> [FinishStep] {
        let tables = try await connection.rows("""
            SELECT c.relname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = current_schema() AND c.relkind = 'r'
            ORDER BY pg_relation_size(c.oid) DESC, c.relname
            """, logger: logger).map { try $0.decode(String.self) }
        return try await indexesSetAside(on: connection, logger: logger).map { .build(name: $0.name, definition: $0.definition) }
            + tables.map { .analyze(table: $0) }
    }

    /// Builds one index that `setIndexesAside` kept (a key's unique index attached again as its
    /// table's primary key), and forgets it.
    static func build(_ index: (name: String, definition: String), on connection: PostgresConnection, logger: Logger) async throws {
        try await connection.run(PostgresQuery(unsafeSQL: index.definition), logger: logger)
        if let table = restoredKeys[index.name] {
            try await connection.run(PostgresQuery(unsafeSQL: """
                ALTER TABLE "\(table)" ADD CONSTRAINT "\(index.name)" PRIMARY KEY USING INDEX "\(index.name)"
                """), logger: logger)
        }
        try await connection.run("DELETE FROM restore_indexes WHERE name = \(index.name)", logger: logger)
    }
}
