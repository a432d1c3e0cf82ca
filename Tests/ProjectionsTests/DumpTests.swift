import Contracts
import Foundation
@testable import Projections
@testable import SQLiteProjections
@testable import PostgresProjections
@testable import ProjectionChangelog
import Testing

@Suite(.serialized) struct DumpTests {
    /// A few commits touching every dumped table, including an overwrite and a delete.
    private func commits() -> [[Mutation]] {
        let appId = UUID(uuidString: "6F9619FF-8B86-D011-B42D-00C04FC964FF")!
        var app = AppRow(appId: appId, orgId: UUID(uuidString: "00000000-0000-0000-0000-0000000000AA")!, name: "Shop\n\"main\"",
                         callbackUrl: "https://example.test/cb", callbackHeaders: ["x-b": "2", "x-a": "1"], webhookRetries: 2,
                         createdAt: Fixture.t0)
        let token = ApiTokenRow(tokenId: UUID(uuidString: "00000000-0000-0000-0000-000000000001")!, appId: appId,
                                tokenHash: "abc123", createdAt: Fixture.t0)
        let request = UUID(uuidString: "00000000-0000-0000-0000-0000000000F1")!
        let first = commitBatch(app: app, token: token, request: request)
        app.name = "Shop"
        return [first, [
            .upsertApp(app),
            .deleteDevice(DeviceKey(appId: appId, deviceToken: "t-2")),
            .upsertDevice(Fixture.device(app: appId, token: "t-3", user: "bob", platform: .android, version: 2)),
            .enqueueOutbox(Fixture.job("job-b", app: appId, body: "{\"Status\":\"Failed\"}")),
        ]]
    }

    private func commitBatch(app: AppRow, token: ApiTokenRow, request: UUID) -> [Mutation] {
        [
            .upsertApp(app), .upsertApiToken(token),
            .upsertApiToken(ApiTokenRow(tokenId: UUID(uuidString: "00000000-0000-0000-0000-000000000002")!, appId: app.appId,
                                        tokenHash: "def456", createdAt: Fixture.t0, scopes: [.server, .client])),
            .upsertDevice(Fixture.device(app: app.appId, token: "t-2", user: "alice")),
            .upsertDevice(Fixture.device(app: app.appId, token: "t-1", user: "alice")),
            .putRegistrationStatus(Fixture.status(app: app.appId, request: request, status: .Failed, reason: .DuplicateExists)),
            .enqueueOutbox(Fixture.job("job-a", app: app.appId)),
        ]
    }

    private func feed(_ store: any ProjectionStore) async throws {
        for (index, mutations) in commits().enumerated() {
            try await store.commit(mutations: mutations, offsets: [
                OffsetUpdate(partition: Fixture.partition(0), expected: index == 0 ? nil : Int64(index), next: Int64(index + 1)),
            ])
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testTwoStoresFedTheSameCommitsDumpTheSameText(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let one = try await h.openStore("one.sqlite")
            let two = try await h.openStore("two.sqlite")

            try await feed(one)
            try await feed(two)

            let dumpOne = try await one.dump()
            let dumpTwo = try await two.dump()
            #expect(dumpOne == dumpTwo)
            let expectedLines = 1 + 2 + 2 + 1 + 2
            #expect(dumpOne.split(separator: "\n").count == expectedLines, "\(dumpOne)")
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testDumpListsEachTableByPrimaryKeyOneEscapedLinePerRow(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            try await feed(store)

            let lines = try await store.dump().split(separator: "\n", omittingEmptySubsequences: false).map(String.init)

            let t0 = SQLiteValues.millis(Fixture.t0), t1 = SQLiteValues.millis(Fixture.at(1))
            let app = "6f9619ff-8b86-d011-b42d-00c04fc964ff"
            let hook = "url=\"https://example.test/hook\" headers=\"{\\\"x-extra\\\":\\\"1\\\"}\""
            #expect(lines == [
                "apps app_id=\"\(app)\" org_id=\"00000000-0000-0000-0000-0000000000aa\" name=\"Shop\" callback_url=\"https://example.test/cb\" callback_headers=\"{\\\"x-a\\\":\\\"1\\\",\\\"x-b\\\":\\\"2\\\"}\" webhook_retries=2 created_at=\(t0) push_credentials=null part=0 identity_required=0 identity_secret=null webhook_hosts=null users=0 time_zone=null quiet_hours=null frequency_caps=null quiet_users=0 counted_users=0 counted_sends=null",
                "api_tokens token_id=\"00000000-0000-0000-0000-000000000001\" app_id=\"\(app)\" token_hash=\"abc123\" revoked=0 created_at=\(t0) scopes=null part=0",
                "api_tokens token_id=\"00000000-0000-0000-0000-000000000002\" app_id=\"\(app)\" token_hash=\"def456\" revoked=0 created_at=\(t0) scopes=\"client,server\" part=0",
                "devices app_id=\"\(app)\" device_token=\"t-1\" user_id=\"alice\" platform=\"ios\" version=1 updated_at=\(t1) time_zone=null badges_since=null badges=0 locale=null app_version=null tags=null topics=null",
                "devices app_id=\"\(app)\" device_token=\"t-3\" user_id=\"bob\" platform=\"android\" version=2 updated_at=\(t1) time_zone=null badges_since=null badges=0 locale=null app_version=null tags=null topics=null",
                "registration_status request_id=\"00000000-0000-0000-0000-0000000000f1\" app_id=\"\(app)\" status=\"Failed\" failure_reason=\"DuplicateExists\" decided_at=\(SQLiteValues.millis(Fixture.at(2))) part=0",
                "outbox id=\"job-a\" kind=\"registration-status\" app_id=\"\(app)\" \(hook) body=\"{\\\"Status\\\":\\\"Success\\\"}\" max_attempts=3",
                "outbox id=\"job-b\" kind=\"registration-status\" app_id=\"\(app)\" \(hook) body=\"{\\\"Status\\\":\\\"Failed\\\"}\" max_attempts=3",
                "",
            ])
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testDumpEscapesLineBreaksSoEveryRowStaysOneLine(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            try await store.commit(mutations: [.upsertApp(Fixture.app(name: "two\nlines\tand \"quotes\" \\"))], offsets: [])

            let dump = try await store.dump()

            #expect(dump.split(separator: "\n").count == 1)
            #expect(dump.contains(#"name="two\nlines\tand \"quotes\" \\""#), "\(dump)")
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testDumpLeavesOutDeliveryProgressAndOffsets(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let delivered = try await h.openStore("delivered.sqlite")
            let untouched = try await h.openStore("untouched.sqlite")
            try await feed(delivered)
            try await feed(untouched)

            _ = try await delivered.claimOutboxJobs(now: Fixture.at(0), limit: 10, leaseUntil: Fixture.at(30))
            try await delivered.recordOutboxAttempt(jobId: "job-a", result: OutboxAttemptResult(
                at: Fixture.at(1), httpStatus: 200, error: nil, next: .delivered))
            try await delivered.commit(mutations: [], offsets: [OffsetUpdate(partition: Fixture.partition(0), expected: 2, next: 99)])

            let deliveredDump = try await delivered.dump()
            let untouchedDump = try await untouched.dump()
            #expect(deliveredDump == untouchedDump)
            let deliveredJob = try await delivered.outboxJob("job-a")
            #expect(deliveredJob?.state == .delivered, "the stores do differ in delivery progress")
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testNonUTF8BodiesAreDumpedAsHex(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            var job = Fixture.job("binary")
            job.body = Data([0xff, 0x00, 0x41])
            try await store.commit(mutations: [.enqueueOutbox(job)], offsets: [])

            let dump = try await store.dump()

            #expect(dump.contains(" body=0xff0041 "), "\(dump)")
        }
    }

    // MARK: - Managed notifications

    /// Pending rows, acks and deliveries of two apps, as one list of non-conflicting mutations.
    private func managedMutations() -> [Mutation] {
        let app = UUID(uuidString: "00000000-0000-0000-0000-00000000000A")!
        let other = UUID(uuidString: "00000000-0000-0000-0000-00000000000B")!
        let delivery = UUID(uuidString: "00000000-0000-0000-0000-0000000000D1")!
        return [
            .putPending(Fixture.pending(app: other, token: "t1", nid: "n1", delivery: delivery, text: "other")),
            .putPending(Fixture.pending(app: app, token: "t2", nid: "n1", delivery: delivery, text: "two")),
            .putPending(Fixture.pending(app: app, token: "t1", nid: "n2", delivery: delivery, sent: 5, text: "line\nbreak", business: "b-2")),
            .putPending(Fixture.pending(app: app, token: "t1", nid: "n1", delivery: delivery, text: "one")),
            .putAck(Fixture.ack(app: app, token: "t3", nid: "n1", business: "b-1")),
            .putAck(Fixture.ack(app: app, token: "t1", nid: "n0")),
            .putDelivery(Fixture.delivery(app: other, id: delivery, kind: .im, managed: false, tracking: true, sent: 1)),
            .putDelivery(Fixture.delivery(app: app, id: delivery, kind: .ticket, managed: true, tracking: false, sent: 3)),
        ]
    }

    @Test(arguments: StoreBackend.allCases)
    func testDumpListsPendingNotificationsAcksAndDeliveriesByPrimaryKey(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            try await store.commit(mutations: managedMutations(), offsets: [])

            let lines = try await store.dump().split(separator: "\n").map(String.init)

            let (a, b) = ("00000000-0000-0000-0000-00000000000a", "00000000-0000-0000-0000-00000000000b")
            let d = "00000000-0000-0000-0000-0000000000d1"
            let t3 = SQLiteValues.millis(Fixture.at(3)), t4 = SQLiteValues.millis(Fixture.at(4)), t5 = SQLiteValues.millis(Fixture.at(5))
            #expect(lines == [
                "pending_notifications app_id=\"\(a)\" device_token=\"t1\" notification_id=\"n1\" delivery_id=\"\(d)\" sent_at=\(t3) text=\"one\" business_id=null",
                "pending_notifications app_id=\"\(a)\" device_token=\"t1\" notification_id=\"n2\" delivery_id=\"\(d)\" sent_at=\(t5) text=\"line\\nbreak\" business_id=\"b-2\"",
                "pending_notifications app_id=\"\(a)\" device_token=\"t2\" notification_id=\"n1\" delivery_id=\"\(d)\" sent_at=\(t3) text=\"two\" business_id=null",
                "pending_notifications app_id=\"\(b)\" device_token=\"t1\" notification_id=\"n1\" delivery_id=\"\(d)\" sent_at=\(t3) text=\"other\" business_id=null",
                "acks app_id=\"\(a)\" device_token=\"t1\" notification_id=\"n0\" business_id=null acked_at=\(t4)",
                "acks app_id=\"\(a)\" device_token=\"t3\" notification_id=\"n1\" business_id=\"b-1\" acked_at=\(t4)",
                "deliveries app_id=\"\(a)\" delivery_id=\"\(d)\" kind=\"ticket\" managed=1 tracking=0 sent=3 created_at=\(t3) delivered=0 failed=0 unregistered=0 idempotency_key=null request_hash=null duplicates=0 conflicts=0 part=0 sent_by_locale=null outcomes_by_locale=null expired=0 send_at=null schedule=null scheduled_command=null send_at_local=null held=0 dropped=0 cancelled=0 waves=null capped=0",
                "deliveries app_id=\"\(b)\" delivery_id=\"\(d)\" kind=\"im\" managed=0 tracking=1 sent=1 created_at=\(t3) delivered=0 failed=0 unregistered=0 idempotency_key=null request_hash=null duplicates=0 conflicts=0 part=0 sent_by_locale=null outcomes_by_locale=null expired=0 send_at=null schedule=null scheduled_command=null send_at_local=null held=0 dropped=0 cancelled=0 waves=null capped=0",
            ])
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testTheSameManagedStateWrittenInAnotherOrderDumpsTheSameText(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let forward = try await h.openStore("forward.sqlite")
            let backward = try await h.openStore("backward.sqlite")
            let mutations = managedMutations()
            let app = UUID(uuidString: "00000000-0000-0000-0000-00000000000A")!
            let transient = Fixture.pending(app: app, token: "t9", nid: "n9")

            try await forward.commit(mutations: mutations, offsets: [])
            // Reversed, over several commits, with a pending row that comes and goes again.
            for mutation in mutations.reversed() {
                try await backward.commit(mutations: [mutation], offsets: [])
            }
            try await backward.commit(mutations: [.putPending(transient)], offsets: [])
            try await backward.commit(mutations: [.deletePending(transient.key)], offsets: [])

            let forwardDump = try await forward.dump()
            let backwardDump = try await backward.dump()
            #expect(forwardDump == backwardDump)
            #expect(forwardDump.split(separator: "\n").count == 8, "\(forwardDump)")
        }
    }
}
