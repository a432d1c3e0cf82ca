import Contracts
import Crypto
import Foundation
import Hummingbird
import HummingbirdTesting
import Projections
import TestSupport
import WireCodec
import XCTest
@testable import Ingest

/// `Idempotency-Key` on the admin creates (docs/API.md#idempotency-keys): a retried create of an
/// app or a token names the same one and shows the same raw tokens, derived for the caller's admin
/// token under a key only the server holds; another body with an applied key is a 422; keys of
/// different admin tokens never meet.
final class AdminIdempotencyTests: XCTestCase {
    private let body = #"{"orgId": "6f1d2c3b-4a59-4e7d-8c21-0a1b2c3d4e5f", "name": "Shop"}"#

    private func post(_ uri: String, json: String, key: String?, token: String = Fixture.adminToken,
                      harness: Harness) async throws -> TestResponse {
        try await harness.test { client in
            var headers: HTTPFields = [.authorization: "Bearer \(token)", .contentType: "application/json"]
            if let key { headers[.idempotencyKey] = key }
            return try await client.execute(uri: uri, method: .post, headers: headers, body: ByteBuffer(string: json))
        }
    }

    /// The store as the processor leaves it after applying `command` (the harness has no processor).
    private func apply(_ command: AppCreated, body: String, to harness: Harness) async {
        await harness.store.seed(app: AppRow(appId: command.mobileAppId, orgId: command.orgId, name: command.name, createdAt: Date()))
        await harness.store.seed(token: ApiTokenRow(tokenId: command.tokenId, appId: command.mobileAppId, tokenHash: command.tokenHash,
                                                    createdAt: Date(), scopes: command.tokenScopes))
        await harness.store.seed(token: ApiTokenRow(tokenId: command.clientTokenId!, appId: command.mobileAppId,
                                                    tokenHash: command.clientTokenHash!, createdAt: Date(), scopes: [.client]))
        let stamp = command.idempotency!
        await harness.store.seed(idempotencyKey: IdempotencyKeyRow(scope: stamp.scope, key: stamp.key, resourceId: command.mobileAppId,
                                                                   requestHash: stamp.requestHash, firstAt: Date()))
    }

    func testAKeyedCreateIsTheKeysAppWithTokensThatARetryGetsAgain() async throws {
        let harness = Harness.keyed()
        let first = try await post("/admin/v1/apps", json: body, key: "create-shop", harness: harness)
        XCTAssertEqual(first.status, .created, String(buffer: first.body))
        let answer = try decodeBody(AdminAPI.AppCreatedAnswer.self, first)
        let command = try await harness.onlyPublished(AppCreated.self)
        XCTAssertEqual(command.mobileAppId, IdempotencyKeys.resourceId(scope: "admin:bootstrap:apps", key: "create-shop"))
        XCTAssertEqual(command.idempotency, IdempotencyStamp(scope: "admin:bootstrap:apps", key: "create-shop",
                                                             requestHash: IdempotencyKeys.requestHash(Array(body.utf8))))
        XCTAssertEqual(command.tokenHash, ApiTokens.hash(answer.apiToken))
        XCTAssertEqual(command.clientTokenHash, ApiTokens.hash(answer.clientToken))
        XCTAssertNotEqual(answer.apiToken, answer.clientToken)

        // Before the first is applied, a retry is written again, naming the same app and tokens.
        let early = try decodeBody(AdminAPI.AppCreatedAnswer.self, try await post("/admin/v1/apps", json: body, key: "create-shop", harness: harness))
        XCTAssertEqual(early, answer)
        // Once it is applied, a retry is answered from the store, with nothing written.
        let commands = try await harness.published(AppCreated.self)
        XCTAssertEqual(commands.map(\.mobileAppId), [command.mobileAppId, command.mobileAppId])
        await apply(command, body: body, to: harness)
        let replay = try await post("/admin/v1/apps", json: body, key: "create-shop", harness: harness)
        XCTAssertEqual(replay.headers[.idempotentReplayed], "true")
        XCTAssertEqual(try decodeBody(AdminAPI.AppCreatedAnswer.self, replay), answer)
        let after = try await harness.published(AppCreated.self)
        XCTAssertEqual(after.count, 2)
        // Another body with the key is a 422; another admin token's key is another app.
        let other = try await post("/admin/v1/apps", json: #"{"name": "Other"}"#, key: "create-shop", harness: harness)
        try assertProblem(other, .unprocessableContent, field: "Idempotency-Key", code: .idempotencyKeyReused)
    }

    func testARetryWithAnotherAdminTokenOfTheSameActorCannotSeeTheTokens() async throws {
        var harness = Harness.keyed()
        let first = try await post("/admin/v1/apps", json: body, key: "k", harness: harness)
        XCTAssertEqual(first.status, .created)
        await apply(try await harness.onlyPublished(AppCreated.self), body: body, to: harness)
        harness.configuration.adminToken = "a-rotated-bootstrap-token"
        let retry = try await post("/admin/v1/apps", json: body, key: "k", token: "a-rotated-bootstrap-token", harness: harness)
        XCTAssertEqual(retry.status, .conflict, String(buffer: retry.body))
        XCTAssertFalse(String(buffer: retry.body).contains("apiToken"))
    }

    func testAKeyedTokenIssueIsTheKeysTokenAndARetryGetsItAgain() async throws {
        let harness = Harness.keyed()
        _ = await harness.seedApp()
        let uri = "/admin/v1/apps/\(Fixture.appId)/tokens"
        let scopes = #"{"scopes": ["server"]}"#
        let first = try await post(uri, json: scopes, key: "issue-1", harness: harness)
        XCTAssertEqual(first.status, .created, String(buffer: first.body))
        let answer = try decodeBody(AdminAPI.TokenIssuedAnswer.self, first)
        let command = try await harness.onlyPublished(ApiTokenIssued.self)
        let scope = "admin:bootstrap:apps/\(Fixture.appId.lowercasedString)/tokens"
        XCTAssertEqual(command.tokenId, IdempotencyKeys.resourceId(scope: scope, key: "issue-1"))
        XCTAssertEqual(command.tokenHash, ApiTokens.hash(answer.apiToken))
        XCTAssertEqual(command.idempotency?.scope, scope)

        await harness.store.seed(token: ApiTokenRow(tokenId: command.tokenId, appId: Fixture.appId, tokenHash: command.tokenHash,
                                                    createdAt: Date(), scopes: [.server]))
        await harness.store.seed(idempotencyKey: IdempotencyKeyRow(scope: scope, key: "issue-1", resourceId: command.tokenId,
                                                                   requestHash: command.idempotency!.requestHash, firstAt: Date()))
        let replay = try await post(uri, json: scopes, key: "issue-1", harness: harness)
        XCTAssertEqual(replay.headers[.idempotentReplayed], "true")
        XCTAssertEqual(try decodeBody(AdminAPI.TokenIssuedAnswer.self, replay), answer)
        let conflict = try await post(uri, json: #"{"scopes": ["client"]}"#, key: "issue-1", harness: harness)
        XCTAssertEqual(conflict.status, .unprocessableContent)
        let published = try await harness.published(ApiTokenIssued.self)
        XCTAssertEqual(published.count, 1)
    }

    func testARevokedAdminTokenDerivesNothingOfTheTokensItCreated() async throws {
        let harness = Harness.keyed()
        _ = await harness.seedApp()
        let adminTokenId = UUID()
        await harness.store.seed(adminToken: AdminTokenRow(adminTokenId: adminTokenId, name: "ci", tokenHash: ApiTokens.hash(namedAdmin),
                                                           createdAt: Date()))
        let uri = "/admin/v1/apps/\(Fixture.appId)/tokens"
        let first = try await post(uri, json: #"{"scopes": ["server"]}"#, key: "issue-1", token: namedAdmin, harness: harness)
        XCTAssertEqual(first.status, .created, String(buffer: first.body))
        let issued = try decodeBody(AdminAPI.TokenIssuedAnswer.self, first)

        // The token id is public (audit log, admin topic, GET answers), and the admin token was
        // the whole key before: neither alone, nor together, gives the raw token now.
        XCTAssertNotEqual(issued.apiToken, Self.hmac(key: Data(namedAdmin.utf8), "pushline api token\n\(issued.tokenId.lowercasedString)"))
        XCTAssertNotEqual(issued.apiToken, Self.hmac(key: Data(namedAdmin.utf8),
                                                     "pushline api token\n\(issued.tokenId.lowercasedString)\n\(ApiTokens.hash(namedAdmin))"))
        // It is derived with a key only the server holds: another deployment key derives another.
        let serverKey = try XCTUnwrap(SecretsKeyring(current: Fixture.secretsKey).derivedKey(purpose: IdempotencyKeys.tokenKeyPurpose))
        XCTAssertEqual(issued.apiToken, IdempotencyKeys.derivedToken(key: serverKey, tokenId: issued.tokenId,
                                                                      callerDigest: ApiTokens.hash(namedAdmin)))
        let otherKey = try XCTUnwrap(SecretsKeyring(current: TestPushKeys.secretsKey()).derivedKey(purpose: IdempotencyKeys.tokenKeyPurpose))
        XCTAssertNotEqual(issued.apiToken, IdempotencyKeys.derivedToken(key: otherKey, tokenId: issued.tokenId,
                                                                         callerDigest: ApiTokens.hash(namedAdmin)))

        // Revoked, the admin token cannot retry its create to be shown the token again.
        await harness.store.revoke(adminTokenId: adminTokenId)
        let retry = try await post(uri, json: #"{"scopes": ["server"]}"#, key: "issue-1", token: namedAdmin, harness: harness)
        XCTAssertEqual(retry.status, .unauthorized)
        XCTAssertFalse(String(buffer: retry.body).contains(issued.apiToken))
    }

    private let namedAdmin = "named-admin-token-of-the-ci-job-0123456789"

    private static func hmac(key: Data, _ message: String) -> String {
        ApiTokens.base64url(Data(HMAC<SHA256>.authenticationCode(for: Data(message.utf8), using: SymmetricKey(data: key))))
    }

    func testAKeyPastItsWindowCreatesTheNextApp() async throws {
        let harness = Harness.keyed()
        let scope = "admin:bootstrap:apps"
        let old = IdempotencyKeys.resourceId(scope: scope, key: "k")
        await harness.store.seed(idempotencyKey: IdempotencyKeyRow(scope: scope, key: "k", resourceId: old, requestHash: "whatever",
                                                                   firstAt: Date().addingTimeInterval(-25 * 3600)))
        let response = try await post("/admin/v1/apps", json: body, key: "k", harness: harness)
        XCTAssertEqual(response.status, .created)
        let command = try await harness.onlyPublished(AppCreated.self)
        XCTAssertEqual(command.mobileAppId, IdempotencyKeys.nextId(after: old, key: "k"))
    }
}
