import Contracts
import Foundation
import NIOHTTP1
import TestSupport
import WireCodec
import XCTest

/// Token scopes on the real stack (docs/API.md#token-scopes): the client token of a new app is
/// refused with a 403 naming the scope on every server route while the server token works
/// there; the client token works on every client route; a legacy token (an app created by an
/// old-shape `AppCreated` record, as earlier Pushline wrote it) works on both kinds and its use
/// of server routes is counted.
final class TokenScopeFlowTests: XCTestCase {
    typealias API = DeviceRegistrationAPI
    private var stack: PushlineStack!

    override func tearDown() async throws {
        await stack?.stop()
    }

    /// The server routes of an app, each as (method, path) for an existing delivery.
    private func serverRoutes(app: UUID, delivery: UUID) -> [(HTTPMethod, String, [String: Any]?)] {
        [(.POST, "/v1/apps/\(app)/notifications", ["userId": "u-1", "title": "Hi"]),
         (.GET, "/v1/apps/\(app)/deliveries/\(delivery)", nil),
         (.GET, "/v1/apps/\(app)/deliveries/\(delivery)/outcomes", nil)]
    }

    func testAClientTokenCannotUseServerRoutesAndCanUseEveryClientRoute() async throws {
        stack = try await PushlineStack.start()
        let app = try await stack.createApp()
        XCTAssertNotEqual(app.clientToken, app.apiToken)
        let appId = app.mobileAppId
        let device = Tokens.apns(1), kf5Device = Tokens.apns(2)

        // Client routes with the client token: registration API (tracked), BW, KF5.
        let registered = try await HTTPClientHelpers.post(stack.registrationURL(org: app.orgId, "devices"), json: API.Registration(
            MobileAppId: appId.uuidString, UserId: "u-1", ApiToken: app.clientToken, ApnsDeviceToken: device),
            headers: [API.trackRegistrationHeader: "true"])
        XCTAssertEqual(registered.status, 202, registered.text)
        let requestId = try registered.decode(API.RegistrationAccepted.self).RegistrationRequestId
        let statuses = try await stack.decidedStatuses(org: app.orgId, app: appId, token: app.clientToken, ids: [requestId])
        XCTAssertEqual(statuses.map(\.Status), [.Success])
        let bw = try await stack.call(.PUT, "/bwmi/v1/apps/\(appId)/devices", json: [
            "deviceId": Tokens.apns(3), "type": "IOS", "user": ["phone": "+1 988 399 9901"]], token: app.clientToken)
        XCTAssertEqual(bw.status, 201, bw.text)
        let kf5 = try await stack.call(.POST, "/kf5/v1/apps/\(appId)/tokens", json: ["userToken": "u-1", "deviceToken": kf5Device],
                                       token: app.clientToken)
        XCTAssertEqual(kf5.status, 201, kf5.text)
        try await stack.waitForDevices(3, app: appId)

        // Server routes: the client token gets 403 naming the scope on each, the server token works.
        let deliveryId = try await stack.send(["userId": "u-1", "title": "Hello", "managed": true], app: app)
        for (method, path, body) in serverRoutes(app: appId, delivery: deliveryId) {
            let refused = try await stack.call(method, path, json: body, token: app.clientToken)
            XCTAssertEqual(refused.status, 403, "\(method) \(path): \(refused.text)")
            let problem = try refused.decode(Problem.self)
            XCTAssertTrue(problem.error.contains(#"lacks the "server" scope"#), problem.error)
            XCTAssertEqual(problem.field, "Authorization")
        }
        try await eventually("the send applied") {
            try await self.stack.call(.GET, "/v1/apps/\(appId)/deliveries/\(deliveryId)", token: app.apiToken).status == 200
        }
        for (method, path, body) in serverRoutes(app: appId, delivery: deliveryId) {
            let answer = try await stack.call(method, path, json: body, token: app.apiToken)
            XCTAssertEqual(answer.status, method == .POST ? 202 : 200, "\(method) \(path): \(answer.text)")
        }

        // The rest of the client routes with the client token: pending list, ack, tracking, deletes, cleanup.
        let pending = try await stack.call(.GET, "/bwmi/v1/apps/\(appId)/devices/\(device)/notifications", token: app.clientToken)
        XCTAssertEqual(pending.status, 200, pending.text)
        let ack = try await stack.call(.PUT, "/bwmi/v1/apps/\(appId)/acks", json: ["nid": deliveryId.uuidString.lowercased(), "did": device],
                                       token: app.clientToken)
        XCTAssertEqual(ack.status, 201, ack.text)
        try await stack.track([["deliveryId": deliveryId.uuidString.lowercased(), "broadlogId": "0-0123456789abcdef", "action": "7"]],
                              app: app, token: app.clientToken)
        let bwDelete = try await stack.call(.DELETE, "/bwmi/v1/apps/\(appId)/devices", json: [
            "deviceId": Tokens.apns(3), "type": "IOS", "user": ["phone": "+1 988 399 9901"]], token: app.clientToken)
        XCTAssertEqual(bwDelete.status, 200, bwDelete.text)
        let kf5Delete = try await stack.call(.DELETE, "/kf5/v1/apps/\(appId)/tokens", json: ["userToken": "u-1", "deviceToken": kf5Device],
                                             token: app.clientToken)
        XCTAssertEqual(kf5Delete.status, 200, kf5Delete.text)
        let cleanup = try await HTTPClientHelpers.post(stack.registrationURL(org: app.orgId, "devices/cleanup"), json: API.Cleanup(
            MobileAppId: appId.uuidString, ApiToken: app.clientToken, UserId: "u-1"))
        XCTAssertEqual(cleanup.status, 202, cleanup.text)
        try await stack.waitForDevices(0, app: appId)

        // A server-only token is refused on the client routes, with the scope named.
        let issued = try await HTTPClientHelpers.post("\(stack.ingestURL)/admin/v1/apps/\(appId)/tokens",
                                                      json: AdminAPI.IssueToken(scopes: [.server]), headers: stack.adminHeaders)
        XCTAssertEqual(issued.status, 201, issued.text)
        let serverOnly = try issued.decode(AdminAPI.TokenIssuedAnswer.self).apiToken
        let refusedKF5 = try await stack.call(.POST, "/kf5/v1/apps/\(appId)/tokens", json: ["userToken": "u-2", "deviceToken": kf5Device],
                                              token: serverOnly)
        XCTAssertEqual(refusedKF5.status, 403, refusedKF5.text)
        XCTAssertTrue(try refusedKF5.decode(Problem.self).error.contains(#"lacks the "client" scope"#), refusedKF5.text)
        let refusedRegistration = try await HTTPClientHelpers.post(stack.registrationURL(org: app.orgId, "devices"), json: API.Registration(
            MobileAppId: appId.uuidString, UserId: "u-2", ApiToken: serverOnly, ApnsDeviceToken: Tokens.apns(4)))
        XCTAssertEqual(refusedRegistration.status, 403, refusedRegistration.text)
        XCTAssertEqual(try refusedRegistration.decode(Problem.self).field, "ApiToken")
        let sent = try await stack.call(.POST, "/v1/apps/\(appId)/notifications", json: ["userId": "u-2", "title": "x"], token: serverOnly)
        XCTAssertEqual(sent.status, 202, sent.text)
        let counted1 = try await legacyRequests()
        XCTAssertEqual(counted1, 0, "no legacy token was used")
    }

    func testALegacyTokenFromAnOldLogWorksOnBothKindsOfRouteAndIsCounted() async throws {
        stack = try await PushlineStack.start()
        // An app created by an earlier Pushline: the AppCreated record has no scopes and no client token.
        let legacyToken = ApiTokens.generate()
        let org = UUID(), appId = UUID(), tokenId = UUID()
        let old = AppCreated(orgId: org, mobileAppId: appId, name: "old app", tokenId: tokenId, tokenHash: ApiTokens.hash(legacyToken))
        let record = String(decoding: try WireJSON.encoder().encode(old), as: UTF8.self)
        XCTAssertFalse(record.contains("Scopes") || record.contains("clientToken"), "the record has the old shape: \(record)")
        try await stack.produce(old)
        var view: AdminAPI.AppView?
        try await eventually("the old app projected") {
            let answer = try await HTTPClientHelpers.get("\(self.stack.ingestURL)/admin/v1/apps/\(appId)", headers: self.stack.adminHeaders)
            view = answer.status == 200 ? try answer.decode(AdminAPI.AppView.self) : nil
            return view != nil
        }
        XCTAssertEqual(view?.tokens, [AdminAPI.TokenView(tokenId: tokenId, revoked: false, scopes: [.client, .server], legacy: true)])
        let shown = try await ProcessRunner.run(ServiceProcess.binDirectory.appendingPathComponent("pushline").path,
                                                ["apps", "show", appId.uuidString, "--ingest-url", stack.ingestURL],
                                                environment: ["PUSHLINE_ADMIN_TOKEN": stack.adminToken])
        XCTAssertEqual(shown.status, 0, shown.standardError)
        XCTAssertTrue(shown.standardOutput.contains("LEGACY"), shown.standardOutput)

        // Client routes: a KF5 registration and a registration API one.
        let kf5 = try await stack.call(.POST, "/kf5/v1/apps/\(appId)/tokens", json: ["userToken": "u-1", "deviceToken": Tokens.apns(1)],
                                       token: legacyToken)
        XCTAssertEqual(kf5.status, 201, kf5.text)
        let registered = try await HTTPClientHelpers.post(stack.registrationURL(org: org, "devices"), json: API.Registration(
            MobileAppId: appId.uuidString, UserId: "u-2", ApiToken: legacyToken, ApnsDeviceToken: Tokens.apns(2)),
            headers: [API.trackRegistrationHeader: "true"])
        XCTAssertEqual(registered.status, 202, registered.text)
        let requestId = try registered.decode(API.RegistrationAccepted.self).RegistrationRequestId
        let statuses = try await stack.decidedStatuses(org: org, app: appId, token: legacyToken, ids: [requestId])
        XCTAssertEqual(statuses.map(\.Status), [.Success])
        let counted2 = try await legacyRequests()
        XCTAssertEqual(counted2, 0, "client routes are not counted")

        // Server routes: each works, and each use is counted by route.
        let sent = try await stack.call(.POST, "/v1/apps/\(appId)/notifications", json: ["userId": "u-1", "title": "Hi"], token: legacyToken)
        XCTAssertEqual(sent.status, 202, sent.text)
        let deliveryId = try XCTUnwrap(UUID(uuidString: try sent.decode(NotificationAPI.SendAccepted.self).deliveryId))
        var reads = 0
        try await eventually("the send applied") {
            reads += 1
            return try await self.stack.call(.GET, "/v1/apps/\(appId)/deliveries/\(deliveryId)", token: legacyToken).status == 200
        }
        let outcomes = try await stack.call(.GET, "/v1/apps/\(appId)/deliveries/\(deliveryId)/outcomes", token: legacyToken)
        XCTAssertEqual(outcomes.status, 200, outcomes.text)
        let counted3 = try await legacyRequests("/v1/apps/{mobileAppId}/notifications")
        XCTAssertEqual(counted3, 1)
        let counted4 = try await legacyRequests("/v1/apps/{mobileAppId}/deliveries/{deliveryId}")
        XCTAssertEqual(counted4, Double(reads))
        let counted5 = try await legacyRequests("/v1/apps/{mobileAppId}/deliveries/{deliveryId}/outcomes")
        XCTAssertEqual(counted5, 1)
    }

    /// `pushline_ingest_legacy_token_requests_total` of one route, or of every route.
    private func legacyRequests(_ route: String? = nil) async throws -> Double {
        let text = try await HTTPClientHelpers.get("\(stack.ingestURL)/metrics").text
        var total = 0.0
        for line in text.split(separator: "\n") where line.hasPrefix("pushline_ingest_legacy_token_requests_total{") {
            if let route, !line.contains(#"route="\#(route)""#) { continue }
            total += Double(line.split(separator: " ").last ?? "") ?? 0
        }
        return total
    }
}
