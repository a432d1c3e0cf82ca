import Foundation
import ProjectionChangelog
import Projections
import GRDB

/// The changelog outbox and position of the SQLite store (schema version 9).
enum SQLiteChangelog {
    static func position(in db: Database) throws -> ChangelogPosition? {
        try Row.fetchOne(db.cachedStatement(sql: "SELECT lineage, seq FROM changelog_state")).map {
            ChangelogPosition(lineage: $0[0], seq: $0[1])
        }
    }

    /// Numbers the commit's entry and keeps it for publishing, inside the commit's transaction.
    static func append(_ payload: [UInt8], in db: Database) throws {
        try db.cachedStatement(sql: "UPDATE changelog_state SET seq = seq + 1").execute()
        try db.cachedStatement(sql: "INSERT INTO changelog_outbox (seq, payload) SELECT seq, ? FROM changelog_state")
            .execute(arguments: [Data(payload)])
    }

    static func unpublished(after seq: Int64, limit: Int, in db: Database) throws -> [ChangelogOutboxRow] {
        try Row.fetchAll(db.cachedStatement(sql: "SELECT seq, payload FROM changelog_outbox WHERE seq > ? ORDER BY seq LIMIT ?"),
                         arguments: [seq, limit]).map { row in
            let payload: Data = row[1]
            return ChangelogOutboxRow(seq: row[0], payload: [UInt8](payload))
        }
    }

    static func published(through seq: Int64, in db: Database) throws {
        try db.cachedStatement(sql: "DELETE FROM changelog_outbox WHERE seq <= ?").execute(arguments: [seq])
    }

    static func setPosition(_ position: ChangelogPosition, in db: Database) throws {
        try db.cachedStatement(sql: """
            INSERT INTO changelog_state (singleton, lineage, seq) VALUES (1, ?, ?)
            ON CONFLICT (singleton) DO UPDATE SET lineage = excluded.lineage, seq = excluded.seq
            """).execute(arguments: [position.lineage, position.seq])
    }
}
