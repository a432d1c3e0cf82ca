import Contracts
import Foundation
import Projections
import WireCodec
import XCTest
@testable import Processor
@testable import Handlers

/// Token scopes in the processor (docs/API.md#token-scopes): the admin commands record each
/// token's scopes (none for records from before scopes: legacy), and registrations and cleanups
/// need the client scope as of their place in the log.
final class TokenScopeHandlerTests: XCTestCase {
    let org = UUID(), appId = UUID()
    let at = Date(timeIntervalSince1970: 1_800_000_000)
    let apns = String(repeating: "ab", count: 32)

    private func created(_ c: AppCreated) -> BatchState {
        var s = BatchState(StateSnapshot())
        XCTAssertEqual(AppCreatedHandler().apply(c, CommandContext(at: at), to: &s), .applied)
        return s
    }

    private func newApp() -> (AppCreated, BatchState) {
        let c = AppCreated(orgId: org, mobileAppId: appId, name: "a", tokenId: UUID(), tokenHash: ApiTokens.hash("server"),
                           tokenScopes: AppCreated.serverTokenScopes, clientTokenId: UUID(), clientTokenHash: ApiTokens.hash("client"))
        return (c, created(c))
    }

    private func issue(_ raw: String, scopes: [ApiTokenScope]?, to s: inout BatchState) {
        let c = ApiTokenIssued(mobileAppId: appId, tokenId: UUID(), tokenHash: ApiTokens.hash(raw), scopes: scopes)
        XCTAssertEqual(ApiTokenIssuedHandler().apply(c, CommandContext(at: at), to: &s), .applied)
    }

    private func registration(_ raw: String) -> DeviceRegistrationRequested {
        DeviceRegistrationRequested(registrationRequestId: UUID(), orgId: org, mobileAppId: appId, userId: "u", platform: .ios,
                                    deviceToken: apns, apiTokenHash: ApiTokens.hash(raw), trackStatus: true, callback: nil)
    }

    func testANewAppHasAServerTokenAndAClientToken() throws {
        let (c, s) = newApp()
        let tokens = try XCTUnwrap(s.tokens[AppPart(appId)])
        XCTAssertEqual(tokens.map(\.tokenId), [c.tokenId, try XCTUnwrap(c.clientTokenId)])
        XCTAssertEqual(tokens.map(\.scopes), [[.client, .server], [.client]])
        XCTAssertEqual(tokens.map(\.isLegacy), [false, false])
    }

    func testAnAppCreatedRecordFromBeforeScopesHasOneLegacyToken() throws {
        let json = #"{"orgId":"\#(org.lowercasedString)","mobileAppId":"\#(appId.lowercasedString)","name":"a","tokenId":"\#(UUID().lowercasedString)","tokenHash":"h"}"#
        let old = try WireJSON.decoder().decode(AppCreated.self, from: Data(json.utf8))
        XCTAssertNil(old.tokenScopes)
        XCTAssertNil(old.clientTokenId)
        let s = created(old)
        XCTAssertEqual(s.tokens[AppPart(appId)]?.count, 1)
        XCTAssertEqual(s.tokens[AppPart(appId)]?.first?.isLegacy, true)
        XCTAssertEqual(s.tokens[AppPart(appId)]?.first?.grants(.server), true)
        XCTAssertEqual(s.tokens[AppPart(appId)]?.first?.grants(.client), true)
        // And its encoding leaves the new fields out, as before.
        let encoded = String(decoding: try WireJSON.encoder().encode(old), as: UTF8.self)
        XCTAssertFalse(encoded.contains("client"), encoded)
        XCTAssertFalse(encoded.contains("Scopes"), encoded)
    }

    func testAnApiTokenIssuedRecordFromBeforeScopesIsLegacy() throws {
        let json = #"{"mobileAppId":"\#(appId.lowercasedString)","tokenId":"\#(UUID().lowercasedString)","tokenHash":"h"}"#
        let old = try WireJSON.decoder().decode(ApiTokenIssued.self, from: Data(json.utf8))
        XCTAssertNil(old.scopes)
        var (_, s) = newApp()
        XCTAssertEqual(ApiTokenIssuedHandler().apply(old, CommandContext(at: at), to: &s), .applied)
        XCTAssertEqual(s.tokens[AppPart(appId)]?.last?.isLegacy, true)
    }

    func testAuthorizationNeedsTheScopeAndLegacyTokensHaveEvery() {
        var (_, s) = newApp()
        issue("server-only", scopes: [.server], to: &s)
        issue("legacy", scopes: nil, to: &s)
        for (raw, client, server) in [("client", true, false), ("server", true, true), ("server-only", false, true),
                                      ("legacy", true, true)] {
            XCTAssertEqual(s.authorizes(app: appId, part: 0, org: org, tokenHash: ApiTokens.hash(raw), scope: .client), client, raw)
            XCTAssertEqual(s.authorizes(app: appId, part: 0, org: org, tokenHash: ApiTokens.hash(raw), scope: .server), server, raw)
        }
        XCTAssertEqual(s.authorization(app: appId, part: 0, org: org, tokenHash: ApiTokens.hash("server-only"), scope: .client), .lacksScope)
        XCTAssertEqual(s.authorization(app: appId, part: 0, org: org, tokenHash: ApiTokens.hash("forged"), scope: .client), .invalid)
        XCTAssertEqual(s.authorization(app: appId, part: 0, org: UUID(), tokenHash: ApiTokens.hash("client"), scope: .client), .invalid)
    }

    func testARegistrationOrCleanupWithAServerOnlyTokenLeavesNoTrace() {
        var (_, s) = newApp()
        issue("server-only", scopes: [.server], to: &s)
        let before = s.mutations.count
        let handler = RegistrationHandler(verifier: TokenFormatVerifier())
        XCTAssertEqual(handler.apply(registration("server-only"), CommandContext(at: at), to: &s), .rejected("missing-client-scope"))
        let cleanup = DeviceCleanupRequested(orgId: org, mobileAppId: appId, userId: "u", deviceToken: nil,
                                             apiTokenHash: ApiTokens.hash("server-only"))
        XCTAssertEqual(CleanupHandler().apply(cleanup, CommandContext(at: at), to: &s), .rejected("missing-client-scope"))
        XCTAssertEqual(s.mutations.count, before, "no status, no device, no webhook")
    }

    func testRegistrationsWithClientServerAndLegacyTokensApply() {
        var (_, s) = newApp()
        issue("legacy", scopes: nil, to: &s)
        let handler = RegistrationHandler(verifier: TokenFormatVerifier())
        XCTAssertEqual(handler.apply(registration("client"), CommandContext(at: at), to: &s), .applied)
        for raw in ["server", "legacy"] {
            // The same (user, device) again: decided, so authorized.
            XCTAssertEqual(handler.apply(registration(raw), CommandContext(at: at), to: &s), .rejected("DuplicateExists"), raw)
        }
    }
}
