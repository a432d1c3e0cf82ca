import Foundation
import ProjectionChangelog
import Projections
import Logging
import PostgresNIO

/// Dead letters and the store's creation time, in the PostgreSQL store (schema version 5).
/// Dead letters are rare, so each is written by a statement of its own.
enum PostgresDeadLetters {
    private static let columns = #"topic, "partition", "offset", type, reason, request_id, value, recorded_at"#

    /// Applies the dead-letter mutations of a commit in order (nil: delete).
    static func write(_ changes: [(key: DeadLetterKey, row: DeadLetterRow?)], on connection: PostgresConnection, logger: Logger) async throws {
        for (key, row) in changes {
            if let row {
                let reason = String(row.reason.prefix(DeadLetterRow.maxReasonLength))
                try await connection.run("""
                    INSERT INTO dead_letters (topic, "partition", "offset", type, reason, request_id, value, recorded_at)
                    VALUES (\(key.partition.topic), \(key.partition.partition), \(key.offset), \(row.type), \(reason),
                            \(row.requestId), \(ByteBuffer(bytes: row.value)), \(ProjectionValues.millis(row.recordedAt)))
                    ON CONFLICT (topic, "partition", "offset") DO NOTHING
                    """, logger: logger)
            } else {
                try await connection.run("""
                    DELETE FROM dead_letters WHERE topic = \(key.partition.topic) AND "partition" = \(key.partition.partition)
                        AND "offset" = \(key.offset)
                    """, logger: logger)
            }
        }
    }

    static func list(after: DeadLetterKey?, limit: Int, on connection: PostgresConnection, logger: Logger) async throws -> [DeadLetterRow] {
        let rows: [PostgresRow]
        if let after {
            rows = try await connection.rows("""
                SELECT \(unescaped: columns) FROM dead_letters
                WHERE (topic, "partition", "offset") > (\(after.partition.topic), \(after.partition.partition), \(after.offset))
                ORDER BY topic, "partition", "offset" LIMIT \(Int64(limit))
                """, logger: logger)
        } else {
            rows = try await connection.rows("""
                SELECT \(unescaped: columns) FROM dead_letters ORDER BY topic, "partition", "offset" LIMIT \(Int64(limit))
                """, logger: logger)
        }
        return try rows.map(row)
    }

    static func one(_ key: DeadLetterKey, on connection: PostgresConnection, logger: Logger) async throws -> DeadLetterRow? {
        try await connection.rows("""
            SELECT \(unescaped: columns) FROM dead_letters
            WHERE topic = \(key.partition.topic) AND "partition" = \(key.partition.partition) AND "offset" = \(key.offset)
            """, logger: logger).first.map(row)
    }

    private static func row(_ row: PostgresRow) throws -> DeadLetterRow {
        let (topic, partition, offset, type, reason, requestId, value, recorded) =
            try row.decode((String, Int32, Int64, String?, String, String?, ByteBuffer, Int64).self)
        return DeadLetterRow(partition: PartitionKey(topic: topic, partition: partition), offset: offset, type: type, reason: reason,
                             requestId: requestId, value: Data(value.readableBytesView), recordedAt: ProjectionValues.date(millis: recorded))
    }

    /// Records when the store was created, once: now for a store this open created, the epoch
    /// for one that existed before version 5 recorded it.
    static func recordCreation(foundVersion: Int, on connection: PostgresConnection, logger: Logger) async throws {
        let created = foundVersion == 0 ? ProjectionValues.millis(Date()) : 0
        try await connection.run("""
            INSERT INTO store_info (singleton, created_at) VALUES (true, \(created)) ON CONFLICT (singleton) DO NOTHING
            """, logger: logger)
    }

    static func createdAt(on connection: PostgresConnection, logger: Logger) async throws -> Date {
        let millis = try await connection.rows("SELECT created_at FROM store_info", logger: logger).first.map { try $0.decode(Int64.self) }
        return ProjectionValues.date(millis: millis ?? 0)
    }
}
