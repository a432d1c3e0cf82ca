import Foundation
import GRDB

/// Marks of tracking reports parked before their delivery's send, and their expiry (schema
/// version 6), in the SQLite store.
enum SQLiteParkedTracking {
    static func park(deliveryId: UUID, appId: UUID, at: Date, in db: Database) throws {
        try db.cachedStatement(sql: """
            INSERT INTO parked_tracking (delivery_id, app_id, parked_at) VALUES (?, ?, ?)
            ON CONFLICT (delivery_id, app_id) DO NOTHING
            """).execute(arguments: [SQLiteValues.text(deliveryId), SQLiteValues.text(appId), SQLiteValues.millis(at)])
    }

    static func expire(before cutoff: Date, in db: Database) throws {
        let millis = SQLiteValues.millis(cutoff)
        // Driven by the expired marks (an index range of parked_tracking), each a range of the
        // tracking key: no scan of tracking_events, which may hold millions of rows.
        try db.cachedStatement(sql: """
            DELETE FROM tracking_events WHERE (delivery_id, app_id) IN (
                SELECT p.delivery_id, p.app_id FROM parked_tracking p
                WHERE p.parked_at < ? AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.delivery_id = p.delivery_id))
            """).execute(arguments: [millis])
        try db.cachedStatement(sql: "DELETE FROM parked_tracking WHERE parked_at < ?").execute(arguments: [millis])
    }
}
