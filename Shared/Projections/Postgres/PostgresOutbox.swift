import Contracts
import Foundation
import ProjectionChangelog
import Projections
import Logging
import PostgresNIO

/// The dispatcher's side of the outbox in PostgreSQL: leasing due jobs and recording attempts.
///
/// A claim picks and leases in one statement; `FOR UPDATE SKIP LOCKED` lets dispatchers of
/// several processors claim at once without waiting for each other or taking the same job.
/// A lease (`lease_until`) rather than a state change marks a job as taken, so a dispatcher
/// that dies mid-attempt loses nothing: its lease runs out and the job is claimed again.
enum PostgresOutbox {
    static func claim(now: Date, limit: Int, leaseUntil: Date, excludingApps: Set<UUID>, on connection: PostgresConnection,
                      logger: Logger) async throws -> [OutboxJob] {
        guard limit > 0 else { return [] }
        let nowMillis = ProjectionValues.millis(now)
        let rows = try await connection.rows("""
            WITH due AS (
                SELECT id FROM outbox
                WHERE state = 'pending' AND kind <> \(CallbackShare.jobKind) AND next_attempt_at <= \(nowMillis) AND (lease_until IS NULL OR lease_until < \(nowMillis))
                    AND (app_id IS NULL OR app_id <> ALL(\(Array(excludingApps))::uuid[]))
                ORDER BY next_attempt_at, created_at, id
                LIMIT \(Int64(limit))
                FOR UPDATE SKIP LOCKED)
            UPDATE outbox o SET lease_until = \(ProjectionValues.millis(leaseUntil)) FROM due WHERE o.id = due.id
            RETURNING o.id, o.kind, o.app_id, o.url, o.headers, o.body, o.max_attempts, o.attempts, o.next_attempt_at, o.state,
                o.last_status, o.last_error, o.created_at
            """, logger: logger)
        // The columns of `TableCatalog.outbox.columnList`. RETURNING has no order of its own: oldest
        // first, as selected.
        return try rows.map(OutboxJob.init(postgres:)).sorted { a, b in
            if a.nextAttemptAt != b.nextAttemptAt { return a.nextAttemptAt < b.nextAttemptAt }
            if a.createdAt != b.createdAt { return a.createdAt < b.createdAt }
            return KeyOrder.less(a.id, b.id)
        }
    }

    static func record(jobId: String, lease: Date?, result: OutboxAttemptResult, on connection: PostgresConnection,
                       logger: Logger) async throws -> Bool {
        let current = try await connection.rows("""
            SELECT attempts, next_attempt_at, lease_until FROM outbox WHERE id = \(jobId) FOR UPDATE
            """, logger: logger)
        guard let row = current.first else {
            throw ProjectionStoreError.database("no outbox job with id '\(jobId)'")
        }
        let (attempts, storedNext, leasedUntil) = try row.decode((Int64, Int64, Int64?).self)
        if let lease, leasedUntil != ProjectionValues.millis(lease) { return false }
        let attempt = attempts + 1
        let (state, outcome, nextAttemptAt) = result.settle(nextAttemptAt: storedNext)
        let httpStatus = result.httpStatus.map(Int64.init)
        try await connection.run("""
            INSERT INTO outbox_attempts (job_id, attempt, at, http_status, error, outcome)
            VALUES (\(jobId), \(attempt), \(ProjectionValues.millis(result.at)), \(httpStatus), \(result.error), \(outcome.rawValue))
            """, logger: logger)
        try await connection.run("""
            UPDATE outbox SET attempts = \(attempt), state = \(state.rawValue), next_attempt_at = \(nextAttemptAt),
                last_status = \(httpStatus), last_error = \(result.error), lease_until = NULL
            WHERE id = \(jobId)
            """, logger: logger)
        return true
    }

    static func release(jobId: String, lease: Date, on connection: PostgresConnection, logger: Logger) async throws {
        try await connection.run("""
            UPDATE outbox SET lease_until = NULL WHERE id = \(jobId) AND lease_until = \(ProjectionValues.millis(lease))
            """, logger: logger)
    }

    /// The jobs of these ids that are stored.
    static func jobs(_ ids: [String], on connection: PostgresConnection, logger: Logger) async throws -> [OutboxJob] {
        try await connection.rows("SELECT \(unescaped: TableCatalog.outbox.columnList) FROM outbox WHERE id = ANY(\(ids))", logger: logger)
            .map(OutboxJob.init(postgres:))
    }

    /// Takes the transaction's lock on the callback shares of one delivery (named by its first
    /// share's id). Two-key advisory locks are a key space of their own, apart from the
    /// one-key lock that opening a store takes.
    static func lockShares(_ id: String, on connection: PostgresConnection, logger: Logger) async throws {
        try await connection.run("SELECT pg_advisory_xact_lock(\(sharesLockClass), hashtext(\(id)))", logger: logger)
    }

    /// The first key of the callback shares' locks ("PL" and 1).
    private static let sharesLockClass: Int32 = 0x504C_0001
}
