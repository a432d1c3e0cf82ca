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
            try await PostgresMutationWriter(connection: connection, logger: logger).write(WritePlan.inKeyOrder(rare.mutations))
        }
        func slice<Row>(_ rows: [Row]) -> ArraySlice<Row> {
            rows[rows.count * part / parts ..< rows.count * (part + 1) / parts]
        }
        try await copy(slice(rows.devices))
        try await copy(slice(rows.statuses))
        try await copy(slice(rows.pending))
        try await copy(slice(rows.acks))
        try await copy(slice(rows.deliveries))
        try await copy(slice(rows.outcomes))
        try await copy(slice(rows.tracking))
    }

    /// Copies `rows` into their table; a table keyed by a device token gets each token's key too.
    private func copy<Row: CatalogRow>(_ rows: ArraySlice<Row>) async throws {
        guard !rows.isEmpty else { return }
        let table = Row.table
        let byTokenKey = PostgresRows.keyedByToken(table)
        let names = table.columns.map(\.name) + (byTokenKey ? ["token_key"] : [])
        try await connection.copyFrom(table: table.name, columns: names, logger: logger) { writer in
            var text = PostgresCopyText(capacity: Self.sendBytes + (64 << 10))
            for row in rows {
                try row.writeColumns(to: &text)
                if byTokenKey, let token = (row as? DeviceRow)?.deviceToken ?? (row as? PendingNotificationRow)?.deviceToken
                    ?? (row as? AckRow)?.deviceToken {
                    text.tokenKey(token)
                }
                text.endRow()
                if text.buffer.readableBytes >= Self.sendBytes { try await writer.write(text.take()) }
            }
            if text.buffer.readableBytes > 0 { try await writer.write(text.buffer) }
        }
    }
}
