import Contracts
import Foundation
import Projections
import WireCodec
import XCTest
@testable import Processor
@testable import Handlers

/// Keyed admin creates (docs/API.md#idempotency-keys), decided in memory: the first creates and
/// remembers its key; a repeat of the key's id changes nothing, not even a revocation since.
final class AdminIdempotencyHandlerTests: XCTestCase {
    let at = Date(timeIntervalSince1970: 1_800_000_000)
    let stamp = IdempotencyStamp(scope: "admin:bootstrap:apps", key: "k", requestHash: "h1")

    private func keyRows(_ s: BatchState) -> [IdempotencyKeyRow] {
        s.mutations.compactMap { if case .putIdempotencyKey(let row) = $0 { row } else { nil } }
    }

    func testAKeyedCreateRemembersItsKeyAndARepeatChangesNothing() {
        let appId = IdempotencyKeys.resourceId(scope: stamp.scope, key: stamp.key)
        let create = AppCreated(orgId: UUID(), mobileAppId: appId, name: "Shop", tokenId: UUID(), tokenHash: "server",
                                tokenScopes: AppCreated.serverTokenScopes, clientTokenId: UUID(), clientTokenHash: "client", idempotency: stamp)
        var s = BatchState(StateSnapshot())
        XCTAssertEqual(AppCreatedHandler().apply(create, CommandContext(at: at), to: &s), .applied)
        XCTAssertEqual(keyRows(s), [IdempotencyKeyRow(scope: stamp.scope, key: "k", resourceId: appId, requestHash: "h1", firstAt: at)])
        XCTAssertEqual(s.tokens[AppPart(appId)]?.count, 2)

        // The server token revoked, then the create repeated (another body too): nothing changes.
        var serverToken = s.tokens[AppPart(appId)]!.first { $0.tokenId == create.tokenId }!
        serverToken.revoked = true
        s.upsert(serverToken)
        let before = s.mutations
        var repeated = create
        repeated.name = "Other"
        repeated.idempotency?.requestHash = "h2"
        XCTAssertEqual(AppCreatedHandler().apply(repeated, CommandContext(at: at.addingTimeInterval(5)), to: &s), .rejected("idempotent-repeat"))
        XCTAssertEqual(s.mutations, before)
        XCTAssertEqual(s.apps[AppPart(appId)]?.name, "Shop")
        XCTAssertEqual(s.tokens[AppPart(appId)]?.first { $0.tokenId == create.tokenId }?.revoked, true)
    }

    func testAKeyedTokenIssueRemembersItsKeyAndARepeatKeepsARevocation() {
        let appId = UUID()
        var snapshot = StateSnapshot()
        snapshot.apps[AppPart(appId)] = AppRow(appId: appId, orgId: UUID(), name: "a", createdAt: at)
        var s = BatchState(snapshot)
        let tokenStamp = IdempotencyStamp(scope: "admin:bootstrap:apps/\(appId.lowercasedString)/tokens", key: "k", requestHash: "h")
        let issue = ApiTokenIssued(mobileAppId: appId, tokenId: IdempotencyKeys.resourceId(scope: tokenStamp.scope, key: "k"),
                                   tokenHash: "t", scopes: [.server], idempotency: tokenStamp)
        XCTAssertEqual(ApiTokenIssuedHandler().apply(issue, CommandContext(at: at), to: &s), .applied)
        XCTAssertEqual(keyRows(s).map(\.resourceId), [issue.tokenId])
        XCTAssertEqual(ApiTokenRevokedHandler().apply(ApiTokenRevoked(mobileAppId: appId, tokenId: issue.tokenId), CommandContext(at: at), to: &s),
                       .applied)
        XCTAssertEqual(ApiTokenIssuedHandler().apply(issue, CommandContext(at: at), to: &s), .rejected("idempotent-repeat"))
        XCTAssertEqual(s.tokens[AppPart(appId)]?.first?.revoked, true)
        XCTAssertEqual(keyRows(s).count, 1)
    }
}
