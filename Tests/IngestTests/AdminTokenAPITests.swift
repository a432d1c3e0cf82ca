import Contracts
import Foundation
import Hummingbird
import HummingbirdTesting
@testable import Ingest
import Projections
import TestSupport
import WireCodec
import XCTest

/// Named admin tokens (`/admin/v1/admin-tokens`), the actor every admin command records, and
/// the audit log route, against an in-memory store.
final class AdminTokenAPITests: XCTestCase {
    func testCreatingATokenPublishesOnlyItsHashAndShowsTheTokenOnce() async throws {
        let harness = Harness()
        let response = try await harness.test { client in
            try await client.execute(uri: "/admin/v1/admin-tokens", method: .post,
                                     headers: [.authorization: "Bearer \(Fixture.adminToken)", .contentType: "application/json",
                                               .xRequestId: "req-create-1"],
                                     body: ByteBuffer(string: #"{"name":"alice@ops"}"#))
        }
        XCTAssertEqual(response.status, .created)
        XCTAssertEqual(response.headers[.cacheControl], "no-store")
        let created = try decodeWire(AdminAPI.AdminTokenCreated.self, response)
        XCTAssertEqual(created.name, "alice@ops")
        let command = try await harness.onlyPublished(AdminTokenIssued.self)
        XCTAssertEqual(command.adminTokenId, created.id)
        XCTAssertEqual(command.name, "alice@ops")
        XCTAssertEqual(command.tokenHash, ApiTokens.hash(created.token))
        XCTAssertEqual(command.actor, .bootstrap)
        XCTAssertEqual(command.requestId, "req-create-1")
        let commands = await harness.publisher.commands
        let record = try XCTUnwrap(commands.first)
        XCTAssertFalse(String(decoding: record.value, as: UTF8.self).contains(created.token), "the raw token is not in the log")
        XCTAssertEqual(RFC3339.string(from: created.createdAt), RFC3339.string(from: record.at), "the command's time in the log")
    }

    func testBadNamesAreRefusedWith400NamingTheField() async throws {
        let harness = Harness()
        for body in [#"{}"#, #"{"name":""}"#, #"{"name":"-lead"}"#, #"{"name":"has space"}"#, #"{"name":"Bootstrap"}"#,
                     #"{"name":"\#(String(repeating: "a", count: 65))"}"#, #"{"name":"é"}"#] {
            let response = try await harness.test { client in try await client.admin(.post, "/admin/v1/admin-tokens", json: body) }
            try assertProblem(response, .badRequest, field: "name")
        }
        await assertNothingPublished(harness.publisher)
    }

    func testANamedTokenAdmitsAndIsRecordedAsTheActorOfWhatItChanges() async throws {
        let harness = Harness()
        _ = await harness.seedApp()
        let id = UUID()
        await harness.store.seed(adminToken: AdminTokenRow(adminTokenId: id, name: "ci", tokenHash: ApiTokens.hash("named-admin-1"),
                                                            createdAt: Date()))
        let response = try await harness.test { client in
            try await client.admin(.patch, "/admin/v1/apps/\(Fixture.appId)", json: #"{"name":"renamed"}"#, token: "named-admin-1")
        }
        XCTAssertEqual(response.status, .accepted)
        let command = try await harness.onlyPublished(AppSettingsChanged.self)
        XCTAssertEqual(command.actor, AdminActor(id: id, name: "ci"))
        XCTAssertNotNil(command.requestId)
    }

    func testARevokedOrUnknownNamedTokenIsRefusedAndTheCacheNeverRefusesOnItsOwn() async throws {
        var cached = Harness()
        cached.configuration.authCacheMs = 60_000
        let harness = cached
        let id = UUID()
        await harness.store.seed(adminToken: AdminTokenRow(adminTokenId: id, name: "ci", tokenHash: ApiTokens.hash("named-admin-1"),
                                                            createdAt: Date()))
        let statuses = try await harness.test { client in
            var statuses: [HTTPResponse.Status] = []
            statuses.append(try await client.admin(.get, "/admin/v1/admin-tokens", token: "named-admin-1").status)
            statuses.append(try await client.admin(.get, "/admin/v1/admin-tokens", token: "not-a-token").status)
            // A token issued after the cache was filled is found in the store at once.
            await harness.store.seed(adminToken: AdminTokenRow(adminTokenId: UUID(), name: "new", tokenHash: ApiTokens.hash("named-admin-2"),
                                                                createdAt: Date()))
            statuses.append(try await client.admin(.get, "/admin/v1/admin-tokens", token: "named-admin-2").status)
            return statuses
        }
        XCTAssertEqual(statuses, [.ok, .unauthorized, .ok])

        var uncached = Harness()
        uncached.configuration.authCacheMs = 0
        await uncached.store.seed(adminToken: AdminTokenRow(adminTokenId: id, name: "ci", tokenHash: ApiTokens.hash("named-admin-1"),
                                                             revoked: true, createdAt: Date()))
        let revoked = try await uncached.test { client in try await client.admin(.get, "/admin/v1/admin-tokens", token: "named-admin-1") }
        try assertProblem(revoked, .unauthorized, field: "Authorization")
    }

    func testFailedAdminAuthenticationsFromOneAddressAreLimitedEvenForTheRightTokenAfterwards() async throws {
        let harness = Harness()
        let (failures, blocked, retryAfter) = try await harness.test { client in
            var failures: [HTTPResponse.Status] = []
            for guess in 0..<AdminAuthMiddleware.failureLimit.burst {
                failures.append(try await client.admin(.get, "/admin/v1/apps", token: "guess-\(guess)").status)
            }
            // The allowance is spent: the right token is not even looked at until it refills.
            let blocked = try await client.admin(.get, "/admin/v1/apps")
            return (failures, blocked.status, blocked.headers[.retryAfter])
        }
        XCTAssertEqual(failures, Array(repeating: .unauthorized, count: AdminAuthMiddleware.failureLimit.burst))
        XCTAssertEqual(blocked, .tooManyRequests)
        XCTAssertGreaterThanOrEqual(Int(retryAfter ?? "") ?? 0, 1)
        // Admitted requests spend nothing: many of them never meet the limit.
        let statuses = try await harness.test { client in
            var statuses: Set<HTTPResponse.Status> = []
            for _ in 0..<(3 * AdminAuthMiddleware.failureLimit.burst) { statuses.insert(try await client.admin(.get, "/admin/v1/apps").status) }
            return statuses
        }
        XCTAssertEqual(statuses, [.ok])
    }

    func testWithoutABootstrapTokenNamedTokensStillAdmit() async throws {
        var harness = Harness()
        harness.configuration.adminToken = ""
        await harness.store.seed(adminToken: AdminTokenRow(adminTokenId: UUID(), name: "ci", tokenHash: ApiTokens.hash("named-admin-1"),
                                                            createdAt: Date()))
        let (named, empty) = try await harness.test { client in
            (try await client.admin(.get, "/admin/v1/admin-tokens", token: "named-admin-1").status,
             try await client.admin(.get, "/admin/v1/admin-tokens", token: "").status)
        }
        XCTAssertEqual(named, .ok)
        XCTAssertEqual(empty, .unauthorized)
    }

    func testListingShowsNeitherTokenNorHashAndPages() async throws {
        let harness = Harness()
        let ids = (0..<3).map { _ in UUID() }.sorted { $0.lowercasedString < $1.lowercasedString }
        for (i, id) in ids.enumerated() {
            await harness.store.seed(adminToken: AdminTokenRow(adminTokenId: id, name: "t\(i)", tokenHash: ApiTokens.hash("raw-\(i)"),
                                                                revoked: i == 1, createdAt: Date(timeIntervalSince1970: 1_800_000_000)))
        }
        let (first, second) = try await harness.test { client in
            let first = try await client.admin(.get, "/admin/v1/admin-tokens?limit=2")
            let next = try decodeWire(AdminAPI.AdminTokenList.self, first).next!
            return (first, try await client.admin(.get, "/admin/v1/admin-tokens?limit=2&after=\(next)"))
        }
        let page1 = try decodeWire(AdminAPI.AdminTokenList.self, first)
        XCTAssertEqual(page1.adminTokens.map(\.id), Array(ids.prefix(2)))
        XCTAssertEqual(page1.adminTokens.map(\.revoked), [false, true])
        let page2 = try decodeWire(AdminAPI.AdminTokenList.self, second)
        XCTAssertEqual(page2.adminTokens.map(\.id), [ids[2]])
        XCTAssertNil(page2.next)
        let text = String(decoding: Data(first.body.readableBytesView), as: UTF8.self)
        XCTAssertFalse(text.contains(ApiTokens.hash("raw-0")) || text.contains("raw-0") || text.contains("tokenHash"), text)
    }

    func testRevokingPublishesOnceAndUnknownIsNotFound() async throws {
        let harness = Harness()
        let live = UUID(), revoked = UUID()
        await harness.store.seed(adminToken: AdminTokenRow(adminTokenId: live, name: "a", tokenHash: "h1", createdAt: Date()))
        await harness.store.seed(adminToken: AdminTokenRow(adminTokenId: revoked, name: "b", tokenHash: "h2", revoked: true, createdAt: Date()))
        let (a, b, c, d) = try await harness.test { client in
            (try await client.admin(.delete, "/admin/v1/admin-tokens/\(live)"),
             try await client.admin(.delete, "/admin/v1/admin-tokens/\(revoked)"),
             try await client.admin(.delete, "/admin/v1/admin-tokens/\(UUID())"),
             try await client.admin(.delete, "/admin/v1/admin-tokens/nope"))
        }
        XCTAssertEqual(a.status, .accepted)
        XCTAssertEqual(b.status, .accepted)
        try assertProblem(c, .notFound, field: "adminTokenId")
        try assertProblem(d, .badRequest, field: "adminTokenId")
        let command = try await harness.onlyPublished(AdminTokenRevoked.self)
        XCTAssertEqual(command.adminTokenId, live)
        XCTAssertEqual(command.actor, .bootstrap)
    }

    func testEveryAdminRouteRecordsItsActorAndRequestId() async throws {
        let harness = Harness()
        let tokenId = await harness.seedApp()
        let path = "/admin/v1/apps/\(Fixture.appId)"
        _ = try await harness.test { client in
            _ = try await client.admin(.post, "/admin/v1/apps", json: #"{"name":"n"}"#)
            _ = try await client.admin(.post, "\(path)/tokens", json: #"{"scopes":["server"]}"#)
            _ = try await client.admin(.delete, "\(path)/tokens/\(tokenId)")
            _ = try await client.admin(.patch, path, json: #"{"webhookRetries":1}"#)
        }
        let commands = await harness.publisher.commands
        XCTAssertEqual(commands.count, 4)
        for command in commands {
            let value = try JSONValue.parse(command.value)
            XCTAssertEqual(value["payload"]?["actor"], .object(["name": .string("bootstrap")]), command.type)
            guard case .string(let requestId)? = value["payload"]?["requestId"] else { return XCTFail("no request id in \(command.type)") }
            XCTAssertFalse(requestId.isEmpty)
        }
    }

    func testAuditAnswersNewestFirstWithFiltersAndACursor() async throws {
        let harness = Harness()
        let base = Date(timeIntervalSince1970: 1_800_000_000)
        let alice = UUID()
        let rows = (0..<5).map { (i: Int) -> AuditEntryRow in
            let type = i == 4 ? "admin.admin-token-issued" : "admin.app-created"
            let byBootstrap = i % 2 == 0
            let changes = #"{"name":"n"# + "\(i)\"}"
            return AuditEntryRow(commandId: UUID(), at: base.addingTimeInterval(Double(i)), type: type, appId: i == 4 ? nil : Fixture.appId,
                                 actorId: byBootstrap ? nil : alice, actorName: byBootstrap ? "bootstrap" : "alice", requestId: "req-\(i)",
                                 outcome: i == 3 ? "rejected" : "applied", reason: i == 3 ? "unknown-app" : nil, changes: changes)
        }
        for row in rows { await harness.store.seed(audit: row) }
        let (all, page1, bootstrap, byType, window) = try await harness.test { client in
            (try await client.admin(.get, "/admin/v1/audit"),
             try await client.admin(.get, "/admin/v1/audit?limit=2"),
             try await client.admin(.get, "/admin/v1/audit?actor=bootstrap&app=\(Fixture.appId)"),
             try await client.admin(.get, "/admin/v1/audit?type=admin.admin-token-issued"),
             try await client.admin(.get, "/admin/v1/audit?since=2027-01-15T08:00:01Z&until=2027-01-15T08:00:03%2B00:00"))
        }
        let entries = try decodeWire(AdminAPI.AuditPage.self, all).entries
        XCTAssertEqual(entries.map(\.requestId), ["req-4", "req-3", "req-2", "req-1", "req-0"], "newest first")
        XCTAssertEqual(entries[1].actor, AdminActor(id: alice, name: "alice"))
        XCTAssertEqual(entries[1].outcome, "rejected")
        XCTAssertEqual(entries[1].reason, "unknown-app")
        XCTAssertEqual(entries[1].changes, .object(["name": .string("n3")]))
        XCTAssertNil(entries[0].mobileAppId)

        let first = try decodeWire(AdminAPI.AuditPage.self, page1)
        XCTAssertEqual(first.entries.map(\.requestId), ["req-4", "req-3"])
        let next = try XCTUnwrap(first.next)
        let rest = try await harness.test { client in try await client.admin(.get, "/admin/v1/audit?limit=2&after=\(next)") }
        XCTAssertEqual(try decodeWire(AdminAPI.AuditPage.self, rest).entries.map(\.requestId), ["req-2", "req-1"])

        XCTAssertEqual(try decodeWire(AdminAPI.AuditPage.self, bootstrap).entries.map(\.requestId), ["req-2", "req-0"])
        XCTAssertEqual(try decodeWire(AdminAPI.AuditPage.self, byType).entries.map(\.requestId), ["req-4"])
        XCTAssertEqual(try decodeWire(AdminAPI.AuditPage.self, window).entries.map(\.requestId), ["req-2", "req-1"],
                       "since is inclusive, until exclusive")
    }

    func testBadAuditFiltersAreRefusedWith400NamingTheField() async throws {
        let harness = Harness()
        for (query, field) in [("app=x", "app"), ("actor=someone", "actor"), ("type=notification.requested", "type"),
                               ("since=yesterday", "since"), ("until=2026-13-01T00:00:00Z", "until"), ("limit=0", "limit"),
                               ("after=abc", "after")] {
            let response = try await harness.test { client in try await client.admin(.get, "/admin/v1/audit?\(query)") }
            try assertProblem(response, .badRequest, field: field, code: .fieldInvalid)
        }
        let unauthorized = try await harness.test { client in try await client.admin(.get, "/admin/v1/audit", token: "nope") }
        XCTAssertEqual(unauthorized.status, .unauthorized)
    }
}

/// An answer's JSON as the API writes it (RFC 3339 dates).
private func decodeWire<T: Decodable>(_ type: T.Type, _ response: TestResponse) throws -> T {
    try WireJSON.decoder().decode(T.self, from: Data(response.body.readableBytesView))
}
