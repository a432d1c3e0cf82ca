import Foundation
import ProjectionChangelog
import Projections
import GRDB

/// Tracking reports stored before their delivery's send (schema version 6): the pairs' park
/// marks, and the deletes their send or their expiry decides, in the SQLite store. Rare
/// statements: a send settles parked reports only when the tracking topic ran ahead.
enum SQLiteParkedTracking {
    static func park(_ pair: TrackingPair, at: Date, in db: Database) throws {
        try db.cachedStatement(sql: """
            INSERT INTO parked_tracking (delivery_id, app_id, parked_at) VALUES (?, ?, ?)
            ON CONFLICT (delivery_id, app_id) DO UPDATE SET parked_at = excluded.parked_at
            """).execute(arguments: [SQLiteValues.text(pair.deliveryId), SQLiteValues.text(pair.appId), SQLiteValues.millis(at)])
    }

    static func unpark(_ pair: TrackingPair, in db: Database) throws {
        try db.cachedStatement(sql: "DELETE FROM parked_tracking WHERE delivery_id = ? AND app_id = ?")
            .execute(arguments: [SQLiteValues.text(pair.deliveryId), SQLiteValues.text(pair.appId)])
    }

    static func delete(_ keys: [TrackingRowKey], of pair: TrackingPair, in db: Database) throws {
        let statement = try db.cachedStatement(sql: """
            DELETE FROM tracking_events WHERE delivery_id = ? AND app_id = ? AND action = ? AND message_index = ?
            """)
        let delivery = SQLiteValues.text(pair.deliveryId), app = SQLiteValues.text(pair.appId)
        for key in keys {
            try statement.execute(arguments: [delivery, app, key.action.rawValue, key.messageIndex])
        }
    }

    /// One range of the tracking key, then the mark.
    static func drop(_ pair: TrackingPair, in db: Database) throws {
        let arguments: StatementArguments = [SQLiteValues.text(pair.deliveryId), SQLiteValues.text(pair.appId)]
        try db.cachedStatement(sql: "DELETE FROM tracking_events WHERE delivery_id = ? AND app_id = ?").execute(arguments: arguments)
        try unpark(pair, in: db)
    }
}
