import Foundation
import ProjectionChangelog
import Projections
import Logging
import PostgresNIO

/// The park marks of tracking reports stored before their delivery's send (schema version 6),
/// in the PostgreSQL store: each pair's last mark, or none.
enum PostgresParkedTracking {
    /// Writes each pair's mark, in key order.
    static func write(_ parks: [(pair: TrackingPair, at: Date?)], on connection: PostgresConnection, logger: Logger) async throws {
        guard !parks.isEmpty else { return }
        let removed = parks.filter { $0.at == nil }.map(\.pair)
        if !removed.isEmpty {
            try await connection.run("""
                DELETE FROM parked_tracking p USING unnest(\(removed.map(\.deliveryId))::uuid[], \(removed.map(\.appId))::uuid[],
                    \(removed.map(\.part))::integer[]) AS k(delivery_id, app_id, part)
                WHERE p.delivery_id = k.delivery_id AND p.app_id = k.app_id AND p.part = k.part
                """, logger: logger)
        }
        let marks = parks.compactMap { entry in entry.at.map { (pair: entry.pair, at: $0) } }
        guard !marks.isEmpty else { return }
        try await connection.run("""
            INSERT INTO parked_tracking (delivery_id, app_id, parked_at, part)
            SELECT * FROM unnest(\(marks.map(\.pair.deliveryId))::uuid[], \(marks.map(\.pair.appId))::uuid[],
                \(marks.map { ProjectionValues.millis($0.at) })::bigint[], \(marks.map(\.pair.part))::integer[])
            ON CONFLICT (delivery_id, app_id, part) DO UPDATE SET parked_at = excluded.parked_at
            """, logger: logger)
    }
}
