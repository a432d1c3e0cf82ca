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

    /// Keeps the definitions of the secondary indexes (the same as SQLite's) and drops them.
    static func setIndexesAside(on connection: PostgresConnection, logger: Logger) async throws {
        let found = try await connection.rows("""
            SELECT indexname::text, indexdef FROM pg_indexes
            WHERE schemaname = current_schema() AND indexname = ANY(\(SecondaryIndexes.names)::text[])
            """, logger: logger).map { try $0.decode((String, String).self) }
        for (name, definition) in found {
            try await connection.run("""
                INSERT INTO restore_indexes (name, definition) VALUES (\(name), \(definition))
                ON CONFLICT (name) DO UPDATE SET definition = excluded.definition
                """, logger: logger)
            try await connection.run(PostgresQuery(unsafeSQL: "DROP INDEX \"\(name)\""), logger: logger)
        }
    }

    /// Builds the indexes `setIndexesAside` kept, and forgets them.
    static func buildIndexesSetAside(on connection: PostgresConnection, logger: Logger) async throws {
        let definitions = try await connection.rows("SELECT definition FROM restore_indexes ORDER BY name", logger: logger)
            .map { try $0.decode(String.self) }
        for definition in definitions { try await connection.run(PostgresQuery(unsafeSQL: definition), logger: logger) }
        try await connection.run("DELETE FROM restore_indexes", logger: logger)
    }
}
