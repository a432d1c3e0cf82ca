import Contracts
import Foundation
import GRDB

/// The dispatcher's side of the outbox: leasing due jobs and recording their attempts.
///
/// A lease (`lease_until`) rather than a state change marks a job as taken, so a dispatcher
/// that dies mid-attempt loses nothing: its lease runs out and the job is claimed again.
enum SQLiteOutbox {
    static func claim(now: Date, limit: Int, leaseUntil: Date, in db: Database) throws -> [OutboxJob] {
        guard limit > 0 else { return [] }
        let nowMillis = SQLiteValues.millis(now)
        let select = try db.cachedStatement(sql: """
            SELECT \(SQLiteRows.outboxColumns) FROM outbox
            WHERE state = 'pending' AND next_attempt_at <= ? AND (lease_until IS NULL OR lease_until < ?)
            ORDER BY next_attempt_at, created_at, id
            LIMIT ?
            """)
        let jobs = try Row.fetchAll(select, arguments: [nowMillis, nowMillis, limit]).map(SQLiteRows.outboxJob)
        let lease = try db.cachedStatement(sql: "UPDATE outbox SET lease_until = ? WHERE id = ?")
        let until = SQLiteValues.millis(leaseUntil)
        for job in jobs {
            try lease.execute(arguments: [until, job.id])
        }
        return jobs
    }

    static func record(jobId: String, result: OutboxAttemptResult, in db: Database) throws {
        let current = try db.cachedStatement(sql: "SELECT attempts, next_attempt_at FROM outbox WHERE id = ?")
        guard let row = try Row.fetchOne(current, arguments: [jobId]) else {
            throw ProjectionStoreError.database("no outbox job with id '\(jobId)'")
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
    }

    static func job(_ id: String, in db: Database) throws -> OutboxJob? {
        let select = try db.cachedStatement(sql: "SELECT \(SQLiteRows.outboxColumns) FROM outbox WHERE id = ?")
        return try Row.fetchOne(select, arguments: [id]).map(SQLiteRows.outboxJob)
    }

    static func jobs(after id: String?, limit: Int, in db: Database) throws -> [OutboxJob] {
        guard limit > 0 else { return [] }
        // BINARY collation: byte order of the UTF-8 ids.
        if let id {
            let select = try db.cachedStatement(sql: "SELECT \(SQLiteRows.outboxColumns) FROM outbox WHERE id > ? ORDER BY id LIMIT ?")
            return try Row.fetchAll(select, arguments: [id, limit]).map(SQLiteRows.outboxJob)
        }
        let select = try db.cachedStatement(sql: "SELECT \(SQLiteRows.outboxColumns) FROM outbox ORDER BY id LIMIT ?")
        return try Row.fetchAll(select, arguments: [limit]).map(SQLiteRows.outboxJob)
    }

    static func nextDue(in db: Database) throws -> Date? {
        let select = try db.cachedStatement(sql: "SELECT MIN(next_attempt_at) FROM outbox WHERE state = 'pending'")
        return try Int64.fetchOne(select).map(SQLiteValues.date(millis:))
    }
}
