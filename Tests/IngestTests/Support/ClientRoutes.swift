import Contracts
import Foundation
import Hummingbird
import HummingbirdTesting
import Projections
import XCTest

/// Paths, apps and helpers of the Bearer-authenticated client routes (send, BW, KF5).
extension Fixture {
    static let otherOrgId = UUID(uuidString: "7a2e3d4c-5b6a-4f8e-9d32-1b2c3d4e5f60")!
    static let androidToken = fcmToken
    static let appKey = appId.uuidString.lowercased()

    static func notifications(_ app: String = appId.uuidString) -> String { "/v1/apps/\(app)/notifications" }
    static func bw(_ path: String, app: String = appId.uuidString) -> String { "/bwmi/v1/apps/\(app)/\(path)" }
    static func kf5Tokens(_ app: String = appId.uuidString) -> String { "/kf5/v1/apps/\(app)/tokens" }
    static func tracking(_ app: String = appId.uuidString) -> String { "/v1/apps/\(app)/tracking" }
    static func delivery(_ id: String, app: String = appId.uuidString) -> String { "/v1/apps/\(app)/deliveries/\(id)" }
    static func deviceChanges(_ app: String = appId.uuidString) -> String { "/v1/apps/\(app)/devices/changes" }

    /// A BW device body as JSON.
    static func bwDevice(deviceId: String? = apnsToken, type: String? = "IOS",
                         phone: String? = "+19883999901", email: String? = "abc@yahoo.com") throws -> String {
        var user: [String: Any] = [:]
        if let phone { user["phone"] = phone }
        if let email { user["email"] = email }
        var body: [String: Any] = ["user": user]
        if let deviceId { body["deviceId"] = deviceId }
        if let type { body["type"] = type }
        return try json(body)
    }
}

/// One Bearer route with a body that it accepts (for the checks every route shares).
struct ClientRoute: Sendable {
    var method: HTTPRequest.Method
    /// The path for an app id (any text, to try malformed ones).
    var path: @Sendable (String) -> String
    var json: String?
    /// The status of a successful call.
    var success: HTTPResponse.Status

    var name: String { "\(method) \(path("{mobileAppId}"))" }
    /// Whether a call writes a command (the reads do not: the pending list, the audience count).
    var publishes: Bool { method != .get && !name.hasSuffix("/audiences/count") }

    /// Every Bearer route, each with a valid request.
    static func all() throws -> [ClientRoute] {
        [
            ClientRoute(method: .post, path: { Fixture.notifications($0) }, json: #"{"userId": "u1", "title": "Hi"}"#, success: .accepted),
            ClientRoute(method: .put, path: { Fixture.bw("devices", app: $0) }, json: try Fixture.bwDevice(), success: .created),
            ClientRoute(method: .delete, path: { Fixture.bw("devices", app: $0) }, json: try Fixture.bwDevice(), success: .ok),
            ClientRoute(method: .put, path: { Fixture.bw("acks", app: $0) },
                        json: #"{"nid": "0a1868e6-04c9-4d3b-8125-2f9597f68e78", "did": "\#(Fixture.apnsToken)"}"#, success: .created),
            ClientRoute(method: .get, path: { Fixture.bw("devices/\(Fixture.apnsToken)/notifications", app: $0) }, json: nil, success: .ok),
            ClientRoute(method: .post, path: { Fixture.kf5Tokens($0) },
                        json: #"{"userToken": "123", "deviceToken": "\#(Fixture.apnsToken)"}"#, success: .created),
            ClientRoute(method: .delete, path: { Fixture.kf5Tokens($0) },
                        json: #"{"userToken": "123", "deviceToken": "\#(Fixture.apnsToken)"}"#, success: .ok),
            ClientRoute(method: .post, path: { Fixture.tracking($0) },
                        json: #"{"deliveryId": "0a1868e6-04c9-4d3b-8125-2f9597f68e78", "broadlogId": "0-0123456789abcdef", "action": "7"}"#,
                        success: .accepted),
            ClientRoute(method: .post, path: { Fixture.deviceChanges($0) }, json: #"{"userId": "u1", "tags": {"add": ["vip"]}}"#,
                        success: .accepted),
            ClientRoute(method: .post, path: { Fixture.deviceChanges($0) + "/batch" },
                        json: #"{"changes": [{"userId": "u1", "locale": "pt-BR"}]}"#, success: .accepted),
            ClientRoute(method: .post, path: { "/v1/apps/\($0)/audiences/count" }, json: #"{"audience": "all"}"#, success: .ok),
        ]
    }
}

extension Harness {
    /// A harness whose store has the client apps (`seedClientApps`): the registration API's routes
    /// write only commands whose API token is a live token of their app.
    static func withClientApps() async -> Harness {
        let harness = Harness()
        await harness.seedClientApps()
        return harness
    }

    /// Seeds the app of `Fixture.appId` (token `Fixture.rawToken`) and another app of another org
    /// (token `Fixture.otherRawToken`); returns the first app's token id.
    @discardableResult
    func seedClientApps() async -> UUID {
        let tokenId = await seedApp()
        _ = await seedApp(Fixture.otherAppId, orgId: Fixture.otherOrgId, rawToken: Fixture.otherRawToken)
        return tokenId
    }
}

extension TestClientProtocol {
    /// Calls a Bearer route: `Authorization: Bearer <token>` (none when `token` is nil) and the
    /// JSON body, if any, as `application/json`.
    func bearer(_ method: HTTPRequest.Method, _ uri: String, json: String? = nil,
                token: String? = Fixture.rawToken) async throws -> TestResponse {
        var headers: HTTPFields = [:]
        if let token { headers[.authorization] = "Bearer \(token)" }
        if json != nil { headers[.contentType] = "application/json" }
        return try await execute(uri: uri, method: method, headers: headers, body: json.map { ByteBuffer(string: $0) })
    }

    func call(_ route: ClientRoute, app: String = Fixture.appId.uuidString, token: String? = Fixture.rawToken,
              headers extra: HTTPFields = [:]) async throws -> TestResponse {
        var headers = extra
        if let token, headers[.authorization] == nil { headers[.authorization] = "Bearer \(token)" }
        if route.json != nil { headers[.contentType] = "application/json" }
        return try await execute(uri: route.path(app), method: route.method, headers: headers,
                                 body: route.json.map { ByteBuffer(string: $0) })
    }
}

/// Asserts an empty answer with this status.
func assertEmpty(_ response: TestResponse, _ status: HTTPResponse.Status, file: StaticString = #filePath, line: UInt = #line) {
    XCTAssertEqual(response.status, status, String(buffer: response.body), file: file, line: line)
    XCTAssertEqual(response.body.readableBytes, 0, file: file, line: line)
}
