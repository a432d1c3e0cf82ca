import ProjectionChangelog
import Projections
import GRDB

/// The consumed offsets stored beside the projections, and the check that makes a commit
/// refuse to move a partition that another processor moved meanwhile.
enum SQLiteOffsets {
    /// The partitions whose stored offset is not the expected one (`nil`: no row at all).
    /// Run inside the commit's write transaction, which is IMMEDIATE: no other writer can
    /// change the rows between this check and the commit.
    static func conflicts(_ updates: [OffsetUpdate], in db: Database) throws -> [PartitionKey] {
        guard !updates.isEmpty else { return [] }
        let select = try db.cachedStatement(sql: """
            SELECT next_offset FROM partition_offsets WHERE topic = ? AND "partition" = ?
            """)
        var conflicts: [PartitionKey] = []
        for update in updates {
            let stored = try Int64.fetchOne(select, arguments: [update.partition.topic, update.partition.partition])
            if stored != update.expected {
                conflicts.append(update.partition)
            }
        }
        return conflicts
    }

    /// Moves the offsets; an update that `deletes` removes its row (`OffsetUpdate.deleted`).
    static func store(_ updates: [OffsetUpdate], in db: Database) throws {
        guard !updates.isEmpty else { return }
        let upsert = try db.cachedStatement(sql: """
            INSERT INTO partition_offsets (topic, "partition", next_offset, event_time) VALUES (?, ?, ?, coalesce(?, 0))
            ON CONFLICT (topic, "partition") DO UPDATE SET next_offset = excluded.next_offset,
                event_time = coalesce(?, partition_offsets.event_time)
            """)
        let delete = try db.cachedStatement(sql: """
            DELETE FROM partition_offsets WHERE topic = ? AND "partition" = ?
            """)
        for update in updates {
            if update.deletes {
                try delete.execute(arguments: [update.partition.topic, update.partition.partition])
                continue
            }
            try upsert.execute(arguments: [update.partition.topic, update.partition.partition, update.next, update.eventTime,
                                           update.eventTime])
        }
    }
}
