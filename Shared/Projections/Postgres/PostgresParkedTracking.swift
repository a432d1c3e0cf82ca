import Foundation
import Logging
import PostgresNIO

/// Marks of tracking reports parked before their delivery's send, and their expiry (schema
/// version 6), in the PostgreSQL store.
enum PostgresParkedTracking {
    static func write(parks: [(deliveryId: UUID, appId: UUID, at: Date)], expireBefore: Date?, on connection: PostgresConnection,
                      logger: Logger) async throws {
        if !parks.isEmpty {
            let sorted = parks.sorted { $0.deliveryId != $1.deliveryId ? KeyOrder.less($0.deliveryId, $1.deliveryId) : KeyOrder.less($0.appId, $1.appId) }
            try await connection.run("""
                INSERT INTO parked_tracking (delivery_id, app_id, parked_at)
                SELECT * FROM unnest(\(sorted.map(\.deliveryId))::uuid[], \(sorted.map(\.appId))::uuid[],
                    \(sorted.map { ProjectionValues.millis($0.at) })::bigint[])
                ON CONFLICT (delivery_id, app_id) DO NOTHING
                """, logger: logger)
        }
        guard let expireBefore else { return }
        let millis = ProjectionValues.millis(expireBefore)
        try await connection.run("""
            DELETE FROM tracking_events t USING parked_tracking p
            WHERE p.delivery_id = t.delivery_id AND p.app_id = t.app_id AND p.parked_at < \(millis)
            AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.delivery_id = t.delivery_id)
            """, logger: logger)
        try await connection.run("DELETE FROM parked_tracking WHERE parked_at < \(millis)", logger: logger)
    }
}
