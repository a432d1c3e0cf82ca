import Contracts
import Foundation
@testable import Projections
import XCTest

final class OutboxTests: StoreTestCase {
    func testEnqueueKeepsTheFirstJobWhenItsIdComesAgain() async throws {
        let store = try openStore()
        let first = Fixture.job("job-1", app: UUID(), body: "first")
        try await store.commit(mutations: [.enqueueOutbox(first)], offsets: [])
        _ = try await store.claimOutboxJobs(now: Fixture.at(0), limit: 10, leaseUntil: Fixture.at(30))
        try await store.recordOutboxAttempt(jobId: "job-1", result: OutboxAttemptResult(
            at: Fixture.at(1), httpStatus: 500, error: "HTTP 500", next: .retry(at: Fixture.at(10))))

        // A replayed command enqueues the same id again, with whatever it computes this time.
        try await store.commit(mutations: [.enqueueOutbox(Fixture.job("job-1", body: "second", maxAttempts: 9))], offsets: [])

        let stored = try await store.outboxJob("job-1")
        XCTAssertEqual(stored?.body, Data("first".utf8))
        XCTAssertEqual(stored?.appId, first.appId)
        XCTAssertEqual(stored?.maxAttempts, 3)
        XCTAssertEqual(stored?.attempts, 1)
        XCTAssertEqual(stored?.nextAttemptAt, Fixture.at(10))
    }

    func testEnqueuedJobReadsBackAsWritten() async throws {
        let store = try openStore()
        let job = Fixture.job("job-1", app: UUID())

        try await store.commit(mutations: [.enqueueOutbox(job)], offsets: [])

        let stored = try await store.outboxJob("job-1")
        XCTAssertEqual(stored, job)
    }

    func testAClaimedJobIsNotClaimedAgainUntilItsLeaseExpires() async throws {
        let store = try openStore()
        try await store.commit(mutations: [.enqueueOutbox(Fixture.job("job-1"))], offsets: [])

        let first = try await store.claimOutboxJobs(now: Fixture.at(0), limit: 10, leaseUntil: Fixture.at(30))
        let duringLease = try await store.claimOutboxJobs(now: Fixture.at(29), limit: 10, leaseUntil: Fixture.at(59))
        let atLeaseEnd = try await store.claimOutboxJobs(now: Fixture.at(30), limit: 10, leaseUntil: Fixture.at(60))
        let afterLease = try await store.claimOutboxJobs(now: Fixture.at(31), limit: 10, leaseUntil: Fixture.at(61))

        XCTAssertEqual(first.map(\.id), ["job-1"])
        XCTAssertEqual(duringLease, [])
        XCTAssertEqual(atLeaseEnd, [])
        XCTAssertEqual(afterLease.map(\.id), ["job-1"])
    }

    func testClaimTakesOnlyDueJobsOldestFirstUpToTheLimit() async throws {
        let store = try openStore()
        try await store.commit(mutations: [
            .enqueueOutbox(Fixture.job("c", due: 3)),
            .enqueueOutbox(Fixture.job("a", due: 1)),
            .enqueueOutbox(Fixture.job("later", due: 100)),
            .enqueueOutbox(Fixture.job("b", due: 2)),
        ], offsets: [])

        let firstTwo = try await store.claimOutboxJobs(now: Fixture.at(50), limit: 2, leaseUntil: Fixture.at(80))
        let rest = try await store.claimOutboxJobs(now: Fixture.at(50), limit: 10, leaseUntil: Fixture.at(80))
        let none = try await store.claimOutboxJobs(now: Fixture.at(50), limit: 0, leaseUntil: Fixture.at(80))

        XCTAssertEqual(firstTwo.map(\.id), ["a", "b"])
        XCTAssertEqual(rest.map(\.id), ["c"])
        XCTAssertEqual(none, [])
    }

    func testAFailedAttemptWithRetriesLeftSchedulesTheNextOneAndReleasesTheLease() async throws {
        let store = try openStore()
        try await store.commit(mutations: [.enqueueOutbox(Fixture.job("job-1", maxAttempts: 3))], offsets: [])
        _ = try await store.claimOutboxJobs(now: Fixture.at(0), limit: 10, leaseUntil: Fixture.at(30))

        try await store.recordOutboxAttempt(jobId: "job-1", result: OutboxAttemptResult(
            at: Fixture.at(1), httpStatus: 503, error: "HTTP 503", next: .retry(at: Fixture.at(5))))

        let job = try await store.outboxJob("job-1")
        XCTAssertEqual(job?.attempts, 1)
        XCTAssertEqual(job?.state, .pending)
        XCTAssertEqual(job?.nextAttemptAt, Fixture.at(5))
        XCTAssertEqual(job?.lastStatus, 503)
        XCTAssertEqual(job?.lastError, "HTTP 503")
        let nextDue = try await store.nextOutboxDue()
        XCTAssertEqual(nextDue, Fixture.at(5))
        let beforeRetry = try await store.claimOutboxJobs(now: Fixture.at(4), limit: 10, leaseUntil: Fixture.at(34))
        XCTAssertEqual(beforeRetry, [], "not due yet")
        // At the retry time the job is claimable although the first lease (until 30) has not run out.
        let atRetry = try await store.claimOutboxJobs(now: Fixture.at(5), limit: 10, leaseUntil: Fixture.at(35))
        XCTAssertEqual(atRetry.map(\.id), ["job-1"])
        XCTAssertEqual(atRetry.first?.attempts, 1)
    }

    func testADeliveredJobIsNeverClaimedAgain() async throws {
        let store = try openStore()
        try await store.commit(mutations: [.enqueueOutbox(Fixture.job("job-1"))], offsets: [])
        _ = try await store.claimOutboxJobs(now: Fixture.at(0), limit: 10, leaseUntil: Fixture.at(30))

        try await store.recordOutboxAttempt(jobId: "job-1", result: OutboxAttemptResult(
            at: Fixture.at(1), httpStatus: 200, error: nil, next: .delivered))

        let later = try await store.claimOutboxJobs(now: Fixture.at(1000), limit: 10, leaseUntil: Fixture.at(1030))
        let job = try await store.outboxJob("job-1")
        let nextDue = try await store.nextOutboxDue()
        XCTAssertEqual(later, [])
        XCTAssertEqual(job?.state, .delivered)
        XCTAssertEqual(job?.attempts, 1)
        XCTAssertEqual(job?.lastStatus, 200)
        XCTAssertNil(job?.lastError)
        XCTAssertNil(nextDue)
    }

    func testEveryAttemptIsRecordedUntilTheJobFails() async throws {
        let store = try openStore()
        try await store.commit(mutations: [.enqueueOutbox(Fixture.job("job-1", maxAttempts: 2))], offsets: [])

        try await store.recordOutboxAttempt(jobId: "job-1", result: OutboxAttemptResult(
            at: Fixture.at(1), httpStatus: nil, error: "connection refused", next: .retry(at: Fixture.at(2))))
        try await store.recordOutboxAttempt(jobId: "job-1", result: OutboxAttemptResult(
            at: Fixture.at(3), httpStatus: 500, error: "HTTP 500", next: .failed))

        let job = try await store.outboxJob("job-1")
        XCTAssertEqual(job?.state, .failed)
        XCTAssertEqual(job?.attempts, 2)
        let claimed = try await store.claimOutboxJobs(now: Fixture.at(1000), limit: 10, leaseUntil: Fixture.at(1030))
        XCTAssertEqual(claimed, [])
        let attempts = try await store.pool.read { db in
            try String.fetchAll(db, sql: """
                SELECT job_id || '#' || attempt || ' ' || at || ' ' || ifnull(http_status, '-') || ' ' || error || ' ' || outcome
                FROM outbox_attempts ORDER BY job_id, attempt
                """)
        }
        let at1 = SQLiteValues.millis(Fixture.at(1)), at3 = SQLiteValues.millis(Fixture.at(3))
        XCTAssertEqual(attempts, [
            "job-1#1 \(at1) - connection refused retrying",
            "job-1#2 \(at3) 500 HTTP 500 failed",
        ])
    }

    func testRecordingAnAttemptOfAnUnknownJobFails() async throws {
        let store = try openStore()

        await assertThrows(.database("no outbox job with id 'missing'")) {
            try await store.recordOutboxAttempt(jobId: "missing", result: OutboxAttemptResult(
                at: Fixture.at(1), httpStatus: 200, error: nil, next: .delivered))
        }
    }

    func testNextOutboxDueIsTheEarliestPendingJob() async throws {
        let store = try openStore()
        try await store.commit(mutations: [
            .enqueueOutbox(Fixture.job("delivered", due: 1)),
            .enqueueOutbox(Fixture.job("pending-late", due: 9)),
            .enqueueOutbox(Fixture.job("pending-early", due: 4)),
        ], offsets: [])
        try await store.recordOutboxAttempt(jobId: "delivered", result: OutboxAttemptResult(
            at: Fixture.at(2), httpStatus: 204, error: nil, next: .delivered))

        let due = try await store.nextOutboxDue()

        XCTAssertEqual(due, Fixture.at(4))
    }
}
