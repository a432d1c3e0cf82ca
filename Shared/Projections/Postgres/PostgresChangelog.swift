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

    /// The definitions of the secondary indexes a restore drops (the same as SQLite's), then drops them.
    static func dropIndexes(on connection: PostgresConnection, logger: Logger) async throws -> [String] {
        let names = SecondaryIndexes.names
        let found = try await connection.rows("""
            SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema() AND indexname = ANY(\(names)::text[])
            """, logger: logger).map { try $0.decode((String, String).self) }
        for (name, _) in found {
            try await connection.run(PostgresQuery(unsafeSQL: "DROP INDEX \"\(name)\""), logger: logger)
        }
        return found.map(\.1)
    }
}
