import Foundation
import ProjectionChangelog
import Projections
import GRDB

/// Dead letters and the store's creation time, in the SQLite store (schema version 5).
enum SQLiteDeadLetters {
    static let columns = #"topic, "partition", "offset", type, reason, request_id, value, recorded_at"#

    static func put(_ row: DeadLetterRow, in db: Database) throws {
        try db.cachedStatement(sql: """
            INSERT INTO dead_letters (\(columns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (topic, "partition", "offset") DO NOTHING
            """).execute(arguments: [
                row.partition.topic, row.partition.partition, row.offset, row.type, String(row.reason.prefix(DeadLetterRow.maxReasonLength)),
                row.requestId, row.value, SQLiteValues.millis(row.recordedAt),
            ])
    }

    static func delete(_ key: DeadLetterKey, in db: Database) throws {
        try db.cachedStatement(sql: #"DELETE FROM dead_letters WHERE topic = ? AND "partition" = ? AND "offset" = ?"#)
            .execute(arguments: [key.partition.topic, key.partition.partition, key.offset])
    }

    static func list(after: DeadLetterKey?, limit: Int, in db: Database) throws -> [DeadLetterRow] {
        let rows: [Row]
        if let after {
            rows = try Row.fetchAll(db.cachedStatement(sql: """
                SELECT \(columns) FROM dead_letters WHERE (topic, "partition", "offset") > (?, ?, ?)
                ORDER BY topic, "partition", "offset" LIMIT ?
                """), arguments: [after.partition.topic, after.partition.partition, after.offset, limit])
        } else {
            rows = try Row.fetchAll(db.cachedStatement(sql: """
                SELECT \(columns) FROM dead_letters ORDER BY topic, "partition", "offset" LIMIT ?
                """), arguments: [limit])
        }
        return try rows.map(row)
    }

    static func one(_ key: DeadLetterKey, in db: Database) throws -> DeadLetterRow? {
        try Row.fetchOne(db.cachedStatement(sql: """
            SELECT \(columns) FROM dead_letters WHERE topic = ? AND "partition" = ? AND "offset" = ?
            """), arguments: [key.partition.topic, key.partition.partition, key.offset]).map(row)
    }

    private static func row(_ row: Row) throws -> DeadLetterRow {
        DeadLetterRow(partition: PartitionKey(topic: try row.decode(atIndex: 0), partition: try row.decode(atIndex: 1)),
                      offset: try row.decode(atIndex: 2), type: try row.decode(atIndex: 3), reason: try row.decode(atIndex: 4),
                      requestId: try row.decode(atIndex: 5), value: try row.decode(atIndex: 6),
                      recordedAt: SQLiteValues.date(millis: try row.decode(atIndex: 7)))
    }

    /// Records when the store was created, once: `now` for a store this open created, the
    /// epoch for one that existed before version 5 recorded it.
    static func recordCreation(foundVersion: Int, now: Date, in db: Database) throws {
        try db.execute(sql: "INSERT INTO store_info (singleton, created_at) VALUES (1, ?) ON CONFLICT (singleton) DO NOTHING",
                       arguments: [foundVersion == 0 ? SQLiteValues.millis(now) : 0])
    }

    static func createdAt(in db: Database) throws -> Date {
        SQLiteValues.date(millis: try Int64.fetchOne(db, sql: "SELECT created_at FROM store_info") ?? 0)
    }
}
