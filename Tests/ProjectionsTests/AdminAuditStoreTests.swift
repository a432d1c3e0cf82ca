import Contracts
import Foundation
@testable import Projections
@testable import SQLiteProjections
@testable import PostgresProjections
@testable import ProjectionChangelog
import Testing
import WireCodec

/// Named admin tokens and the audit trail in both stores: written, read back, filtered and paged
/// alike, loaded for a batch, dumped, and restored from the changelog's final rows.
@Suite(.serialized) struct AdminAuditStoreTests {
    static let alice = UUID(uuidString: "00000000-0000-0000-0000-00000000a11c")!
    static let app = UUID(uuidString: "00000000-0000-0000-0000-0000000000a1")!

    /// Ten entries a second apart (two at the same millisecond), by bootstrap and alice, some of the app.
    static func entries() -> [AuditEntryRow] {
        (0..<10).map { (i: Int) -> AuditEntryRow in
            let id = UUID(uuidString: String(format: "00000000-0000-0000-0003-%012x", 10 - i))!
            let type = i % 3 == 0 ? "admin.app-created" : "admin.app-settings-changed"
            let byAlice = i % 4 == 1
            let actorName: String? = byAlice ? "alice" : (i == 7 ? nil : "bootstrap")
            let requestId: String? = i % 5 == 0 ? nil : "req-\(i)"
            let changes = #"{"callbackHeaders":{"x":"redacted"},"n":"# + "\(i)}"
            return AuditEntryRow(commandId: id, at: Fixture.at(Double(min(i, 8))), type: type, appId: i % 2 == 0 ? app : nil,
                                 actorId: byAlice ? alice : nil, actorName: actorName, requestId: requestId,
                                 outcome: i == 6 ? "rejected" : "applied", reason: i == 6 ? "unknown-app" : nil, changes: changes)
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testAdminTokensAreWrittenRevokedAndReadByIdHashAndPage(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let ids = (1...3).map { UUID(uuidString: String(format: "00000000-0000-0000-0004-%012x", $0))! }
            var tokens = ids.enumerated().map { i, id in
                AdminTokenRow(adminTokenId: id, name: "admin-\(i)", tokenHash: "hash-\(i)", createdAt: Fixture.at(Double(i)))
            }
            try await store.commit(mutations: tokens.map { .upsertAdminToken($0) }, offsets: [])
            tokens[1].revoked = true
            tokens[1].revokedAt = Fixture.at(10)
            try await store.commit(mutations: [.upsertAdminToken(tokens[1])], offsets: [])

            #expect(try await store.adminToken(id: ids[1]) == tokens[1])
            #expect(try await store.adminToken(hash: "hash-2") == tokens[2])
            #expect(try await store.adminToken(hash: "nope") == nil)
            #expect(try await store.adminTokens(after: nil, limit: 2) == Array(tokens.prefix(2)))
            #expect(try await store.adminTokens(after: ids[1], limit: 100) == [tokens[2]])
            var query = StateQuery()
            query.adminTokenIds = [ids[0], ids[1], UUID()]
            let snapshot = try await store.load(query)
            #expect(snapshot.adminTokens == [ids[0]: tokens[0], ids[1]: tokens[1]])
        }
    }

    /// Creates of one idempotency key in two windows may be two apps, of two shards, committed in
    /// either order: the newest first request is the one the key names, in one commit or two.
    @Test(arguments: StoreBackend.allCases)
    func testAnIdempotencyKeyNamesItsNewestFirstRequestInEveryOrder(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let older = IdempotencyKeyRow(scope: "admin:bootstrap:apps", key: "k", resourceId: UUID(), requestHash: "a", firstAt: Fixture.at(1))
            var newer = older
            newer.resourceId = UUID()
            newer.requestHash = "b"
            newer.firstAt = Fixture.at(90_000)
            for (name, commits) in [("newer-last", [[older], [newer]]), ("newer-first", [[newer], [older]]),
                                    ("one-commit", [[newer, older]])] {
                let store = try await h.openStore(name)
                for rows in commits { try await store.commit(mutations: rows.map { .putIdempotencyKey($0) }, offsets: []) }
                #expect(try await store.idempotencyKey(scope: older.scope, key: "k") == newer, "\(name)")
            }
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testTheAuditTrailIsNewestFirstFilteredAndPagedByItsCursor(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let entries = Self.entries()
            try await store.commit(mutations: entries.map { .putAuditEntry($0) }, offsets: [])
            // Newest first: by time, then command id, both descending.
            let expected = entries.sorted {
                ($0.at, $0.commandId.lowercasedString) > ($1.at, $1.commandId.lowercasedString)
            }
            #expect(try await store.auditEntries(AuditQuery(limit: 100)) == expected)

            var paged: [AuditEntryRow] = []
            var cursor: AuditCursor?
            repeat {
                let page = try await store.auditEntries(AuditQuery(before: cursor, limit: 3))
                paged += page
                cursor = page.count == 3 ? AuditCursor(page.last!) : nil
            } while cursor != nil
            #expect(paged == expected)

            #expect(try await store.auditEntries(AuditQuery(appId: Self.app, limit: 100)) == expected.filter { $0.appId == Self.app })
            #expect(try await store.auditEntries(AuditQuery(actor: .token(Self.alice), limit: 100)) == expected.filter { $0.actorId == Self.alice })
            #expect(try await store.auditEntries(AuditQuery(actor: .bootstrap, limit: 100))
                    == expected.filter { $0.actorId == nil && $0.actorName == "bootstrap" })
            #expect(try await store.auditEntries(AuditQuery(type: "admin.app-created", limit: 100))
                    == expected.filter { $0.type == "admin.app-created" })
            #expect(try await store.auditEntries(AuditQuery(since: Fixture.at(2), until: Fixture.at(5), limit: 100))
                    == expected.filter { $0.at >= Fixture.at(2) && $0.at < Fixture.at(5) })
            #expect(try await store.auditEntries(AuditQuery(appId: Self.app, actor: .bootstrap, since: Fixture.at(4), limit: 1))
                    == Array(expected.filter { $0.appId == Self.app && $0.actorName == "bootstrap" && $0.at >= Fixture.at(4) }.prefix(1)))
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testBothTablesAreDumpedAndRestoredFromTheChangelogsRows(_ backend: StoreBackend) async throws {
        let token = AdminTokenRow(adminTokenId: Self.alice, name: "alice", tokenHash: "h", revoked: true, createdAt: Fixture.t0,
                                  revokedAt: Fixture.at(1))
        let mutations: [Mutation] = [.upsertAdminToken(AdminTokenRow(adminTokenId: Self.alice, name: "alice", tokenHash: "h", createdAt: Fixture.t0)),
                                     .upsertAdminToken(token)] + Self.entries().map { .putAuditEntry($0) }
        let entry = ChangelogEntry(mutations: mutations, offsets: [])
        #expect(try ChangelogEntry(decoding: entry.encoded()) == entry)
        let rows = RestoredRows(mutations)
        #expect(rows.adminTokens == [token])
        #expect(rows.audit.count == 10)

        try await withStoreHarness(backend) { h in
            let committed = try await h.openStore("committed.sqlite")
            try await committed.commit(mutations: mutations, offsets: [])
            let dump = try await committed.dump()
            #expect(dump.contains(#"admin_tokens admin_token_id="00000000-0000-0000-0000-00000000a11c" name="alice" token_hash="h" revoked=1"#))
            #expect(dump.components(separatedBy: "\naudit_log ").count == 11, "\(dump)")

            let restored = try await h.openStore("restored.sqlite")
            try await restored.beginRestore()
            try await restored.restore(rows: rows)
            try await restored.finishRestore()
            #expect(try await restored.dump() == dump)
            #expect(try await restored.auditEntries(AuditQuery(limit: 100)) == committed.auditEntries(AuditQuery(limit: 100)))
        }
    }
}
