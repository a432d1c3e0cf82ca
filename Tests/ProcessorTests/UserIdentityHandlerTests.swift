import Contracts
import Foundation
import Projections
import WireCodec
import XCTest
@testable import Processor
@testable import Handlers

/// Verified user identity in the processor (docs/API.md#verified-user-identity): the app's setting
/// and sealed secret are projected from `admin.user-identity-changed`, and a registration or
/// cleanup that ingest did not verify is refused once the app requires verification as of its
/// place in the log — also one written before the change and applied after it.
final class UserIdentityHandlerTests: XCTestCase {
    let org = UUID(), appId = UUID()
    let at = Date(timeIntervalSince1970: 1_800_000_000)
    let apns = String(repeating: "ab", count: 32)
    let sealed = SealedSecret(keyId: "k1", box: "box")

    private func newApp() -> BatchState {
        var s = BatchState(StateSnapshot())
        let c = AppCreated(orgId: org, mobileAppId: appId, name: "a", tokenId: UUID(), tokenHash: ApiTokens.hash("server"),
                           tokenScopes: AppCreated.serverTokenScopes, clientTokenId: UUID(), clientTokenHash: ApiTokens.hash("client"))
        XCTAssertEqual(AppCreatedHandler().apply(c, CommandContext(at: at), to: &s), .applied)
        return s
    }

    private func change(_ c: UserIdentityChanged, _ s: inout BatchState) -> HandlerResult {
        UserIdentityChangedHandler().apply(c, CommandContext(at: at), to: &s)
    }

    private func registration(user: String = "alice", verified: Bool? = nil) -> DeviceRegistrationRequested {
        DeviceRegistrationRequested(registrationRequestId: UUID(), orgId: org, mobileAppId: appId, userId: user, platform: .ios,
                                    deviceToken: apns, apiTokenHash: ApiTokens.hash("client"), trackStatus: true,
                                    callback: StatusCallback(url: "https://hooks.example.com/s", headers: [:], signature: "sig"),
                                    identityVerified: verified)
    }

    private func cleanup(user: String = "alice", device: String? = nil, verified: Bool? = nil) -> DeviceCleanupRequested {
        DeviceCleanupRequested(orgId: org, mobileAppId: appId, userId: user, deviceToken: device, apiTokenHash: ApiTokens.hash("client"),
                               identityVerified: verified)
    }

    func testTheSettingAndTheSealedSecretAreProjectedAndRequiringNeedsASecret() {
        var s = newApp()
        XCTAssertEqual(s.app(appId, part: 0)?.identityRequired, false, "a new app does not verify")
        XCTAssertEqual(change(UserIdentityChanged(mobileAppId: appId, required: true), &s), .rejected("no-identity-secret"))
        XCTAssertEqual(s.app(appId, part: 0)?.identityRequired, false)
        XCTAssertEqual(change(UserIdentityChanged(mobileAppId: appId, secret: sealed), &s), .applied)
        XCTAssertEqual(s.app(appId, part: 0)?.identitySecret, sealed)
        XCTAssertEqual(s.app(appId, part: 0)?.identityRequired, false, "a secret alone changes nothing else")
        XCTAssertEqual(change(UserIdentityChanged(mobileAppId: appId, required: true), &s), .applied)
        XCTAssertEqual(s.app(appId, part: 0)?.identityRequired, true)
        XCTAssertEqual(change(UserIdentityChanged(mobileAppId: appId, required: false), &s), .applied)
        XCTAssertEqual(s.app(appId, part: 0)?.identityRequired, false)
        XCTAssertEqual(s.app(appId, part: 0)?.identitySecret, sealed, "turning it off keeps the secret")
        XCTAssertEqual(change(UserIdentityChanged(mobileAppId: UUID(), secret: sealed), &s), .rejected("unknown-app"))
    }

    func testAnUnverifiedRegistrationIsRefusedWithoutATraceOnceTheAppRequiresVerification() {
        var s = newApp()
        let handler = RegistrationHandler(verifier: TokenFormatVerifier())
        // Written while the app did not require it, applied after the change: judged as of the log.
        _ = change(UserIdentityChanged(mobileAppId: appId, required: true, secret: sealed), &s)
        let before = s.mutations.count
        XCTAssertEqual(handler.apply(registration(), CommandContext(at: at), to: &s), .rejected("user-identity-not-verified"))
        XCTAssertEqual(s.mutations.count, before, "no device, no status, no webhook")
        XCTAssertNil(s.devices[DeviceKey(appId: appId, deviceToken: apns)])

        XCTAssertEqual(handler.apply(registration(verified: true), CommandContext(at: at), to: &s), .applied)
        XCTAssertEqual(s.devices[DeviceKey(appId: appId, deviceToken: apns)]?.userId, "alice")
    }

    func testWhileVerificationIsOffUnverifiedRegistrationsApplyAsBefore() {
        var s = newApp()
        _ = change(UserIdentityChanged(mobileAppId: appId, secret: sealed), &s)
        XCTAssertEqual(RegistrationHandler(verifier: TokenFormatVerifier()).apply(registration(), CommandContext(at: at), to: &s), .applied)
    }

    func testAnUnverifiedCleanupIsRefusedOnceTheAppRequiresVerification() {
        var s = newApp()
        XCTAssertEqual(RegistrationHandler(verifier: TokenFormatVerifier()).apply(registration(), CommandContext(at: at), to: &s), .applied)
        _ = change(UserIdentityChanged(mobileAppId: appId, required: true, secret: sealed), &s)
        let key = DeviceKey(appId: appId, deviceToken: apns)
        for attempt in [cleanup(), cleanup(device: apns)] {
            XCTAssertEqual(CleanupHandler().apply(attempt, CommandContext(at: at), to: &s), .rejected("user-identity-not-verified"))
            XCTAssertNotNil(s.devices[key], "the device stays")
        }
        XCTAssertEqual(CleanupHandler().apply(cleanup(verified: true), CommandContext(at: at), to: &s), .applied)
        XCTAssertNil(s.devices[key])
    }

    func testTheAuditTrailNamesTheSealingKeyNeverTheSeal() throws {
        let changes = AuditTrail.json(UserIdentityChanged(mobileAppId: appId, required: true, secret: sealed).auditedChanges)
        XCTAssertEqual(changes, #"{"identityRequired":true,"identitySecret":{"sealedWith":"k1"}}"#)
        XCTAssertFalse(changes.contains("box"))
    }
}
