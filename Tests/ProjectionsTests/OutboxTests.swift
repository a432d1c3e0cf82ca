import Contracts
import Foundation
@testable import Projections
@testable import SQLiteProjections
@testable import PostgresProjections
@testable import ProjectionChangelog
import Testing

@Suite(.serialized) struct OutboxTests {
    @Test(arguments: StoreBackend.allCases)
    func testEnqueueKeepsTheFirstJobWhenItsIdComesAgain(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let first = Fixture.job("job-1", app: UUID(), body: "first")
            try await store.commit(mutations: [.enqueueOutbox(first)], offsets: [])
            _ = try await store.claimOutboxJobs(now: Fixture.at(0), limit: 10, leaseUntil: Fixture.at(30))
            try await store.recordOutboxAttempt(jobId: "job-1", result: OutboxAttemptResult(
                at: Fixture.at(1), httpStatus: 500, error: "HTTP 500", next: .retry(at: Fixture.at(10))))

            // A replayed command enqueues the same id again, with whatever it computes this time.
            try await store.commit(mutations: [.enqueueOutbox(Fixture.job("job-1", body: "second", maxAttempts: 9))], offsets: [])

            let stored = try await store.outboxJob("job-1")
            #expect(stored?.body == Data("first".utf8))
            #expect(stored?.appId == first.appId)
            #expect(stored?.maxAttempts == 3)
            #expect(stored?.attempts == 1)
            #expect(stored?.nextAttemptAt == Fixture.at(10))
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testOnlyTheLeaseHolderRecordsItsAttempt(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            try await store.commit(mutations: [.enqueueOutbox(Fixture.job("job-1"))], offsets: [])
            _ = try await store.claimOutboxJobs(now: Fixture.at(0), limit: 10, leaseUntil: Fixture.at(30))
            // The lease ran out; another dispatcher took the job.
            let again = try await store.claimOutboxJobs(now: Fixture.at(31), limit: 10, leaseUntil: Fixture.at(61))
            #expect(again.map(\.id) == ["job-1"])
            let result = OutboxAttemptResult(at: Fixture.at(40), httpStatus: 200, error: nil, next: .delivered)

            let late = try await store.recordOutboxAttempt(jobId: "job-1", lease: Fixture.at(30), result: result)
            #expect(!late)
            let untouched = try await store.outboxJob("job-1")
            #expect(untouched?.attempts == 0)
            #expect(untouched?.state == .pending)

            let holder = try await store.recordOutboxAttempt(jobId: "job-1", lease: Fixture.at(61), result: result)
            #expect(holder)
            let recorded = try await store.outboxJob("job-1")
            #expect(recorded?.attempts == 1)
            #expect(recorded?.state == .delivered)
        }
    }

    static func app(_ n: UInt8) -> UUID {
        UUID(uuid: (0, 0, 0, 0, 0, 0, 0x40, 0, 0x80, 0, 0, 0, 0, 0, 0, n))
    }

    @Test(arguments: StoreBackend.allCases)
    func testAClaimTakesAppsInTurnEachUpToItsSlotsLeftAndLeasesOnlyWhatItTakes(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let (busy, other, full) = (Self.app(1), Self.app(2), Self.app(3))
            // The busy app's backlog is the oldest; the other apps' jobs and one of no app come after it.
            var jobs = (1...4).map { n in Fixture.job("busy-\(n)", app: busy, due: Double(n)) }
            jobs += [Fixture.job("other-1", app: other, due: 5), Fixture.job("full-1", app: full, due: 6), Fixture.job("none-1", due: 7)]
            try await store.commit(mutations: jobs.map(Mutation.enqueueOutbox), offsets: [])

            let slots = OutboxSlots(perApp: 3, inFlight: [busy: 1, full: 3])
            let claimed = try await store.claimOutboxJobs(now: Fixture.at(10), limit: 10, leaseUntil: Fixture.at(40), slots: slots)
            #expect(claimed.map(\.id) == ["none-1", "busy-1", "busy-2", "other-1"], "jobs of no app, then each app up to its slots left")

            // What the claim did not take is not leased. The next claim starts after the app the last one ended
            // with and comes round to the first.
            let next = try await store.claimOutboxJobs(now: Fixture.at(11), limit: 10, leaseUntil: Fixture.at(41),
                                                       slots: OutboxSlots(perApp: 3, after: other))
            #expect(next.map(\.id) == ["full-1", "busy-3", "busy-4"])
            let none = try await store.claimOutboxJobs(now: Fixture.at(12), limit: 10, leaseUntil: Fixture.at(42), slots: .unbounded)
            #expect(none.isEmpty)
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testAClaimStopsAtItsLimitWhereverItIsInTheTurn(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let jobs = (1...3).flatMap { a in (1...2).map { n in Fixture.job("app\(a)-\(n)", app: Self.app(UInt8(a)), due: Double(n)) } }
            try await store.commit(mutations: jobs.map(Mutation.enqueueOutbox), offsets: [])
            let first = try await store.claimOutboxJobs(now: Fixture.at(10), limit: 3, leaseUntil: Fixture.at(40),
                                                        slots: OutboxSlots(perApp: 2, after: Self.app(1)))
            #expect(first.map(\.id) == ["app2-1", "app2-2", "app3-1"])
            let second = try await store.claimOutboxJobs(now: Fixture.at(10), limit: 3, leaseUntil: Fixture.at(40),
                                                         slots: OutboxSlots(perApp: 2, after: Self.app(3)))
            #expect(second.map(\.id) == ["app1-1", "app1-2", "app3-2"])
        }
    }

    @Test func testTheWalkVisitsTheAppsAfterTheLastOneThenComesRoundToIt() {
        let apps = [Self.app(1), Self.app(2), Self.app(3)]
        func walk(after: UUID?, over apps: [UUID]) -> [UUID] {
            var walk = OutboxAppWalk(after: after)
            var visited: [UUID] = []
            var looks = 0
            while !walk.done {
                looks += 1
                if looks > 10 { Issue.record("the walk never ends"); break }
                let from = walk.from
                if let app = walk.found(apps.first { from == nil || KeyOrder.less(from!, $0) }) { visited.append(app) }
            }
            return visited
        }
        #expect(walk(after: nil, over: apps) == apps)
        #expect(walk(after: apps[1], over: apps) == [apps[2], apps[0], apps[1]])
        #expect(walk(after: apps[2], over: apps) == apps)
        #expect(walk(after: Self.app(9), over: apps) == apps, "the last app may have no jobs left")
        #expect(walk(after: Self.app(2), over: [apps[0], apps[2]]) == [apps[2], apps[0]])
        #expect(walk(after: apps[0], over: []) == [])
    }

    @Test(arguments: StoreBackend.allCases)
    func testEnqueuedJobReadsBackAsWritten(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let job = Fixture.job("job-1", app: UUID())

            try await store.commit(mutations: [.enqueueOutbox(job)], offsets: [])

            let stored = try await store.outboxJob("job-1")
            #expect(stored == job)
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testAClaimedJobIsNotClaimedAgainUntilItsLeaseExpires(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            try await store.commit(mutations: [.enqueueOutbox(Fixture.job("job-1"))], offsets: [])

            let first = try await store.claimOutboxJobs(now: Fixture.at(0), limit: 10, leaseUntil: Fixture.at(30))
            let duringLease = try await store.claimOutboxJobs(now: Fixture.at(29), limit: 10, leaseUntil: Fixture.at(59))
            let atLeaseEnd = try await store.claimOutboxJobs(now: Fixture.at(30), limit: 10, leaseUntil: Fixture.at(60))
            let afterLease = try await store.claimOutboxJobs(now: Fixture.at(31), limit: 10, leaseUntil: Fixture.at(61))

            #expect(first.map(\.id) == ["job-1"])
            #expect(duringLease == [])
            #expect(atLeaseEnd == [])
            #expect(afterLease.map(\.id) == ["job-1"])
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testClaimTakesOnlyDueJobsOldestFirstUpToTheLimit(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            try await store.commit(mutations: [
                .enqueueOutbox(Fixture.job("c", due: 3)),
                .enqueueOutbox(Fixture.job("a", due: 1)),
                .enqueueOutbox(Fixture.job("later", due: 100)),
                .enqueueOutbox(Fixture.job("b", due: 2)),
            ], offsets: [])

            let firstTwo = try await store.claimOutboxJobs(now: Fixture.at(50), limit: 2, leaseUntil: Fixture.at(80))
            let rest = try await store.claimOutboxJobs(now: Fixture.at(50), limit: 10, leaseUntil: Fixture.at(80))
            let none = try await store.claimOutboxJobs(now: Fixture.at(50), limit: 0, leaseUntil: Fixture.at(80))

            #expect(firstTwo.map(\.id) == ["a", "b"])
            #expect(rest.map(\.id) == ["c"])
            #expect(none == [])
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testAFailedAttemptWithRetriesLeftSchedulesTheNextOneAndReleasesTheLease(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            try await store.commit(mutations: [.enqueueOutbox(Fixture.job("job-1", maxAttempts: 3))], offsets: [])
            _ = try await store.claimOutboxJobs(now: Fixture.at(0), limit: 10, leaseUntil: Fixture.at(30))

            try await store.recordOutboxAttempt(jobId: "job-1", result: OutboxAttemptResult(
                at: Fixture.at(1), httpStatus: 503, error: "HTTP 503", next: .retry(at: Fixture.at(5))))

            let job = try await store.outboxJob("job-1")
            #expect(job?.attempts == 1)
            #expect(job?.state == .pending)
            #expect(job?.nextAttemptAt == Fixture.at(5))
            #expect(job?.lastStatus == 503)
            #expect(job?.lastError == "HTTP 503")
            let nextDue = try await store.nextOutboxDue()
            #expect(nextDue == Fixture.at(5))
            let beforeRetry = try await store.claimOutboxJobs(now: Fixture.at(4), limit: 10, leaseUntil: Fixture.at(34))
            #expect(beforeRetry == [], "not due yet")
            // At the retry time the job is claimable although the first lease (until 30) has not run out.
            let atRetry = try await store.claimOutboxJobs(now: Fixture.at(5), limit: 10, leaseUntil: Fixture.at(35))
            #expect(atRetry.map(\.id) == ["job-1"])
            #expect(atRetry.first?.attempts == 1)
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testADeliveredJobIsNeverClaimedAgain(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            try await store.commit(mutations: [.enqueueOutbox(Fixture.job("job-1"))], offsets: [])
            _ = try await store.claimOutboxJobs(now: Fixture.at(0), limit: 10, leaseUntil: Fixture.at(30))

            try await store.recordOutboxAttempt(jobId: "job-1", result: OutboxAttemptResult(
                at: Fixture.at(1), httpStatus: 200, error: nil, next: .delivered))

            let later = try await store.claimOutboxJobs(now: Fixture.at(1000), limit: 10, leaseUntil: Fixture.at(1030))
            let job = try await store.outboxJob("job-1")
            let nextDue = try await store.nextOutboxDue()
            #expect(later == [])
            #expect(job?.state == .delivered)
            #expect(job?.attempts == 1)
            #expect(job?.lastStatus == 200)
            #expect(job?.lastError == nil)
            #expect(nextDue == nil)
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testEveryAttemptIsRecordedUntilTheJobFails(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            try await store.commit(mutations: [.enqueueOutbox(Fixture.job("job-1", maxAttempts: 2))], offsets: [])

            try await store.recordOutboxAttempt(jobId: "job-1", result: OutboxAttemptResult(
                at: Fixture.at(1), httpStatus: nil, error: "connection refused", next: .retry(at: Fixture.at(2))))
            try await store.recordOutboxAttempt(jobId: "job-1", result: OutboxAttemptResult(
                at: Fixture.at(3), httpStatus: 500, error: "HTTP 500", next: .failed))

            let job = try await store.outboxJob("job-1")
            #expect(job?.state == .failed)
            #expect(job?.attempts == 2)
            let claimed = try await store.claimOutboxJobs(now: Fixture.at(1000), limit: 10, leaseUntil: Fixture.at(1030))
            #expect(claimed == [])
            let attempts = try await h.strings("""
                SELECT job_id || '#' || attempt || ' ' || at || ' ' || coalesce(CAST(http_status AS TEXT), '-') || ' ' || error || ' ' || outcome
                FROM outbox_attempts ORDER BY job_id, attempt
                """)
            let at1 = SQLiteValues.millis(Fixture.at(1)), at3 = SQLiteValues.millis(Fixture.at(3))
            #expect(attempts == [
                "job-1#1 \(at1) - connection refused retrying",
                "job-1#2 \(at3) 500 HTTP 500 failed",
            ])
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testRecordingAnAttemptOfAnUnknownJobFails(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()

            await h.assertThrows(.database("no outbox job with id 'missing'")) {
                try await store.recordOutboxAttempt(jobId: "missing", result: OutboxAttemptResult(
                    at: Fixture.at(1), httpStatus: 200, error: nil, next: .delivered))
            }
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testNextOutboxDueIsTheEarliestPendingJob(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            try await store.commit(mutations: [
                .enqueueOutbox(Fixture.job("delivered", due: 1)),
                .enqueueOutbox(Fixture.job("pending-late", due: 9)),
                .enqueueOutbox(Fixture.job("pending-early", due: 4)),
            ], offsets: [])
            try await store.recordOutboxAttempt(jobId: "delivered", result: OutboxAttemptResult(
                at: Fixture.at(2), httpStatus: 204, error: nil, next: .delivered))

            let due = try await store.nextOutboxDue()

            #expect(due == Fixture.at(4))
        }
    }

    // MARK: - Replayed jobs, restoring, paging

    @Test(arguments: StoreBackend.allCases)
    func testAReplayedJobIsNeverClaimedNorDue(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            var replayed = Fixture.job("replayed", due: 1)
            replayed.state = .replayed
            try await store.commit(mutations: [.enqueueOutbox(replayed), .enqueueOutbox(Fixture.job("pending", due: 5))], offsets: [])

            let due = try await store.nextOutboxDue()
            let claimed = try await store.claimOutboxJobs(now: Fixture.at(1000), limit: 10, leaseUntil: Fixture.at(1030))
            let stored = try await store.outboxJob("replayed")

            #expect(due == Fixture.at(5))
            #expect(claimed.map(\.id) == ["pending"])
            #expect(stored == replayed)
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testRestoreOverwritesEveryColumnOfAnExistingJobAndInsertsAMissingOne(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            var replayed = Fixture.job("job-1", app: UUID(), body: "replayed", maxAttempts: 3, due: 1)
            replayed.state = .replayed
            try await store.commit(mutations: [.enqueueOutbox(replayed)], offsets: [])
            // The original store's progress: delivered after two attempts, other columns changed too.
            let progress = OutboxJob(id: "job-1", kind: "callback", appId: nil, url: "https://example.test/other",
                                     headers: ["x-b": "2"], body: Data([0xff, 0x01]), maxAttempts: 4, attempts: 2,
                                     nextAttemptAt: Fixture.at(20), state: .delivered, lastStatus: 204, lastError: "earlier failure",
                                     createdAt: Fixture.at(2))
            var missing = Fixture.job("job-2", due: 3)
            missing.attempts = 1
            missing.lastStatus = 500
            missing.lastError = "HTTP 500"
            missing.nextAttemptAt = Fixture.at(40)

            try await store.commit(mutations: [.restoreOutbox(progress), .restoreOutbox(missing)], offsets: [])

            let first = try await store.outboxJob("job-1")
            let second = try await store.outboxJob("job-2")
            #expect(first == progress)
            #expect(second == missing)
            let claimed = try await store.claimOutboxJobs(now: Fixture.at(40), limit: 10, leaseUntil: Fixture.at(70))
            #expect(claimed == [missing], "the delivered job is done; the restored pending one is due again")
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testRestoreReleasesTheLeaseAndDropsAttemptHistoryAboveTheRestoredCount(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            try await store.commit(mutations: [.enqueueOutbox(Fixture.job("job-1", maxAttempts: 5))], offsets: [])
            for n in 1...3 {
                try await store.recordOutboxAttempt(jobId: "job-1", result: OutboxAttemptResult(
                    at: Fixture.at(Double(n)), httpStatus: 500, error: "HTTP 500", next: .retry(at: Fixture.at(10))))
            }
            _ = try await store.claimOutboxJobs(now: Fixture.at(10), limit: 10, leaseUntil: Fixture.at(100))
            var restored = Fixture.job("job-1", maxAttempts: 5, due: 10)
            restored.attempts = 1

            try await store.commit(mutations: [.restoreOutbox(restored)], offsets: [])

            let reclaimed = try await store.claimOutboxJobs(now: Fixture.at(11), limit: 10, leaseUntil: Fixture.at(100))
            #expect(reclaimed.map(\.id) == ["job-1"], "the lease taken before the restore is gone")
            try await store.recordOutboxAttempt(jobId: "job-1", result: OutboxAttemptResult(
                at: Fixture.at(12), httpStatus: 200, error: nil, next: .delivered))
            let attempts = try await h.strings("SELECT CAST(attempt AS TEXT) || ' ' || outcome FROM outbox_attempts ORDER BY attempt")
            #expect(attempts == ["1 retrying", "2 delivered"])
            let job = try await store.outboxJob("job-1")
            #expect(job?.attempts == 2)
            #expect(job?.state == .delivered)
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testRestoreAndEnqueueOfOneIdInOneCommitEndAsInOrder(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            var restoredFirst = Fixture.job("restored-first", body: "restored")
            restoredFirst.attempts = 2
            var restoredLast = Fixture.job("restored-last", body: "restored last")
            restoredLast.state = .failed

            try await store.commit(mutations: [
                // An enqueue after a restore finds the row; a restore after an enqueue overwrites it.
                .restoreOutbox(restoredFirst), .enqueueOutbox(Fixture.job("restored-first", body: "enqueued")),
                .enqueueOutbox(Fixture.job("restored-last", body: "enqueued")), .restoreOutbox(Fixture.job("restored-last")),
                .restoreOutbox(restoredLast),
            ], offsets: [])

            let first = try await store.outboxJob("restored-first")
            let last = try await store.outboxJob("restored-last")
            #expect(first == restoredFirst)
            #expect(last == restoredLast)
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testOutboxJobsPageThroughEveryJobInByteOrderOfTheirIds(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            // Byte order: upper case before lower case, multi-byte UTF-8 after ASCII.
            let ids = ["b", "B", "a-2", "é", "a-10", "Z", "a"]
            var delivered = Fixture.job("a")
            delivered.state = .delivered
            try await store.commit(mutations: ids.filter { $0 != "a" }.map { .enqueueOutbox(Fixture.job($0)) } + [.enqueueOutbox(delivered)],
                                   offsets: [])

            var pages: [[String]] = []
            var after: String?
            while true {
                let page = try await store.outboxJobs(after: after, limit: 3)
                guard !page.isEmpty else { break }
                pages.append(page.map(\.id))
                after = page.last?.id
            }
            let none = try await store.outboxJobs(after: nil, limit: 0)

            #expect(pages == [["B", "Z", "a"], ["a-10", "a-2", "b"], ["é"]])
            #expect(none == [])
            let all = try await store.outboxJobs(after: nil, limit: 100)
            #expect((all.first { $0.id == "a" }) == delivered)
        }
    }
}
