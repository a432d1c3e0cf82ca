import Contracts
import Foundation
import NIOHTTP1
import TestSupport
import XCTest

/// Verified user identity on the real stack (docs/API.md#verified-user-identity), played as an
/// attacker who holds only the app's client token (it ships in every copy of the app) and knows
/// the victim's user id and device token: with identity on, it cannot attach its device to the
/// victim, read the victim's pending list or clean up the victim's devices, in any dialect, even
/// with a valid assertion of its own user; with the victim's assertion each of these works.
final class UserIdentityFlowTests: XCTestCase {
    typealias API = DeviceRegistrationAPI
    private var stack: PushlineStack!

    override func tearDown() async throws {
        await stack?.stop()
    }

    func testWithIdentityOnTheClientTokenAloneCannotBindReadOrCleanUpAnotherUsersDevices() async throws {
        stack = try await PushlineStack.start(ingestEnvironment: ["PUSHLINE_SECRETS_KEY": TestPushKeys.secretsKey()])
        let app = try await stack.createApp()
        let appId = app.mobileAppId
        XCTAssertFalse(app.userIdentity.required)
        XCTAssertTrue(app.userIdentity.note.contains("any holder of the client token"), app.userIdentity.note)
        let shown = try await ProcessRunner.run(ServiceProcess.binDirectory.appendingPathComponent("pushline").path,
                                                ["apps", "show", appId.uuidString, "--ingest-url", stack.ingestURL],
                                                environment: ["PUSHLINE_ADMIN_TOKEN": stack.adminToken])
        XCTAssertTrue(shown.standardOutput.contains("NOT VERIFIED"), shown.standardOutput + shown.standardError)

        // The admin makes a secret and requires assertions.
        let made = try await HTTPClientHelpers.request(.POST, "\(stack.ingestURL)/admin/v1/apps/\(appId)/identity-secret",
                                                       headers: stack.adminHeaders)
        XCTAssertEqual(made.status, 201, made.text)
        let secret = try made.decode(AdminAPI.IdentitySecretAnswer.self).identitySecret
        let required = try await HTTPClientHelpers.request(.PUT, "\(stack.ingestURL)/admin/v1/apps/\(appId)/identity",
                                                           body: Data(#"{"required": true}"#.utf8), headers: stack.adminHeaders)
        XCTAssertEqual(required.status, 202, required.text)
        func assertion(_ user: String) -> String { UserIdentity.assertion(userId: user, secret: secret) }

        let victim = "victim-1", victimBW = "tel:+19883999901", attacker = "attacker-1"
        let victimDevice = Tokens.apns(1), victimBWDevice = Tokens.apns(2), attackerDevice = Tokens.apns(3)

        // The victim's own devices, registered with the victim's assertions, in two dialects.
        let own = try await register(app, user: victim, device: victimDevice, assertion: assertion(victim))
        XCTAssertEqual(own.status, 202, own.text)
        let ownBW = try await bw(.PUT, app, phone: "+1 988 399 9901", device: victimBWDevice, assertion: assertion(victimBW))
        XCTAssertEqual(ownBW.status, 201, ownBW.text)
        try await stack.waitForDevices(2, app: appId)

        // The attacker's device, as the victim: no assertion, or the attacker's own, in every dialect.
        for presented in [nil, assertion(attacker)] {
            let registration = try await register(app, user: victim, device: attackerDevice, assertion: presented)
            XCTAssertEqual(registration.status, 403, registration.text)
            XCTAssertEqual(try registration.decode(Problem.self).field, "UserAssertion")
            let byPhone = try await bw(.PUT, app, phone: "+19883999901", device: attackerDevice, assertion: presented)
            XCTAssertEqual(byPhone.status, 403, byPhone.text)
            let kf5 = try await stack.call(.POST, "/kf5/v1/apps/\(appId)/tokens", json: ["userToken": victim, "deviceToken": attackerDevice],
                                           token: app.clientToken, headers: presented.map { [UserIdentity.assertionHeader: $0] } ?? [:])
            XCTAssertEqual(kf5.status, 403, kf5.text)
        }
        // The attacker's own user is fine: an assertion proves that user, and only that one.
        let attackerOwn = try await register(app, user: attacker, device: attackerDevice, assertion: assertion(attacker))
        XCTAssertEqual(attackerOwn.status, 202, attackerOwn.text)
        try await stack.waitForDevices(3, app: appId)
        let victimDevices = try await stack.sqlite(
            "SELECT device_token FROM devices WHERE app_id = '\(appId.uuidString.lowercased())' AND user_id = '\(victim)'")
        XCTAssertEqual(victimDevices, [victimDevice], "the attacker's device never became the victim's")

        // The victim's pending list: a managed send to the victim, read by the attacker and by the victim.
        let deliveryId = try await stack.send(["userId": victim, "title": "Your code is 1234", "managed": true], app: app)
        let listPath = "/bwmi/v1/apps/\(appId)/devices/\(victimDevice)/notifications"
        var victimList: BWDeviceAPI.PendingList?
        try await eventually("the victim's notification is pending") {
            let read = try await self.stack.call(.GET, listPath, token: app.clientToken,
                                                 headers: [UserIdentity.userIdHeader: victim, UserIdentity.assertionHeader: assertion(victim)])
            victimList = read.status == 200 ? try read.decode(BWDeviceAPI.PendingList.self) : nil
            return victimList?.ns.isEmpty == false
        }
        XCTAssertEqual(victimList?.ns.first?.first, deliveryId.uuidString.lowercased())
        let bare = try await stack.call(.GET, listPath, token: app.clientToken)
        XCTAssertEqual(bare.status, 403, bare.text)
        let claimed = try await stack.call(.GET, listPath, token: app.clientToken,
                                           headers: [UserIdentity.userIdHeader: victim, UserIdentity.assertionHeader: assertion(attacker)])
        XCTAssertEqual(claimed.status, 403, claimed.text)
        let asItself = try await stack.call(.GET, listPath, token: app.clientToken,
                                            headers: [UserIdentity.userIdHeader: attacker, UserIdentity.assertionHeader: assertion(attacker)])
        XCTAssertEqual(asItself.status, 200, asItself.text)
        XCTAssertEqual(try asItself.decode(BWDeviceAPI.PendingList.self).ns, [], "another user's device has no list for the attacker")

        // Cleaning up the victim's devices: refused without the victim's assertion, in every dialect.
        for presented in [nil, assertion(attacker)] {
            let cleanup = try await HTTPClientHelpers.request(.POST, stack.registrationURL(org: app.orgId, "devices/cleanup"),
                                                              body: try JSONEncoder().encode(API.Cleanup(
                                                                MobileAppId: appId.uuidString, ApiToken: app.clientToken, UserId: victim,
                                                                UserAssertion: presented)))
            XCTAssertEqual(cleanup.status, 403, cleanup.text)
            let bwDelete = try await bw(.DELETE, app, phone: "+19883999901", device: victimBWDevice, assertion: presented)
            XCTAssertEqual(bwDelete.status, 403, bwDelete.text)
            let kf5Delete = try await stack.call(.DELETE, "/kf5/v1/apps/\(appId)/tokens", json: ["userToken": victim, "deviceToken": victimDevice],
                                                 token: app.clientToken, headers: presented.map { [UserIdentity.assertionHeader: $0] } ?? [:])
            XCTAssertEqual(kf5Delete.status, 403, kf5Delete.text)
        }
        // The attacker's own cleanup, applied after the refused ones, proves they were never written.
        let attackerCleanup = try await HTTPClientHelpers.post(stack.registrationURL(org: app.orgId, "devices/cleanup"), json: API.Cleanup(
            MobileAppId: appId.uuidString, ApiToken: app.clientToken, UserId: attacker, UserAssertion: assertion(attacker)))
        XCTAssertEqual(attackerCleanup.status, 202, attackerCleanup.text)
        try await stack.waitForDevices(2, app: appId)

        // With the victim's assertions, the victim's cleanups work.
        let victimCleanup = try await HTTPClientHelpers.post(stack.registrationURL(org: app.orgId, "devices/cleanup"), json: API.Cleanup(
            MobileAppId: appId.uuidString, ApiToken: app.clientToken, UserId: victim, UserAssertion: assertion(victim)))
        XCTAssertEqual(victimCleanup.status, 202, victimCleanup.text)
        let victimBWDelete = try await bw(.DELETE, app, phone: "+19883999901", device: victimBWDevice, assertion: assertion(victimBW))
        XCTAssertEqual(victimBWDelete.status, 200, victimBWDelete.text)
        try await stack.waitForDevices(0, app: appId)

        let view = try await HTTPClientHelpers.get("\(stack.ingestURL)/admin/v1/apps/\(appId)", headers: stack.adminHeaders)
        let identity = try view.decode(AdminAPI.AppView.self).userIdentity
        XCTAssertTrue(identity.required)
        XCTAssertTrue(identity.secretSet)
    }

    /// A registration API registration with the client token and, when given, a `UserAssertion`.
    private func register(_ app: AdminAPI.AppCreatedAnswer, user: String, device: String,
                          assertion: String?) async throws -> HTTPClientHelpers.Answer {
        try await HTTPClientHelpers.post(stack.registrationURL(org: app.orgId, "devices"), json: API.Registration(
            MobileAppId: app.mobileAppId.uuidString, UserId: user, ApiToken: app.clientToken, ApnsDeviceToken: device,
            UserAssertion: assertion))
    }

    /// A BW `PUT` or `DELETE /devices` with the client token and, when given, the assertion header.
    private func bw(_ method: HTTPMethod, _ app: AdminAPI.AppCreatedAnswer, phone: String, device: String,
                    assertion: String?) async throws -> HTTPClientHelpers.Answer {
        try await stack.call(method, "/bwmi/v1/apps/\(app.mobileAppId)/devices",
                             json: ["deviceId": device, "type": "IOS", "user": ["phone": phone]], token: app.clientToken,
                             headers: assertion.map { [UserIdentity.assertionHeader: $0] } ?? [:])
    }
}
