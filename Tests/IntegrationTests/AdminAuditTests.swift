import Contracts
import Foundation
import Logging
import NIOHTTP1
import Projections
import ProjectionStores
import TestSupport
import WireCodec
import XCTest

/// Named admin tokens and the audit log on the real stack: a named token works, is listed, is
/// revoked and then refused; a randomized admin history by three actors is listed in the audit
/// log with the right actor, type and app, holds no secret, and is the same after a rebuild.
final class AdminAuditTests: XCTestCase {
    private var stack: PushlineStack!

    override func tearDown() async throws {
        await stack?.stop()
        stack = nil
    }

    /// Records the stack's logs when a test fails.
    private func check(_ body: () async throws -> Void) async throws {
        do {
            try await body()
        } catch {
            XCTFail("\(error)\n\(stack?.logs() ?? "")")
            throw error
        }
    }

    private func call(_ method: HTTPMethod, _ path: String, json: Data? = nil, token: String? = nil,
                      requestId: String? = nil) async throws -> HTTPClientHelpers.Answer {
        var headers = ["Authorization": "Bearer \(token ?? stack.adminToken)"]
        if let requestId { headers["x-request-id"] = requestId }
        return try await HTTPClientHelpers.request(method, "\(stack.ingestURL)\(path)", body: json, headers: headers)
    }

    private func body(_ object: [String: Any]) throws -> Data { try JSONSerialization.data(withJSONObject: object) }

    private func decode<T: Decodable>(_ type: T.Type, _ answer: HTTPClientHelpers.Answer) throws -> T {
        try WireJSON.decoder().decode(type, from: answer.body)
    }

    private func createAdminToken(_ name: String, by token: String? = nil, requestId: String? = nil) async throws -> AdminAPI.AdminTokenCreated {
        let answer = try await call(.POST, "/admin/v1/admin-tokens", json: try body(["name": name]), token: token, requestId: requestId)
        guard answer.status == 201 else { throw TestFailure("create admin token answered \(answer.status): \(answer.text)") }
        return try decode(AdminAPI.AdminTokenCreated.self, answer)
    }

    /// Every page of `GET /admin/v1/audit?<query>`, and the pages' text.
    private func audit(_ query: String = "", token: String? = nil) async throws -> (entries: [AdminAPI.AuditEntry], text: String) {
        var entries: [AdminAPI.AuditEntry] = []
        var text = ""
        var after: String?
        repeat {
            let answer = try await call(.GET, "/admin/v1/audit?limit=7" + (query.isEmpty ? "" : "&\(query)")
                                            + (after.map { "&after=\($0)" } ?? ""), token: token)
            guard answer.status == 200 else { throw TestFailure("audit answered \(answer.status): \(answer.text)") }
            text += answer.text
            let page = try decode(AdminAPI.AuditPage.self, answer)
            entries += page.entries
            after = page.next
        } while after != nil
        return (entries, text)
    }

    func testANamedAdminTokenWorksIsListedRevokedAndThenRefused() async throws {
        stack = try await PushlineStack.start()
        try await check {
            let alice = try await createAdminToken("alice")
            let admitted = try await call(.GET, "/admin/v1/apps", token: alice.token).status
            XCTAssertEqual(admitted, 200)
            let bob = try await createAdminToken("bob", by: alice.token)

            let listed = try await call(.GET, "/admin/v1/admin-tokens")
            let list = try decode(AdminAPI.AdminTokenList.self, listed)
            XCTAssertEqual(Set(list.adminTokens.map(\.name)), ["alice", "bob"])
            XCTAssertFalse(list.adminTokens.contains { $0.revoked })
            XCTAssertFalse(listed.text.contains(alice.token) || listed.text.contains(ApiTokens.hash(alice.token)), listed.text)

            let revoked = try await call(.DELETE, "/admin/v1/admin-tokens/\(alice.id.lowercasedString)", token: bob.token)
            XCTAssertEqual(revoked.status, 202, revoked.text)
            // Answered once applied and past the auth cache: refused at once, on this instance and any other.
            let refused = try await call(.GET, "/admin/v1/apps", token: alice.token).status
            let stillAdmitted = try await call(.GET, "/admin/v1/apps", token: bob.token).status
            XCTAssertEqual(refused, 401)
            XCTAssertEqual(stillAdmitted, 200)
            let after = try decode(AdminAPI.AdminTokenList.self, try await call(.GET, "/admin/v1/admin-tokens"))
            XCTAssertEqual(after.adminTokens.first { $0.id == alice.id }?.revoked, true)
            XCTAssertNotNil(after.adminTokens.first { $0.id == alice.id }?.revokedAt)

            let trail = try await audit().entries
            XCTAssertEqual(trail.map(\.type), ["admin.admin-token-revoked", "admin.admin-token-issued", "admin.admin-token-issued"])
            XCTAssertEqual(trail.map { $0.actor?.name }, ["bob", "alice", "bootstrap"])
            XCTAssertEqual(trail[0].actor?.id, bob.id)
            XCTAssertEqual(trail[0].changes["adminTokenId"], .string(alice.id.lowercasedString))
        }
    }

    /// What one step of the history wrote, by its request id.
    private struct Expected: Equatable, CustomStringConvertible {
        var type: String
        var actor: String
        var app: UUID?
        var description: String { "\(type) by \(actor) on \(app?.lowercasedString ?? "-")" }
    }

    func testTheAuditLogListsARandomAdminHistoryByActorWithoutSecretsAndIsTheSameAfterARebuild() async throws {
        let seed = ProcessInfo.processInfo.environment["PUSHLINE_TEST_SEED"].flatMap { UInt64($0) } ?? UInt64.random(in: 1...UInt64(UInt32.max))
        print("AdminAuditTests seed: \(seed) (PUSHLINE_TEST_SEED=\(seed) repeats this history)")
        var random = SplitMix(seed: seed)
        let secretsKey = TestPushKeys.secretsKey()
        stack = try await PushlineStack.start(ingestEnvironment: ["PUSHLINE_SECRETS_KEY": secretsKey])
        let keys = TestPushKeys(projectId: "pushline-audit-7")
        try await check {
            var expected: [String: Expected] = [:]
            // Secrets that may enter neither the audit log nor (for tokens and keys) the admin topic.
            var rawTokens: [String] = []
            var settingsSecrets: [String] = []
            let bob = try await createAdminToken("bob", requestId: "setup-bob")
            let carol = try await createAdminToken("carol", requestId: "setup-carol")
            expected["setup-bob"] = Expected(type: "admin.admin-token-issued", actor: "bootstrap")
            expected["setup-carol"] = Expected(type: "admin.admin-token-issued", actor: "bootstrap")
            rawTokens += [bob.token, carol.token]
            let actors: [(name: String, token: String?)] = [("bootstrap", nil), ("bob", bob.token), ("carol", carol.token)]
            var apps: [UUID] = []
            var appTokens: [UUID: [UUID]] = [:]
            var credentials: [UUID: Set<String>] = [:]
            var extraAdminTokens: [UUID] = []

            for step in 0..<24 {
                let actor = actors[Int(random.next() % 3)]
                let requestId = "hist-\(seed)-\(step)"
                var choice = apps.isEmpty ? 0 : Int(random.next() % 8)
                if choice == 0 && apps.count >= 3 { choice = 1 }
                let app = apps.isEmpty ? nil : apps[Int(random.next() % UInt64(apps.count))]
                let answer: HTTPClientHelpers.Answer
                let type: String
                switch choice {
                case 0:
                    answer = try await call(.POST, "/admin/v1/apps", json: try body(["name": "app \(step)"]), token: actor.token, requestId: requestId)
                    let created = try decode(AdminAPI.AppCreatedAnswer.self, answer)
                    apps.append(created.mobileAppId)
                    appTokens[created.mobileAppId] = [created.tokenId]
                    rawTokens.append(created.apiToken)
                    expected[requestId] = Expected(type: "admin.app-created", actor: actor.name, app: created.mobileAppId)
                    XCTAssertEqual(answer.status, 201, answer.text)
                    continue
                case 1:
                    let password = "PLANTED-PW-\(step)-\(random.next())", query = "PLANTED-Q-\(step)-\(random.next())"
                    let header = "PLANTED-HDR-\(step)-\(random.next())"
                    settingsSecrets += [password, query, header]
                    answer = try await call(.PATCH, "/admin/v1/apps/\(app!)", json: try body([
                        "callbackUrl": "https://hook:\(password)@hooks.example.test/cb?key=\(query)",
                        "callbackHeaders": ["Authorization": "Bearer \(header)"], "webhookRetries": step % 4,
                    ]), token: actor.token, requestId: requestId)
                    type = "admin.app-settings-changed"
                case 2:
                    answer = try await call(.POST, "/admin/v1/apps/\(app!)/tokens", json: try body(["scopes": [step % 2 == 0 ? "client" : "server"]]),
                                            token: actor.token, requestId: requestId)
                    let issued = try decode(AdminAPI.TokenIssuedAnswer.self, answer)
                    rawTokens.append(issued.apiToken)
                    appTokens[app!, default: []].append(issued.tokenId)
                    type = "admin.api-token-issued"
                case 3:
                    guard let token = appTokens[app!]?.popLast() else { continue }
                    answer = try await call(.DELETE, "/admin/v1/apps/\(app!)/tokens/\(token)", token: actor.token, requestId: requestId)
                    type = "admin.api-token-revoked"
                case 4:
                    answer = try await call(.PUT, "/admin/v1/apps/\(app!)/credentials/apns", json: try body([
                        "teamId": "ABCDE12345", "keyId": "KEY1234567", "bundleId": "com.example.audit", "privateKey": keys.apnsPEM,
                        "environment": "sandbox",
                    ]), token: actor.token, requestId: requestId)
                    credentials[app!, default: []].insert("apns")
                    type = "admin.push-credentials-set"
                case 5:
                    answer = try await call(.PUT, "/admin/v1/apps/\(app!)/credentials/fcm", json: try body(["serviceAccount": keys.serviceAccount()]),
                                            token: actor.token, requestId: requestId)
                    credentials[app!, default: []].insert("fcm")
                    type = "admin.push-credentials-set"
                case 6:
                    guard let provider = credentials[app!]?.sorted().first else { continue }
                    answer = try await call(.DELETE, "/admin/v1/apps/\(app!)/credentials/\(provider)", token: actor.token, requestId: requestId)
                    credentials[app!]?.remove(provider)
                    type = "admin.push-credentials-removed"
                default:
                    if let id = extraAdminTokens.popLast() {
                        answer = try await call(.DELETE, "/admin/v1/admin-tokens/\(id)", token: actor.token, requestId: requestId)
                        expected[requestId] = Expected(type: "admin.admin-token-revoked", actor: actor.name)
                    } else {
                        let created = try await createAdminToken("extra-\(step)", by: actor.token, requestId: requestId)
                        extraAdminTokens.append(created.id)
                        rawTokens.append(created.token)
                        expected[requestId] = Expected(type: "admin.admin-token-issued", actor: actor.name)
                        continue
                    }
                    XCTAssertEqual(answer.status, 202, answer.text)
                    continue
                }
                XCTAssertTrue([201, 202].contains(answer.status), "\(type): \(answer.status) \(answer.text)")
                expected[requestId] = Expected(type: type, actor: actor.name, app: app)
            }

            // Each admin command of the history, once, with its actor, type and app, newest first.
            let (entries, text) = try await audit()
            XCTAssertEqual(entries.count, expected.count, "seed \(seed)")
            var found: [String: Expected] = [:]
            for entry in entries {
                let requestId = try XCTUnwrap(entry.requestId, "seed \(seed): \(entry.type) without a request id")
                XCTAssertNil(found[requestId], "seed \(seed): \(requestId) twice")
                found[requestId] = Expected(type: entry.type, actor: entry.actor?.name ?? "-", app: entry.mobileAppId)
                XCTAssertEqual(entry.outcome, "applied", "seed \(seed): \(requestId)")
                let tokenId = actors.first { $0.name == entry.actor?.name }.flatMap { $0.name == "bob" ? bob.id : $0.name == "carol" ? carol.id : nil }
                XCTAssertEqual(entry.actor?.id, tokenId, "seed \(seed): \(requestId)")
            }
            XCTAssertEqual(found, expected, "seed \(seed)")
            XCTAssertEqual(entries.map(\.at), entries.map(\.at).sorted(by: >), "seed \(seed): newest first")

            // The filters select exactly their part.
            let byBob = try await audit("actor=\(bob.id.lowercasedString)", token: carol.token).entries
            XCTAssertEqual(Set(byBob.compactMap(\.requestId)), Set(expected.filter { $0.value.actor == "bob" }.keys), "seed \(seed)")
            let byBootstrap = try await audit("actor=bootstrap").entries
            XCTAssertEqual(Set(byBootstrap.compactMap(\.requestId)), Set(expected.filter { $0.value.actor == "bootstrap" }.keys))
            let firstApp = try XCTUnwrap(apps.first)
            let ofApp = try await audit("app=\(firstApp.lowercasedString)").entries
            XCTAssertEqual(Set(ofApp.compactMap(\.requestId)), Set(expected.filter { $0.value.app == firstApp }.keys), "seed \(seed)")
            let creations = try await audit("type=admin.app-created").entries
            XCTAssertEqual(creations.count, apps.count)

            // No secret: not in the audit log; tokens and keys not in the admin topic either.
            let keyPieces = [keys.apnsPEM, keys.rsaPEM].flatMap { pem -> [String] in
                let body = Array(TestPushKeys.pemBody(pem))
                return stride(from: 0, to: body.count - 40, by: 40).map { String(body[$0..<$0 + 40]) }
            } + ["PRIVATE KEY"]
            let adminTopic = try await stack.broker.kcat(["-C", "-t", stack.topics.admin, "-o", "beginning", "-e", "-q"])
            for secret in rawTokens + keyPieces {
                XCTAssertFalse(text.contains(secret), "seed \(seed): a secret in the audit log")
                XCTAssertFalse(adminTopic.contains(secret), "seed \(seed): a secret in the admin topic")
            }
            for secret in settingsSecrets {
                XCTAssertFalse(text.contains(secret), "seed \(seed): a callback credential in the audit log")
            }
            let store = try await stack.openStore()
            let liveDump = try await store.dump()
            await store.close()
            for secret in rawTokens where liveDump.contains(secret) {
                XCTFail("seed \(seed): a raw token in the store")
            }

            // Rebuilt from the log: the same audit log, and the same store.
            let rebuiltPath = stack.directory.appendingPathComponent("rebuilt.sqlite").path
            try await stack.rebuild(into: rebuiltPath)
            let rebuilt = try await ProjectionStoreFactory.open("sqlite:\(rebuiltPath)", logger: Logger(label: "test"))
            let rebuiltDump = try await rebuilt.dump()
            let rebuiltAudit = try await rebuilt.auditEntries(AuditQuery(limit: 1000))
            await rebuilt.close()
            let live = try await stack.openStore()
            let liveAudit = try await live.auditEntries(AuditQuery(limit: 1000))
            let liveDumpNow = try await live.dump()
            await live.close()
            XCTAssertEqual(rebuiltAudit.count, expected.count)
            XCTAssertEqual(rebuiltAudit, liveAudit, "seed \(seed): the audit log after a rebuild")
            ScaleOutTests.assertSameDump(rebuiltDump, liveDumpNow, "seed \(seed): rebuilt store vs serving store")
        }
    }
}

/// A small seeded generator (SplitMix64), so that a failing history can be run again.
private struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
