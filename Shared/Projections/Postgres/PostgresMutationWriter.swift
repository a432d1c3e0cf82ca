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

    func write(_ plan: WritePlan) async throws {
        try await writeApps(plan.apps.values.sorted { KeyOrder.less($0.appId, $1.appId) })
        try await writeTokens(plan.tokens.values.sorted { KeyOrder.less($0.tokenId, $1.tokenId) })
        try await writeDevices(plan.devices.values.sorted { KeyOrder.less(($0.key.appId, $0.key.deviceToken),
                                                                          ($1.key.appId, $1.key.deviceToken)) })
        try await writeStatuses(plan.statuses.values.sorted { KeyOrder.less($0.requestId, $1.requestId) })
        try await writeOutbox(plan.outbox.values.sorted { KeyOrder.less($0.job.id, $1.job.id) })
        try await writePending(plan)
        try await writeAcks(plan.acks.values.sorted { KeyOrder.less(Self.key($0.key), Self.key($1.key)) })
        try await writeDeliveries(plan.deliveries.values.sorted {
            $0.appId != $1.appId ? KeyOrder.less($0.appId, $1.appId) : KeyOrder.less($0.deliveryId, $1.deliveryId)
        })
        try await writeOutcomes(plan.outcomes.values.sorted { KeyOrder.less($0.key, $1.key) })
        for phase in plan.phases {
            try await writeTracking(phase)
        }
        try await PostgresParkedTracking.write(plan.parks, on: connection, logger: logger)
        try await PostgresDeadLetters.write(plan.deadLetters, on: connection, logger: logger)
        try await writeAdminTokens(plan.adminTokens.values.sorted { KeyOrder.less($0.adminTokenId, $1.adminTokenId) })
        try await writeAudit(plan.audit.values.sorted { KeyOrder.less($0.commandId, $1.commandId) })
        try await writeIdempotencyKeys(plan.idempotencyKeys.values.sorted(by: KeyOrder.less))
    }

    // MARK: - Admin tokens and the audit trail

    private func writeAdminTokens(_ tokens: [AdminTokenRow]) async throws {
        guard !tokens.isEmpty else { return }
        try await run("""
            INSERT INTO admin_tokens (\(unescaped: TableCatalog.adminTokens.columnList))
            SELECT * FROM unnest(\(tokens.map(\.adminTokenId))::uuid[], \(tokens.map(\.name))::text[], \(tokens.map(\.tokenHash))::text[],
                \(tokens.map(\.revoked))::boolean[], \(tokens.map { ProjectionValues.millis($0.createdAt) })::bigint[],
                \(PostgresArray(tokens.map { $0.revokedAt.map(ProjectionValues.millis) }))::bigint[])
            ON CONFLICT (admin_token_id) DO UPDATE SET name = excluded.name, token_hash = excluded.token_hash,
                revoked = excluded.revoked, created_at = excluded.created_at, revoked_at = excluded.revoked_at
            """)
    }

    private func writeIdempotencyKeys(_ rows: [IdempotencyKeyRow]) async throws {
        guard !rows.isEmpty else { return }
        try await run("""
            INSERT INTO idempotency_keys (\(unescaped: TableCatalog.idempotencyKeys.columnList))
            SELECT * FROM unnest(\(rows.map(\.scope))::text[], \(rows.map(\.key))::text[], \(rows.map(\.resourceId))::uuid[],
                \(rows.map(\.requestHash))::text[], \(rows.map { ProjectionValues.millis($0.firstAt) })::bigint[])
            ON CONFLICT (scope, idempotency_key) DO UPDATE SET resource_id = excluded.resource_id,
                request_hash = excluded.request_hash, first_at = excluded.first_at
            """)
    }

    private func writeAudit(_ entries: [AuditEntryRow]) async throws {
        guard !entries.isEmpty else { return }
        try await run("""
            INSERT INTO audit_log (\(unescaped: TableCatalog.auditLog.columnList))
            SELECT * FROM unnest(\(entries.map(\.commandId))::uuid[], \(entries.map { ProjectionValues.millis($0.at) })::bigint[],
                \(entries.map(\.type))::text[], \(PostgresArray(entries.map(\.appId)))::uuid[], \(PostgresArray(entries.map(\.actorId)))::uuid[],
                \(PostgresArray(entries.map(\.actorName)))::text[], \(PostgresArray(entries.map(\.requestId)))::text[],
                \(entries.map(\.outcome))::text[], \(PostgresArray(entries.map(\.reason)))::text[], \(entries.map(\.changes))::text[])
            ON CONFLICT (command_id) DO UPDATE SET at = excluded.at, type = excluded.type, app_id = excluded.app_id,
                actor_id = excluded.actor_id, actor_name = excluded.actor_name, request_id = excluded.request_id,
                outcome = excluded.outcome, reason = excluded.reason, changes = excluded.changes
            """)
    }

    private static func key(_ key: PendingKey) -> (UUID, String, String) {
        (key.appId, key.deviceToken, key.notificationId)
    }

    private func run(_ query: PostgresQuery) async throws {
        try await connection.run(query, logger: logger)
    }

    // MARK: - Apps, tokens, devices, statuses

    private func writeApps(_ apps: [AppRow]) async throws {
        guard !apps.isEmpty else { return }
        let headers = try apps.map { try ProjectionValues.headersJSON($0.callbackHeaders) }
        let credentials = try apps.map { try ProjectionValues.pushCredentialsJSON($0.pushCredentials) }
        try await run("""
            INSERT INTO apps (app_id, org_id, name, callback_url, callback_headers, webhook_retries, created_at, push_credentials)
            SELECT * FROM unnest(\(apps.map(\.appId))::uuid[], \(apps.map(\.orgId))::uuid[], \(apps.map(\.name))::text[],
                \(PostgresArray(apps.map(\.callbackUrl)))::text[], \(headers)::text[],
                \(apps.map { Int64($0.webhookRetries) })::bigint[], \(apps.map { ProjectionValues.millis($0.createdAt) })::bigint[],
                \(PostgresArray(credentials))::text[])
            ON CONFLICT (app_id) DO UPDATE SET org_id = excluded.org_id, name = excluded.name,
                callback_url = excluded.callback_url, callback_headers = excluded.callback_headers,
                webhook_retries = excluded.webhook_retries, created_at = excluded.created_at,
                push_credentials = excluded.push_credentials
            """)
    }

    private func writeTokens(_ tokens: [ApiTokenRow]) async throws {
        guard !tokens.isEmpty else { return }
        try await run("""
            INSERT INTO api_tokens (token_id, app_id, token_hash, revoked, created_at, scopes)
            SELECT * FROM unnest(\(tokens.map(\.tokenId))::uuid[], \(tokens.map(\.appId))::uuid[], \(tokens.map(\.tokenHash))::text[],
                \(tokens.map(\.revoked))::boolean[], \(tokens.map { ProjectionValues.millis($0.createdAt) })::bigint[],
                \(PostgresArray(tokens.map { ProjectionValues.scopesColumn($0.scopes) }))::text[])
            ON CONFLICT (token_id) DO UPDATE SET app_id = excluded.app_id, token_hash = excluded.token_hash,
                revoked = excluded.revoked, created_at = excluded.created_at, scopes = excluded.scopes
            """)
    }

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
        let rows = devices.compactMap(\.row)
        guard !rows.isEmpty else { return }
        try await run("""
            INSERT INTO devices (app_id, token_key, device_token, user_id, platform, version, updated_at)
            SELECT k.app_id, \(unescaped: PostgresRows.unnestedTokenKey), k.device_token, k.user_id, k.platform, k.version, k.updated_at
            FROM unnest(\(rows.map(\.appId))::uuid[], \(rows.map(\.deviceToken))::text[], \(rows.map(\.userId))::text[],
                \(rows.map(\.platform.rawValue))::text[], \(rows.map(\.version))::bigint[],
                \(rows.map { ProjectionValues.millis($0.updatedAt) })::bigint[])
                AS k(app_id, device_token, user_id, platform, version, updated_at)
            ON CONFLICT (app_id, token_key) DO UPDATE SET user_id = excluded.user_id, platform = excluded.platform,
                version = excluded.version, updated_at = excluded.updated_at
            """)
    }

    private func writeStatuses(_ statuses: [RegistrationStatusRow]) async throws {
        guard !statuses.isEmpty else { return }
        try await run("""
            INSERT INTO registration_status (request_id, app_id, status, failure_reason, decided_at)
            SELECT * FROM unnest(\(statuses.map(\.requestId))::uuid[], \(statuses.map(\.appId))::uuid[],
                \(statuses.map(\.status.rawValue))::text[], \(PostgresArray(statuses.map { $0.failureReason?.rawValue }))::text[],
                \(statuses.map { ProjectionValues.millis($0.decidedAt) })::bigint[])
            ON CONFLICT (request_id) DO UPDATE SET app_id = excluded.app_id, status = excluded.status,
                failure_reason = excluded.failure_reason, decided_at = excluded.decided_at
            """)
    }

    // MARK: - Outbox

    private func writeOutbox(_ writes: [WritePlan.OutboxWrite]) async throws {
        var enqueued: [OutboxJob] = [], restored: [OutboxJob] = [], lowestAttempts: [Int64] = []
        for write in writes {
            switch write {
            case .enqueue(let job): enqueued.append(job)
            case .restore(let job, let lowest):
                restored.append(job)
                lowestAttempts.append(Int64(lowest))
            }
        }
        if !enqueued.isEmpty {
            // A job id derives from the command that caused it: a replayed command finds its job
            // and leaves it (and its delivery progress) alone.
            try await run(try Self.outboxInsert(enqueued, onConflict: "DO NOTHING"))
        }
        if !restored.isEmpty {
            try await run(try Self.outboxInsert(restored, onConflict: """
                DO UPDATE SET kind = excluded.kind, app_id = excluded.app_id, url = excluded.url,
                    headers = excluded.headers, body = excluded.body, max_attempts = excluded.max_attempts,
                    attempts = excluded.attempts, next_attempt_at = excluded.next_attempt_at, state = excluded.state,
                    last_status = excluded.last_status, last_error = excluded.last_error, lease_until = NULL,
                    created_at = excluded.created_at
                """))
            try await run("""
                DELETE FROM outbox_attempts a USING unnest(\(restored.map(\.id))::text[], \(lowestAttempts)::bigint[])
                    AS k(job_id, attempts)
                WHERE a.job_id = k.job_id AND a.attempt > k.attempts
                """)
        }
    }

    private static func outboxInsert(_ jobs: [OutboxJob], onConflict: String) throws -> PostgresQuery {
        let headers = try jobs.map { try ProjectionValues.headersJSON($0.headers) }
        return """
            INSERT INTO outbox (id, kind, app_id, url, headers, body, max_attempts, attempts, next_attempt_at, state,
                last_status, last_error, lease_until, created_at)
            SELECT id, kind, app_id, url, headers, body, max_attempts, attempts, next_attempt_at, state,
                last_status, last_error, NULL, created_at
            FROM unnest(\(jobs.map(\.id))::text[], \(jobs.map(\.kind))::text[], \(PostgresArray(jobs.map(\.appId)))::uuid[],
                \(jobs.map(\.url))::text[], \(headers)::text[], \(jobs.map { ByteBuffer(bytes: $0.body) })::bytea[],
                \(jobs.map { Int64($0.maxAttempts) })::bigint[], \(jobs.map { Int64($0.attempts) })::bigint[],
                \(jobs.map { ProjectionValues.millis($0.nextAttemptAt) })::bigint[], \(jobs.map(\.state.rawValue))::text[],
                \(PostgresArray(jobs.map { $0.lastStatus.map(Int64.init) }))::bigint[], \(PostgresArray(jobs.map(\.lastError)))::text[],
                \(jobs.map { ProjectionValues.millis($0.createdAt) })::bigint[])
                AS j(id, kind, app_id, url, headers, body, max_attempts, attempts, next_attempt_at, state, last_status,
                    last_error, created_at)
            ON CONFLICT (id) \(unescaped: onConflict)
            """
    }

    // MARK: - Managed notifications

    private func writePending(_ plan: WritePlan) async throws {
        let cleared = plan.pendingCleared.values.sorted { KeyOrder.less(($0.appId, $0.deviceToken), ($1.appId, $1.deviceToken)) }
        if !cleared.isEmpty {
            try await run("""
                DELETE FROM pending_notifications p USING unnest(\(cleared.map(\.appId))::uuid[], \(cleared.map(\.deviceToken))::text[])
                    AS k(app_id, device_token)
                WHERE p.app_id = k.app_id AND p.token_key = \(unescaped: PostgresRows.unnestedTokenKey)
                """)
        }
        let deleted = plan.pendingDeleted.values.sorted { KeyOrder.less(Self.key($0), Self.key($1)) }
        if !deleted.isEmpty {
            try await run("""
                DELETE FROM pending_notifications p USING unnest(\(deleted.map(\.appId))::uuid[],
                    \(deleted.map(\.deviceToken))::text[], \(deleted.map(\.notificationId))::text[])
                    AS k(app_id, device_token, notification_id)
                WHERE p.app_id = k.app_id AND p.token_key = \(unescaped: PostgresRows.unnestedTokenKey) AND p.notification_id = k.notification_id
                """)
        }
        let rows = plan.pendingPuts.values.sorted { KeyOrder.less(Self.key($0.key), Self.key($1.key)) }
        guard !rows.isEmpty else { return }
        try await run("""
            INSERT INTO pending_notifications (app_id, token_key, device_token, notification_id, delivery_id, sent_at, text, business_id)
            SELECT k.app_id, \(unescaped: PostgresRows.unnestedTokenKey), k.device_token, k.notification_id, k.delivery_id, k.sent_at, k.text, k.business_id
            FROM unnest(\(rows.map(\.appId))::uuid[], \(rows.map(\.deviceToken))::text[],
                \(rows.map(\.notificationId))::text[], \(rows.map(\.deliveryId))::uuid[],
                \(rows.map { ProjectionValues.millis($0.sentAt) })::bigint[], \(rows.map(\.text))::text[],
                \(PostgresArray(rows.map(\.businessId)))::text[])
                AS k(app_id, device_token, notification_id, delivery_id, sent_at, text, business_id)
            ON CONFLICT (app_id, token_key, notification_id) DO UPDATE SET device_token = excluded.device_token,
                delivery_id = excluded.delivery_id, sent_at = excluded.sent_at, text = excluded.text, business_id = excluded.business_id
            """)
    }

    private func writeAcks(_ acks: [AckRow]) async throws {
        guard !acks.isEmpty else { return }
        try await run("""
            INSERT INTO acks (app_id, token_key, device_token, notification_id, business_id, acked_at)
            SELECT k.app_id, \(unescaped: PostgresRows.unnestedTokenKey), k.device_token, k.notification_id, k.business_id, k.acked_at
            FROM unnest(\(acks.map(\.appId))::uuid[], \(acks.map(\.deviceToken))::text[],
                \(acks.map(\.notificationId))::text[], \(PostgresArray(acks.map(\.businessId)))::text[],
                \(acks.map { ProjectionValues.millis($0.ackedAt) })::bigint[])
                AS k(app_id, device_token, notification_id, business_id, acked_at)
            ON CONFLICT (app_id, token_key, notification_id) DO UPDATE SET device_token = excluded.device_token,
                business_id = excluded.business_id, acked_at = excluded.acked_at
            """)
    }

    // MARK: - Deliveries and tracking

    private func writeDeliveries(_ deliveries: [DeliveryRow]) async throws {
        guard !deliveries.isEmpty else { return }
        try await run("""
            INSERT INTO deliveries (\(unescaped: TableCatalog.deliveries.columnList))
            SELECT * FROM unnest(\(deliveries.map(\.appId))::uuid[], \(deliveries.map(\.deliveryId))::uuid[],
                \(deliveries.map(\.kind.rawValue))::text[], \(deliveries.map(\.managed))::boolean[],
                \(deliveries.map(\.tracking))::boolean[], \(deliveries.map { Int64($0.sent) })::bigint[],
                \(deliveries.map { ProjectionValues.millis($0.createdAt) })::bigint[], \(deliveries.map { Int64($0.delivered) })::bigint[],
                \(deliveries.map { Int64($0.failed) })::bigint[], \(deliveries.map { Int64($0.unregistered) })::bigint[],
                \(PostgresArray(deliveries.map(\.idempotencyKey)))::text[], \(PostgresArray(deliveries.map(\.requestHash)))::text[],
                \(deliveries.map { Int64($0.duplicates) })::bigint[], \(deliveries.map { Int64($0.conflicts) })::bigint[])
            ON CONFLICT (app_id, delivery_id) DO UPDATE SET kind = excluded.kind, managed = excluded.managed,
                tracking = excluded.tracking, sent = excluded.sent, created_at = excluded.created_at,
                delivered = excluded.delivered, failed = excluded.failed, unregistered = excluded.unregistered,
                idempotency_key = excluded.idempotency_key, request_hash = excluded.request_hash,
                duplicates = excluded.duplicates, conflicts = excluded.conflicts
            """)
    }

    private func writeOutcomes(_ outcomes: [DeliveryOutcomeRow]) async throws {
        guard !outcomes.isEmpty else { return }
        try await run("""
            INSERT INTO delivery_outcomes (\(unescaped: TableCatalog.deliveryOutcomes.columnList))
            SELECT * FROM unnest(\(outcomes.map(\.appId))::uuid[], \(outcomes.map(\.deliveryId))::uuid[],
                \(outcomes.map { Int64($0.messageIndex) })::bigint[], \(outcomes.map(\.deviceToken))::text[],
                \(outcomes.map(\.outcome.rawValue))::text[], \(PostgresArray(outcomes.map(\.reason)))::text[],
                \(outcomes.map { ProjectionValues.millis($0.reportedAt) })::bigint[])
            ON CONFLICT (app_id, delivery_id, message_index) DO UPDATE SET device_token = excluded.device_token,
                outcome = excluded.outcome, reason = excluded.reason, reported_at = excluded.reported_at
            """)
    }

    private func writeTracking(_ phase: WritePlan.TrackingPhase) async throws {
        if !phase.drops.isEmpty {
            let drops = phase.drops.sorted(by: KeyOrder.less)
            try await run("""
                DELETE FROM tracking_events t USING unnest(\(drops.map(\.deliveryId))::uuid[], \(drops.map(\.appId))::uuid[])
                    AS k(delivery_id, app_id)
                WHERE t.delivery_id = k.delivery_id AND t.app_id = k.app_id
                """)
        }
        if !phase.deletes.isEmpty {
            let deletes = phase.deletes.sorted()
            try await run("""
                DELETE FROM tracking_events t USING unnest(\(deletes.map(\.deliveryId))::uuid[], \(deletes.map(\.appId))::uuid[],
                    \(deletes.map(\.action))::integer[], \(deletes.map(\.messageIndex))::bigint[])
                    AS k(delivery_id, app_id, action, message_index)
                WHERE t.delivery_id = k.delivery_id AND t.app_id = k.app_id AND t.action = k.action
                    AND t.message_index = k.message_index
                """)
        }
        let counts = phase.reports.sorted { $0.key < $1.key }
        guard !counts.isEmpty else { return }
        // A first report stores the row; every later one of the same (device, action) is a
        // repeat. `excluded.repeats` is the phase's reports minus one.
        try await run("""
            INSERT INTO tracking_events (delivery_id, app_id, action, message_index, repeats)
            SELECT * FROM unnest(\(counts.map(\.key.deliveryId))::uuid[], \(counts.map(\.key.appId))::uuid[],
                \(counts.map(\.key.action))::integer[], \(counts.map(\.key.messageIndex))::bigint[],
                \(counts.map { $0.value - 1 })::bigint[])
            ON CONFLICT (delivery_id, app_id, action, message_index)
            DO UPDATE SET repeats = tracking_events.repeats + excluded.repeats + 1
            """)
    }
}

extension WritePlan.OutboxWrite {
    var job: OutboxJob {
        switch self {
        case .enqueue(let job), .restore(let job, _): job
        }
    }
}
