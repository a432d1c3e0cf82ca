import Contracts
import Foundation
import TestSupport
import XCTest

/// Admin changes are commands too: issuing and revoking tokens changes what the processor
/// accepts, through the same topics and projections as everything else.
final class AdminTokenTests: XCTestCase {
    typealias API = DeviceRegistrationAPI

    func testARevokedTokenNoLongerRegistersAndANewlyIssuedOneDoes() async throws {
        let stack = try await PushlineStack.start()
        do {
            let app = try await stack.createApp()
            let appURL = "\(stack.ingestURL)/admin/v1/apps/\(app.mobileAppId)"
            let issued = try await HTTPClientHelpers.request(.POST, "\(appURL)/tokens", body: Data(#"{"scopes":["client","server"]}"#.utf8), headers: stack.adminHeaders)
            XCTAssertEqual(issued.status, 201, issued.text)
            let second = try issued.decode(AdminAPI.TokenIssuedAnswer.self)
            let revoked = try await HTTPClientHelpers.request(.DELETE, "\(appURL)/tokens/\(app.tokenId)", headers: stack.adminHeaders)
            XCTAssertEqual(revoked.status, 202, revoked.text)
            try await eventually("revocation projected") {
                let view = try await HTTPClientHelpers.get(appURL, headers: stack.adminHeaders).decode(AdminAPI.AppView.self)
                // The app's server and client tokens and the one issued.
                return view.tokens.count == 3 && view.tokens.contains { $0.tokenId == app.tokenId && $0.revoked }
            }
            var ids: [UUID] = []
            for token in [app.apiToken, second.apiToken] {
                let answer = try await HTTPClientHelpers.post(stack.registrationURL(org: app.orgId, "devices"), json: API.Registration(
                    MobileAppId: app.mobileAppId.uuidString, UserId: "same-user", ApiToken: token, ApnsDeviceToken: Tokens.apns(ids.count)),
                    headers: [API.trackRegistrationHeader: "true"])
                XCTAssertEqual(answer.status, 202)
                ids.append(try answer.decode(API.RegistrationAccepted.self).RegistrationRequestId)
            }
            // Same user: same partition, in order; once the second is decided the first was processed.
            _ = try await stack.decidedStatuses(org: app.orgId, app: app.mobileAppId, token: second.apiToken, ids: [ids[1]])
            let statuses = try await stack.statuses(org: app.orgId, app: app.mobileAppId, token: second.apiToken, ids: ids)
            XCTAssertEqual(statuses.map(\.Status), [.Pending, .Success])
        } catch {
            await stack.stop()
            throw error
        }
        await stack.stop()
    }
}
