import Foundation
import ProjectionChangelog
import Projections
import Logging
import PostgresNIO

/// Writes a restore's final rows (`RestoredRows`) into the empty tables `beginRestore`
/// prepared, with `COPY … FROM STDIN` in text format (`PostgresCopyText`): the server parses
/// each row once and inserts it, without the planning, conflict checks and array decoding of the
/// multi-row upserts (docs/ARCHITECTURE.md#changelog-and-restore).
///
/// The rows of a chunk are split between several connections (`part` of `parts`: a contiguous
/// slice of each table's rows), which the store runs at once, so that the server parses and
/// inserts on more than one core. The rare tables (apps, tokens, outbox jobs, park marks, dead
/// letters) go through `PostgresMutationWriter` with part 0, as a commit writes them.
struct PostgresRestoreLoader {
    let connection: PostgresConnection
    let logger: Logger

    /// What is sent to the server in one message: the server parses a part while the next is
    /// written.
    static let sendBytes = 1 << 20

    func load(_ rows: RestoredRows, part: Int, of parts: Int) async throws {
        if part == 0 {
            var rare = rows
            (rare.devices, rare.statuses, rare.pending, rare.acks, rare.deliveries, rare.outcomes, rare.tracking) = ([], [], [], [], [], [], [])
            try await PostgresMutationWriter(connection: connection, logger: logger).write(WritePlan(rare.mutations))
        }
        func slice<Row>(_ rows: [Row]) -> ArraySlice<Row> {
            rows[rows.count * part / parts ..< rows.count * (part + 1) / parts]
        }
        try await copy(slice(rows.devices), into: "devices", TableCatalog.devices.columnList + ", token_key") { text, row in
            text.uuid(row.appId); text.text(row.deviceToken); text.text(row.userId); text.text(row.platform.rawValue)
            text.int(row.version); text.millis(row.updatedAt); text.tokenKey(row.deviceToken)
        }
        try await copy(slice(rows.statuses), into: "registration_status", TableCatalog.registrationStatus.columnList) { text, row in
            text.uuid(row.requestId); text.uuid(row.appId); text.text(row.status.rawValue); text.text(row.failureReason?.rawValue)
            text.millis(row.decidedAt)
        }
        try await copy(slice(rows.pending), into: "pending_notifications", TableCatalog.pendingNotifications.columnList + ", token_key") { text, row in
            text.uuid(row.appId); text.text(row.deviceToken); text.text(row.notificationId); text.uuid(row.deliveryId)
            text.millis(row.sentAt); text.text(row.text); text.text(row.businessId); text.tokenKey(row.deviceToken)
        }
        try await copy(slice(rows.acks), into: "acks", TableCatalog.acks.columnList + ", token_key") { text, row in
            text.uuid(row.appId); text.text(row.deviceToken); text.text(row.notificationId); text.text(row.businessId)
            text.millis(row.ackedAt); text.tokenKey(row.deviceToken)
        }
        try await copy(slice(rows.deliveries), into: "deliveries", TableCatalog.deliveries.columnList) { text, row in
            text.uuid(row.appId); text.uuid(row.deliveryId); text.text(row.kind.rawValue); text.bool(row.managed)
            text.bool(row.tracking); text.int(Int64(row.sent)); text.millis(row.createdAt); text.int(Int64(row.delivered))
            text.int(Int64(row.failed)); text.int(Int64(row.unregistered)); text.text(row.idempotencyKey); text.text(row.requestHash)
            text.int(Int64(row.duplicates)); text.int(Int64(row.conflicts))
        }
        try await copy(slice(rows.outcomes), into: "delivery_outcomes", TableCatalog.deliveryOutcomes.columnList) { text, row in
            text.uuid(row.appId); text.uuid(row.deliveryId); text.int(Int64(row.messageIndex)); text.text(row.deviceToken)
            text.text(row.outcome.rawValue); text.text(row.reason); text.millis(row.reportedAt)
        }
        try await copy(slice(rows.tracking), into: "tracking_events", PostgresRows.trackedColumns) { text, row in
            text.uuid(row.deliveryId); text.uuid(row.appId); text.int(Int64(row.action)); text.int(row.messageIndex)
            text.int(row.repeats)
        }
    }

    /// Copies `rows` into `table`; `encode` writes one row's values in the order of `columns`.
    private func copy<Row>(_ rows: ArraySlice<Row>, into table: String, _ columns: String,
                           encode: (inout PostgresCopyText, Row) -> Void) async throws {
        guard !rows.isEmpty else { return }
        let names = columns.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        try await connection.copyFrom(table: table, columns: names, logger: logger) { writer in
            var text = PostgresCopyText(capacity: Self.sendBytes + (64 << 10))
            for row in rows {
                encode(&text, row)
                text.endRow()
                if text.buffer.readableBytes >= Self.sendBytes { try await writer.write(text.take()) }
            }
            if text.buffer.readableBytes > 0 { try await writer.write(text.buffer) }
        }
    }
}
