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
    /// The claimable jobs (`OutboxSlots.claimable`), read through the `outbox_claimable` index:
    /// SQLite would rather use `outbox_due` and sort, and refuses a statement the named index
    /// cannot serve.
    static let claimable = "outbox INDEXED BY outbox_claimable WHERE \(OutboxSlots.claimable)"

    static func claim(now: Date, limit: Int, leaseUntil: Date, slots: OutboxSlots, in db: Database) throws -> [OutboxJob] {
        guard limit > 0 else { return [] }
        let nowMillis = SQLiteValues.millis(now)
        let due = "next_attempt_at <= ? AND (lease_until IS NULL OR lease_until < ?) ORDER BY next_attempt_at, created_at, id LIMIT ?"
        var ids = try String.fetchAll(db.cachedStatement(sql: "SELECT id FROM \(claimable) AND app_id IS NULL AND \(due)"),
                                      arguments: [nowMillis, nowMillis, limit])
        let nextApp = try db.cachedStatement(sql: "SELECT app_id FROM \(claimable) AND app_id > ? ORDER BY app_id LIMIT 1")
        let dueOfApp = try db.cachedStatement(sql: "SELECT id FROM \(claimable) AND app_id = ? AND \(due)")
        var walk = OutboxAppWalk(after: slots.after)
        while !walk.done, ids.count < limit {
            // Every app id sorts after the empty string.
            let found = try String.fetchOne(nextApp, arguments: [walk.from.map(SQLiteValues.text) ?? ""])
            guard let app = walk.found(try found.map { try SQLiteValues.uuid($0, column: "outbox.app_id") }) else { continue }
            let take = min(slots.left(app), limit - ids.count)
            guard take > 0 else { continue }
            ids += try String.fetchAll(dueOfApp, arguments: [found, nowMillis, nowMillis, take])
        }
        let lease = try db.cachedStatement(sql: "UPDATE outbox SET lease_until = ? WHERE id = ?")
        let until = SQLiteValues.millis(leaseUntil)
        for id in ids {
            try lease.execute(arguments: [until, id])
        }
        return try jobs(ids, in: db)
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

    /// The jobs of these ids that are stored.
    static func jobs(_ ids: [String], in db: Database) throws -> [OutboxJob] {
        try ids.flatMap { try db.rows(ReaderReads.outboxJob($0)) }
    }
}
