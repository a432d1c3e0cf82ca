import ProjectionChangelog
import Projections
import Logging
import PostgresNIO

/// The consumed offsets stored beside the projections, moved by compare-and-set inside the
/// commit's transaction.
///
/// The stored rows of the commit's partitions are locked first (`FOR UPDATE`, in key order),
/// so no other commit can move them until this one ends, then compared with the expected
/// offsets. A partition expected to have no offset yet is inserted with `ON CONFLICT DO
/// NOTHING`: when two processes insert the first offset of a partition at once, the second
/// waits for the first to commit, inserts nothing, and so conflicts.
enum PostgresOffsets {
    /// Checks and moves the offsets; throws `offsetConflict` naming the mismatched partitions (in
    /// the order of `updates`), after which the caller must roll back.
    static func move(_ updates: [OffsetUpdate], on connection: PostgresConnection, logger: Logger) async throws {
        guard !updates.isEmpty else { return }
        // The last update of a partition says where it ends; each is compared with the stored offset.
        var next: [PartitionKey: Int64] = [:]
        var times: [PartitionKey: Int64] = [:]
        for update in updates {
            next[update.partition] = update.next
            if let time = update.eventTime { times[update.partition] = time }
        }
        let keys = next.keys.sorted { a, b in
            a.topic.utf8.elementsEqual(b.topic.utf8) ? a.partition < b.partition : KeyOrder.less(a.topic, b.topic)
        }

        var stored: [PartitionKey: Int64] = [:]
        let rows = try await connection.rows("""
            SELECT o.topic, o."partition", o.next_offset FROM partition_offsets o
            JOIN unnest(\(keys.map(\.topic))::text[], \(keys.map(\.partition))::integer[]) AS k(topic, "partition")
                ON o.topic = k.topic AND o."partition" = k."partition"
            ORDER BY o.topic, o."partition"
            FOR UPDATE OF o
            """, logger: logger)
        for row in rows {
            let (topic, partition, offset) = try row.decode((String, Int32, Int64).self)
            stored[PartitionKey(topic: topic, partition: partition)] = offset
        }
        var conflicts = updates.filter { stored[$0.partition] != $0.expected }.map(\.partition)
        guard conflicts.isEmpty else { throw ProjectionStoreError.offsetConflict(conflicts) }

        // An update that deletes its row (`OffsetUpdate.deleted`) found it as expected.
        let deleted = keys.filter { next[$0]! < 0 }
        if !deleted.isEmpty {
            try await connection.run("""
                DELETE FROM partition_offsets o
                USING unnest(\(deleted.map(\.topic))::text[], \(deleted.map(\.partition))::integer[]) AS k(topic, "partition")
                WHERE o.topic = k.topic AND o."partition" = k."partition"
                """, logger: logger)
        }
        let new = keys.filter { stored[$0] == nil && next[$0]! >= 0 }
        if !new.isEmpty {
            let inserted = try await connection.rows("""
                INSERT INTO partition_offsets (topic, "partition", next_offset, event_time)
                SELECT * FROM unnest(\(new.map(\.topic))::text[], \(new.map(\.partition))::integer[],
                    \(new.map { next[$0]! })::bigint[], \(new.map { times[$0] ?? 0 })::bigint[])
                ON CONFLICT (topic, "partition") DO NOTHING
                RETURNING topic, "partition"
                """, logger: logger)
            var written: Set<PartitionKey> = []
            for row in inserted {
                let (topic, partition) = try row.decode((String, Int32).self)
                written.insert(PartitionKey(topic: topic, partition: partition))
            }
            conflicts = updates.filter { !written.contains($0.partition) && stored[$0.partition] == nil }.map(\.partition)
            guard conflicts.isEmpty else { throw ProjectionStoreError.offsetConflict(conflicts) }
        }

        let moved = keys.filter { stored[$0] != nil && next[$0]! >= 0 }
        guard !moved.isEmpty else { return }
        // A NULL event time keeps the stored one.
        try await connection.run("""
            UPDATE partition_offsets o SET next_offset = k.next_offset, event_time = coalesce(k.event_time, o.event_time)
            FROM unnest(\(moved.map(\.topic))::text[], \(moved.map(\.partition))::integer[], \(moved.map { next[$0]! })::bigint[],
                        \(PostgresArray(moved.map { times[$0] }))::bigint[])
                AS k(topic, "partition", next_offset, event_time)
            WHERE o.topic = k.topic AND o."partition" = k."partition"
            """, logger: logger)
    }
}
