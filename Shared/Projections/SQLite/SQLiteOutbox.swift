import Contracts
import Foundation
import ProjectionChangelog
import Projections
import GRDB

/// The dispatcher's side of the outbox: leasing due jobs and recording their attempts.
///
/// A lease (`lease_until`) rather than a state change marks a job as taken, so a dispatcher
/// that dies mid-attempt loses nothing: its lease runs out and the job is claimed again.
enum SQLiteOutbox {
    static func claim(now: Date, limit: Int, leaseUntil: Date, excludingApps: Set<UUID>, in db: Database) throws -> [OutboxJob] {
        guard limit > 0 else { return [] }
        let nowMillis = SQLiteValues.millis(now)
        // The excluded apps as one JSON array argument, so the statement is prepared once.
        let excluded = "[" + excludingApps.map { "\"\(SQLiteValues.text($0))\"" }.joined(separator: ",") + "]"
        let select = try db.cachedStatement(sql: """
            SELECT \(TableCatalog.outbox.columnList) FROM outbox
            WHERE state = 'pending' AND kind <> '\(CallbackShare.jobKind)' AND next_attempt_at <= ? AND (lease_until IS NULL OR lease_until < ?)
                AND (app_id IS NULL OR app_id NOT IN (SELECT value FROM json_each(?)))
            ORDER BY next_attempt_at, created_at, id
            LIMIT ?
            """)
        let jobs = try Row.fetchAll(select, arguments: [nowMillis, nowMillis, excluded, limit]).map(OutboxJob.init(sqlite:))
        let lease = try db.cachedStatement(sql: "UPDATE outbox SET lease_until = ? WHERE id = ?")
        let until = SQLiteValues.millis(leaseUntil)
        for job in jobs {
            try lease.execute(arguments: [until, job.id])
        }
        return jobs
    }

    static func record(jobId: String, lease: Date?, result: OutboxAttemptResult, in db: Database) throws -> Bool {
        let current = try db.cachedStatement(sql: "SELECT attempts, next_attempt_at, lease_until FROM outbox WHERE id = ?")
        guard let row = try Row.fetchOne(current, arguments: [jobId]) else {
            throw ProjectionStoreError.database("no outbox job with id '\(jobId)'")
        }
        if let lease {
            let leasedUntil: Int64? = try row.decode(atIndex: 2)
            guard leasedUntil == SQLiteValues.millis(lease) else { return false }
        }
        let attempt: Int = try row.decode(atIndex: 0) + 1
        let (state, outcome, nextAttemptAt) = result.settle(nextAttemptAt: try row.decode(atIndex: 1))
        let at = SQLiteValues.millis(result.at)
        try db.cachedStatement(sql: """
            INSERT INTO outbox_attempts (job_id, attempt, at, http_status, error, outcome) VALUES (?, ?, ?, ?, ?, ?)
            """).execute(arguments: [jobId, attempt, at, result.httpStatus, result.error, outcome.rawValue])
        try db.cachedStatement(sql: """
            UPDATE outbox SET attempts = ?, state = ?, next_attempt_at = ?, last_status = ?, last_error = ?,
                lease_until = NULL
            WHERE id = ?
            """).execute(arguments: [attempt, state.rawValue, nextAttemptAt, result.httpStatus, result.error, jobId])
        return true
    }

    static func release(jobId: String, lease: Date, in db: Database) throws {
        try db.cachedStatement(sql: "UPDATE outbox SET lease_until = NULL WHERE id = ? AND lease_until = ?")
            .execute(arguments: [jobId, SQLiteValues.millis(lease)])
    }

    /// The jobs of these ids that are stored.
    static func jobs(_ ids: [String], in db: Database) throws -> [OutboxJob] {
        try ids.flatMap { try db.rows(ReaderReads.outboxJob($0)) }
    }
}
