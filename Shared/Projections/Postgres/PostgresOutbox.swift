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
    static func claim(now: Date, limit: Int, leaseUntil: Date, slots: OutboxSlots, on connection: PostgresConnection,
                      logger: Logger) async throws -> [OutboxJob] {
        guard limit > 0 else { return [] }
        let nowMillis = ProjectionValues.millis(now)
        // Each look locks what it takes for this transaction; a job another claim holds is skipped.
        func due(_ app: UUID?, _ take: Int) async throws -> [String] {
            // Numbers only, written out: jobs of no app match `app_id IS NULL`, which no bound value says.
            let rest = """
                AND next_attempt_at <= \(nowMillis) AND (lease_until IS NULL OR lease_until < \(nowMillis))
                ORDER BY next_attempt_at, created_at, id LIMIT \(take) FOR UPDATE SKIP LOCKED
                """
            let rows = if let app {
                try await connection.rows("SELECT id FROM outbox WHERE \(unescaped: OutboxSlots.claimable) AND app_id = \(app) \(unescaped: rest)", logger: logger)
            } else {
                try await connection.rows("SELECT id FROM outbox WHERE \(unescaped: OutboxSlots.claimable) AND app_id IS NULL \(unescaped: rest)", logger: logger)
            }
            return try rows.map { try $0.decode(String.self) }
        }
        var ids = try await due(nil, limit)
        var walk = OutboxAppWalk(after: slots.after)
        while !walk.done, ids.count < limit {
            let found = try await connection.rows(walk.from.map { from in
                "SELECT app_id FROM outbox WHERE \(unescaped: OutboxSlots.claimable) AND app_id > \(from) ORDER BY app_id LIMIT 1"
            } ?? "SELECT app_id FROM outbox WHERE \(unescaped: OutboxSlots.claimable) AND app_id IS NOT NULL ORDER BY app_id LIMIT 1", logger: logger)
            guard let app = walk.found(try found.first?.decode(UUID?.self)) else { continue }
            let take = min(slots.left(app), limit - ids.count)
            guard take > 0 else { continue }
            ids += try await due(app, take)
        }
        guard !ids.isEmpty else { return [] }
        let rows = try await connection.rows("""
            UPDATE outbox SET lease_until = \(ProjectionValues.millis(leaseUntil)) WHERE id = ANY(\(ids))
            RETURNING \(unescaped: TableCatalog.outbox.columnList)
            """, logger: logger)
        // RETURNING has no order of its own: in the order taken.
        let byId = Dictionary(uniqueKeysWithValues: try rows.map(OutboxJob.init(postgres:)).map { ($0.id, $0) })
        return ids.compactMap { byId[$0] }
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
