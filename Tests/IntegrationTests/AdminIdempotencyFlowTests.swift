import Contracts
import Foundation
import Logging
import Projections
import SQLiteProjections
import TestSupport
import WireCodec
import XCTest

/// Retried admin creates on the real stack (docs/API.md#idempotency-keys): an app or a token
/// created with an `Idempotency-Key` is created once, whichever ingest instance takes the retry,
/// and the retry shows the same raw tokens, which work; the key with another body is refused, the
/// same key of another admin token is another app, and a rebuild of the log gives the same store.
final class AdminIdempotencyFlowTests: XCTestCase {
    func testARetriedCreateThroughAnotherInstanceIsTheSameAppWithWorkingTokens() async throws {
        // One deployment key on every instance: the raw tokens derive from it.
        let stack = try await PushlineStack.start(ingestEnvironment: ["PUSHLINE_SECRETS_KEY": TestPushKeys.secretsKey()])
        let secondPort = TestBroker.freePort()
        let second = stack.makeIngest(port: secondPort)
        do {
            try second.start()
            try await second.waitHealthy("http://127.0.0.1:\(secondPort)/health")
            try await run(stack, ingests: [stack.ingestURL, "http://127.0.0.1:\(secondPort)"])
        } catch {
            _ = try? await second.stop()
            await stack.stop()
            throw error
        }
        _ = try? await second.stop()
        await stack.stop()
    }

    private func post(_ url: String, _ json: [String: Any], key: String, token: String) async throws -> HTTPClientHelpers.Answer {
        try await HTTPClientHelpers.request(.POST, url, body: try JSONSerialization.data(withJSONObject: json, options: .sortedKeys),
                                            headers: ["Authorization": "Bearer \(token)", "Idempotency-Key": key])
    }

    private func run(_ stack: PushlineStack, ingests: [String]) async throws {
        let body: [String: Any] = ["name": "Shop"]
        let first = try await post("\(ingests[0])/admin/v1/apps", body, key: "create-shop", token: stack.adminToken)
        XCTAssertEqual(first.status, 201, first.text)
        let app = try first.decode(AdminAPI.AppCreatedAnswer.self)
        let retry = try await post("\(ingests[1])/admin/v1/apps", body, key: "create-shop", token: stack.adminToken)
        XCTAssertEqual(retry.status, 201, retry.text)
        XCTAssertEqual(retry.headers.first(name: "Idempotent-Replayed"), "true")
        XCTAssertEqual(try retry.decode(AdminAPI.AppCreatedAnswer.self), app, "the same app and raw tokens")
        let other = try await post("\(ingests[1])/admin/v1/apps", ["name": "Other"], key: "create-shop", token: stack.adminToken)
        XCTAssertEqual(other.status, 422, other.text)
        let apps = try await stack.sqlite("SELECT app_id FROM apps")
        XCTAssertEqual(apps, [app.mobileAppId.lowercasedString], "one app")

        // The tokens a retry shows are the app's: the server token sends, the client token does not.
        let send = ["userId": "nobody", "title": "hello"]
        let sent = try await stack.call(.POST, "/v1/apps/\(app.mobileAppId)/notifications", json: send, token: app.apiToken)
        XCTAssertEqual(sent.status, 202, sent.text)
        let refused = try await stack.call(.POST, "/v1/apps/\(app.mobileAppId)/notifications", json: send, token: app.clientToken)
        XCTAssertEqual(refused.status, 403, refused.text)

        // A token issue retried: one token, the same raw value, which works.
        let issue = "/admin/v1/apps/\(app.mobileAppId)/tokens"
        let issued = try await post("\(ingests[0])\(issue)", ["scopes": ["server"]], key: "rotate-1", token: stack.adminToken)
        XCTAssertEqual(issued.status, 201, issued.text)
        let again = try await post("\(ingests[1])\(issue)", ["scopes": ["server"]], key: "rotate-1", token: stack.adminToken)
        XCTAssertEqual(again.status, 201, again.text)
        let token = try issued.decode(AdminAPI.TokenIssuedAnswer.self)
        XCTAssertEqual(try again.decode(AdminAPI.TokenIssuedAnswer.self), token)
        let tokens = try await stack.sqlite("SELECT COUNT(*) FROM api_tokens WHERE app_id = '\(app.mobileAppId.lowercasedString)'")
        XCTAssertEqual(tokens, ["3"], "the server and client tokens, and one issued")
        let withIssued = try await stack.call(.POST, "/v1/apps/\(app.mobileAppId)/notifications", json: send, token: token.apiToken)
        XCTAssertEqual(withIssued.status, 202, withIssued.text)

        // Keys belong to their admin token: another one's "create-shop" is another app.
        let named = try await post("\(ingests[0])/admin/v1/admin-tokens", ["name": "ops"], key: "ops-token", token: stack.adminToken)
        XCTAssertEqual(named.status, 201, named.text)
        let namedAgain = try await post("\(ingests[1])/admin/v1/admin-tokens", ["name": "ops"], key: "ops-token", token: stack.adminToken)
        XCTAssertEqual(namedAgain.status, 201, namedAgain.text)
        let created = try WireJSON.decoder().decode(AdminAPI.AdminTokenCreated.self, from: named.body)
        XCTAssertEqual(try WireJSON.decoder().decode(AdminAPI.AdminTokenCreated.self, from: namedAgain.body), created,
                       "a retried admin token create shows the same token")
        let opsToken = created.token
        let ops = try await post("\(ingests[1])/admin/v1/apps", body, key: "create-shop", token: opsToken)
        XCTAssertEqual(ops.status, 201, ops.text)
        XCTAssertNotEqual(try ops.decode(AdminAPI.AppCreatedAnswer.self).mobileAppId, app.mobileAppId)

        // The same log decided again gives the same store, keys included.
        let live = try await stack.openStore()
        let liveDump = try await live.dump()
        await live.close()
        XCTAssertEqual(liveDump.split(separator: "\n").filter { $0.hasPrefix("idempotency_keys ") }.count, 4)
        let path = stack.directory.appendingPathComponent("rebuilt.sqlite").path
        let output = try await stack.rebuild(store: "sqlite:\(path)", arguments: [])
        let rebuilt = try SQLiteProjectionStore(path: path, logger: Logger(label: "test"))
        ScaleOutTests.assertSameDump(try await rebuilt.dump(), liveDump, "rebuilt vs live\n\(output)")
        await rebuilt.close()
    }
}
