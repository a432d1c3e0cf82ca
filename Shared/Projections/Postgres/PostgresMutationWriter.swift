import Foundation
import ProjectionChangelog
import Projections
import Logging
import PostgresNIO

/// Writes one commit's mutations inside its transaction: a `WritePlan`, each group as
/// one multi-row statement over `unnest`ed array parameters, its rows in primary key order.
///
/// A commit of 20,000 mutations thus costs about a dozen round trips instead of 20,000, and
/// two transactions writing overlapping keys lock them in the same order.
struct PostgresMutationWriter {
    let connection: PostgresConnection
    let logger: Logger

    /// Writes `plan`, its rows in key order (`WritePlan.sortByKey()`).
    func write(_ plan: WritePlan) async throws {
        try await put(plan.apps.values)
        try await put(plan.tokens.values)
        try await writeDevices(plan.devices.values)
        try await writeStatuses(plan.statuses.values)
        try await writeOutbox(plan)
        try await writePending(plan)
        try await writeAcks(plan.acks.values)
        try await put(plan.deliveries.values)
        try await put(plan.outcomes.values)
        for phase in plan.phases {
            try await writeTracking(phase)
        }
        try await PostgresParkedTracking.write(plan.parks.values, on: connection, logger: logger)
        try await PostgresDeadLetters.write(plan.deadLetters, on: connection, logger: logger)
        try await put(plan.adminTokens.values)
        try await put(plan.audit.values)
        try await put(plan.idempotencyKeys.values)
        try await writeHeld(plan.heldPushes.values)
        try await put(plan.userSettings.values)
        try await writeCounted(plan.countedSends.values)
    }

    private func writeCounted(_ counted: [(key: CountedSendKey, row: CountedSendRow?)]) async throws {
        let deleted = counted.filter { $0.row == nil }.map(\.key)
        if !deleted.isEmpty {
            try await run("""
                DELETE FROM counted_sends c USING unnest(\(deleted.map(\.appId))::uuid[], \(deleted.map { Int64($0.part) })::bigint[],
                    \(deleted.map(\.delivery))::text[]) AS k(app_id, part, delivery)
                WHERE c.app_id = k.app_id AND c.part = k.part AND c.delivery = k.delivery
                """)
        }
        try await put(counted.compactMap(\.row))
    }

    private func writeHeld(_ held: [(key: HeldPushKey, row: HeldPushRow?)]) async throws {
        let deleted = held.filter { $0.row == nil }.map(\.key)
        if !deleted.isEmpty {
            try await run("""
                DELETE FROM held_pushes h USING unnest(\(deleted.map(\.delivery.appId))::uuid[], \(deleted.map(\.delivery.deliveryId))::uuid[],
                    \(deleted.map { Int64($0.delivery.part) })::bigint[], \(deleted.map(\.deviceToken))::text[]) AS k(app_id, delivery_id, part, device_token)
                WHERE h.app_id = k.app_id AND h.delivery_id = k.delivery_id AND h.part = k.part
                    AND h.token_key = \(unescaped: PostgresRows.unnestedTokenKey)
                """)
        }
        try await put(held.compactMap(\.row))
    }

    /// Writes whole rows of one table in one statement; by default each replaces the row of its key.
    /// Devices, pending notifications and acks are keyed by their token's SHA-256 (`token_key`,
    /// which the statement computes), not its text.
    private func put<Row: CatalogRow>(_ rows: [Row], onConflict: String? = nil) async throws {
        guard !rows.isEmpty else { return }
        let arrays = try PostgresColumnArrays(rows)
        var bindings = PostgresBindings(capacity: Row.table.columns.count)
        arrays.bind(into: &bindings)
        try await run(PostgresQuery(unsafeSQL: PostgresRows.upsert(Row.table, arguments: arrays.unnestArguments(), onConflict: onConflict),
                                    binds: bindings))
    }

    private func run(_ query: PostgresQuery) async throws {
        try await connection.run(query, logger: logger)
    }

    // MARK: - Apps, tokens, devices, statuses

    private func writeDevices(_ devices: [(key: DeviceKey, row: DeviceRow?)]) async throws {
        let deleted = devices.filter { $0.row == nil }.map(\.key)
        if !deleted.isEmpty {
            // The device row only: its pending rows go with an explicit `.clearPending`.
            try await run("""
                DELETE FROM devices d USING unnest(\(deleted.map(\.appId))::uuid[], \(deleted.map(\.deviceToken))::text[])
                    AS k(app_id, device_token)
                WHERE d.app_id = k.app_id AND d.token_key = \(unescaped: PostgresRows.unnestedTokenKey)
                """)
        }
        try await put(devices.compactMap(\.row))
    }

    private func writeStatuses(_ statuses: [(id: UUID, row: RegistrationStatusRow?)]) async throws {
        let deleted = statuses.filter { $0.row == nil }.map(\.id)
        if !deleted.isEmpty {
            try await run("DELETE FROM registration_status WHERE request_id = ANY(\(deleted)::uuid[])")
        }
        try await put(statuses.compactMap(\.row))
    }

    private func writeAcks(_ acks: [(key: PendingKey, row: AckRow?)]) async throws {
        try await delete(acks.filter { $0.row == nil }.map(\.key), from: "acks")
        try await put(acks.compactMap(\.row))
    }

    /// Deletes the rows of `keys` from `table`, one keyed by app, token and notification
    /// (`acks`, `pending_notifications`).
    private func delete(_ keys: [PendingKey], from table: String) async throws {
        guard !keys.isEmpty else { return }
        try await run("""
            DELETE FROM \(unescaped: table) t USING unnest(\(keys.map(\.appId))::uuid[],
                \(keys.map(\.deviceToken))::text[], \(keys.map(\.notificationId))::text[])
                AS k(app_id, device_token, notification_id)
            WHERE t.app_id = k.app_id AND t.token_key = \(unescaped: PostgresRows.unnestedTokenKey) AND t.notification_id = k.notification_id
            """)
    }

    // MARK: - Outbox

    private func writeOutbox(_ plan: WritePlan) async throws {
        let (enqueued, restored) = plan.outboxByKind
        if !enqueued.isEmpty {
            // A job id derives from the command that caused it: a replayed command finds its job
            // and leaves it (and its delivery progress) alone.
            try await put(enqueued, onConflict: "DO NOTHING")
        }
        if !restored.isEmpty {
            try await put(restored.map(\.job), onConflict: "DO \(TableCatalog.outbox.updateSet), lease_until = NULL")
            try await run("""
                DELETE FROM outbox_attempts a USING unnest(\(restored.map(\.job.id))::text[], \(restored.map { Int64($0.lowestAttempts) })::bigint[])
                    AS k(job_id, attempts)
                WHERE a.job_id = k.job_id AND a.attempt > k.attempts
                """)
        }
    }

    // MARK: - Managed notifications

    private func writePending(_ plan: WritePlan) async throws {
        let cleared = plan.pendingCleared.values
        if !cleared.isEmpty {
            try await run("""
                DELETE FROM pending_notifications p USING unnest(\(cleared.map(\.appId))::uuid[], \(cleared.map(\.deviceToken))::text[])
                    AS k(app_id, device_token)
                WHERE p.app_id = k.app_id AND p.token_key = \(unescaped: PostgresRows.unnestedTokenKey)
                """)
        }
        try await delete(Array(plan.pendingDeleted.values), from: "pending_notifications")
        try await put(plan.pendingPuts.values)
    }

    // MARK: - Deliveries and tracking

    private func writeTracking(_ phase: WritePlan.TrackingPhase) async throws {
        if !phase.drops.isEmpty {
            let drops = phase.drops.sorted(by: KeyOrder.less)
            try await run("""
                DELETE FROM tracking_events t USING unnest(\(drops.map(\.deliveryId))::uuid[], \(drops.map(\.appId))::uuid[],
                    \(drops.map(\.part))::integer[]) AS k(delivery_id, app_id, part)
                WHERE t.delivery_id = k.delivery_id AND t.app_id = k.app_id AND t.part = k.part
                """)
        }
        if !phase.deletes.isEmpty {
            let deletes = phase.deletes.sorted()
            try await run("""
                DELETE FROM tracking_events t USING unnest(\(deletes.map(\.deliveryId))::uuid[], \(deletes.map(\.appId))::uuid[],
                    \(deletes.map(\.part))::integer[], \(deletes.map(\.action))::integer[], \(deletes.map(\.messageIndex))::bigint[])
                    AS k(delivery_id, app_id, part, action, message_index)
                WHERE t.delivery_id = k.delivery_id AND t.app_id = k.app_id AND t.part = k.part AND t.action = k.action
                    AND t.message_index = k.message_index
                """)
        }
        let counts = phase.reports.values.sorted { $0.key < $1.key }
        guard !counts.isEmpty else { return }
        // A first report stores the row; every later one of the same (device, action) is a
        // repeat. `excluded.repeats` is the phase's reports minus one.
        try await run("""
            INSERT INTO tracking_events (delivery_id, app_id, action, message_index, repeats, part)
            SELECT * FROM unnest(\(counts.map(\.key.deliveryId))::uuid[], \(counts.map(\.key.appId))::uuid[],
                \(counts.map(\.key.action))::integer[], \(counts.map(\.key.messageIndex))::bigint[],
                \(counts.map { $0.reports - 1 })::bigint[], \(counts.map(\.key.part))::integer[])
            ON CONFLICT (delivery_id, app_id, part, action, message_index)
            DO UPDATE SET repeats = tracking_events.repeats + excluded.repeats + 1
            """)
    }
}
