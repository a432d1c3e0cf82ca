import Foundation
import ProjectionChangelog
import Projections
import GRDB

/// The park marks of tracking reports stored before their delivery's send (schema version 6),
/// in the SQLite store. Rare statements: a send settles parked reports only when the tracking
/// topic ran ahead.
enum SQLiteParkedTracking {
    static func park(_ pair: TrackingPair, at: Date, in db: Database) throws {
        try db.cachedStatement(sql: """
            INSERT INTO parked_tracking (delivery_id, app_id, parked_at, part) VALUES (?, ?, ?, ?)
            ON CONFLICT (delivery_id, app_id, part) DO UPDATE SET parked_at = excluded.parked_at
            """).execute(arguments: [SQLiteValues.text(pair.deliveryId), SQLiteValues.text(pair.appId), SQLiteValues.millis(at), pair.part])
    }

    static func unpark(_ pair: TrackingPair, in db: Database) throws {
        try db.cachedStatement(sql: "DELETE FROM parked_tracking WHERE delivery_id = ? AND app_id = ? AND part = ?")
            .execute(arguments: [SQLiteValues.text(pair.deliveryId), SQLiteValues.text(pair.appId), pair.part])
    }
}
