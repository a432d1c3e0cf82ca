import Contracts
import Foundation
import ProjectionChangelog
import Projections
import GRDB

/// The reads that select part of a table (the bespoke queries); whole rows are read by their
/// row type (`CatalogRow.init(sqlite:)`).
enum SQLiteRows {
    static let trackedColumns = "app_id, action, message_index, repeats, part"

    static func tracked(_ row: Row, from start: Int) throws -> TrackedEvent {
        try TrackedEvent(
            appId: SQLiteValues.uuid(row.decode(atIndex: start), column: "tracking_events.app_id"),
            action: SQLiteValues.decode(TrackingAction.self, row.decode(atIndex: start + 1), column: "tracking_events.action"),
            messageIndex: row.decode(atIndex: start + 2),
            repeats: row.decode(atIndex: start + 3),
            part: row.decode(atIndex: start + 4))
    }
}
