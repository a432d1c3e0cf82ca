import Contracts
import Foundation
@testable import Projections
import XCTest

final class DumpTests: StoreTestCase {
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
            .upsertDevice(Fixture.device(app: app.appId, token: "t-2", user: "alice")),
            .upsertDevice(Fixture.device(app: app.appId, token: "t-1", user: "alice")),
            .putRegistrationStatus(Fixture.status(app: app.appId, request: request, status: .Failed, reason: .DuplicateExists)),
            .enqueueOutbox(Fixture.job("job-a", app: app.appId)),
        ]
    }

    private func feed(_ store: SQLiteProjectionStore) async throws {
        for (index, mutations) in commits().enumerated() {
            try await store.commit(mutations: mutations, offsets: [
                OffsetUpdate(partition: Fixture.partition(0), expected: index == 0 ? nil : Int64(index), next: Int64(index + 1)),
            ])
        }
    }

    func testTwoStoresFedTheSameCommitsDumpTheSameText() async throws {
        let one = try openStore("one.sqlite")
        let two = try openStore("two.sqlite")

        try await feed(one)
        try await feed(two)

        let dumpOne = try await one.dump()
        let dumpTwo = try await two.dump()
        XCTAssertEqual(dumpOne, dumpTwo)
        XCTAssertEqual(dumpOne.split(separator: "\n").count, 1 + 1 + 2 + 1 + 2, dumpOne)
    }

    func testDumpListsEachTableByPrimaryKeyOneEscapedLinePerRow() async throws {
        let store = try openStore()
        try await feed(store)

        let lines = try await store.dump().split(separator: "\n", omittingEmptySubsequences: false).map(String.init)

        let t0 = SQLiteValues.millis(Fixture.t0), t1 = SQLiteValues.millis(Fixture.at(1))
        let app = "6f9619ff-8b86-d011-b42d-00c04fc964ff"
        let hook = "url=\"https://example.test/hook\" headers=\"{\\\"x-extra\\\":\\\"1\\\"}\""
        XCTAssertEqual(lines, [
            "apps app_id=\"\(app)\" org_id=\"00000000-0000-0000-0000-0000000000aa\" name=\"Shop\" callback_url=\"https://example.test/cb\" callback_headers=\"{\\\"x-a\\\":\\\"1\\\",\\\"x-b\\\":\\\"2\\\"}\" webhook_retries=2 created_at=\(t0)",
            "api_tokens token_id=\"00000000-0000-0000-0000-000000000001\" app_id=\"\(app)\" token_hash=\"abc123\" revoked=0 created_at=\(t0)",
            "devices app_id=\"\(app)\" device_token=\"t-1\" user_id=\"alice\" platform=\"ios\" version=1 updated_at=\(t1)",
            "devices app_id=\"\(app)\" device_token=\"t-3\" user_id=\"bob\" platform=\"android\" version=2 updated_at=\(t1)",
            "registration_status request_id=\"00000000-0000-0000-0000-0000000000f1\" app_id=\"\(app)\" status=\"Failed\" failure_reason=\"DuplicateExists\" decided_at=\(SQLiteValues.millis(Fixture.at(2)))",
            "outbox id=\"job-a\" kind=\"registration-status\" app_id=\"\(app)\" \(hook) body=\"{\\\"Status\\\":\\\"Success\\\"}\" max_attempts=3",
            "outbox id=\"job-b\" kind=\"registration-status\" app_id=\"\(app)\" \(hook) body=\"{\\\"Status\\\":\\\"Failed\\\"}\" max_attempts=3",
            "",
        ])
    }

    func testDumpEscapesLineBreaksSoEveryRowStaysOneLine() async throws {
        let store = try openStore()
        try await store.commit(mutations: [.upsertApp(Fixture.app(name: "two\nlines\tand \"quotes\" \\"))], offsets: [])

        let dump = try await store.dump()

        XCTAssertEqual(dump.split(separator: "\n").count, 1)
        XCTAssertTrue(dump.contains(#"name="two\nlines\tand \"quotes\" \\""#), dump)
    }

    func testDumpLeavesOutDeliveryProgressAndOffsets() async throws {
        let delivered = try openStore("delivered.sqlite")
        let untouched = try openStore("untouched.sqlite")
        try await feed(delivered)
        try await feed(untouched)

        _ = try await delivered.claimOutboxJobs(now: Fixture.at(0), limit: 10, leaseUntil: Fixture.at(30))
        try await delivered.recordOutboxAttempt(jobId: "job-a", result: OutboxAttemptResult(
            at: Fixture.at(1), httpStatus: 200, error: nil, next: .delivered))
        try await delivered.commit(mutations: [], offsets: [OffsetUpdate(partition: Fixture.partition(0), expected: 2, next: 99)])

        let deliveredDump = try await delivered.dump()
        let untouchedDump = try await untouched.dump()
        XCTAssertEqual(deliveredDump, untouchedDump)
        let deliveredJob = try await delivered.outboxJob("job-a")
        XCTAssertEqual(deliveredJob?.state, .delivered, "the stores do differ in delivery progress")
    }

    func testNonUTF8BodiesAreDumpedAsHex() async throws {
        let store = try openStore()
        var job = Fixture.job("binary")
        job.body = Data([0xff, 0x00, 0x41])
        try await store.commit(mutations: [.enqueueOutbox(job)], offsets: [])

        let dump = try await store.dump()

        XCTAssertTrue(dump.contains(" body=0xff0041 "), dump)
    }
}
