import Contracts
import Foundation
import Hummingbird
import HummingbirdTesting
import Ingest
import Projections
import XCTest

/// The admin API: bearer-guarded, publishes admin commands, reads apps from the store.
final class AdminAPITests: XCTestCase {
    func testEveryAdminRouteRequiresTheAdminBearerToken() async throws {
        let harness = Harness()
        let tokenId = await harness.seedApp()
        // Every admin route of the route table, its parameters filled in: a route added later is
        // covered without a line here.
        let parameters = ["{mobileAppId}": Fixture.appId.uuidString, "{tokenId}": "\(tokenId)", "{provider}": "apns",
                          "{adminTokenId}": UUID().uuidString]
        let routes: [(HTTPRequest.Method, String, String?)] = RouteScopes.table.filter { $0.value == .admin }.keys
            .sorted { ($0.path, $0.method.rawValue) < ($1.path, $1.method.rawValue) }
            .map { route in
                let uri = parameters.reduce(route.path) { $0.replacingOccurrences(of: $1.key, with: $1.value) }
                return (route.method, uri, [.post, .put, .patch].contains(route.method) ? "{}" : nil)
            }
        XCTAssertFalse(routes.contains { $0.1.contains("{") }, "every parameter is filled in")
        XCTAssertGreaterThanOrEqual(routes.count, 16)
        // One application per route: four refusals each stay within the failures one address may
        // make (`AdminAuthMiddleware.failureLimit`, tested in AdminTokenAPITests).
        for (method, uri, json) in routes {
            try await harness.test { client in
                let missing = try await client.execute(uri: uri, method: method, headers: json == nil ? [:] : [.contentType: "application/json"],
                                                       body: json.map { ByteBuffer(string: $0) })
                try assertProblem(missing, .unauthorized, field: "Authorization")
                XCTAssertEqual(missing.headers[.wwwAuthenticate], "Bearer")
                try assertProblem(try await client.admin(method, uri, json: json, token: "wrong"), .unauthorized, field: "Authorization")
                try assertProblem(try await client.admin(method, uri, json: json, token: Fixture.adminToken + "x"),
                                  .unauthorized, field: "Authorization")
                let basic = try await client.execute(uri: uri, method: method,
                                                     headers: [.authorization: "Basic \(Fixture.adminToken)"])
                try assertProblem(basic, .unauthorized, field: "Authorization")
            }
        }
        await assertNothingPublished(harness.publisher)
    }

    func testEmptyConfiguredAdminTokenAdmitsNoOne() async throws {
        var harness = Harness()
        harness.configuration.adminToken = ""
        let response = try await harness.test { client in
            try await client.execute(uri: "/admin/v1/apps", method: .post,
                                     headers: [.authorization: "Bearer ", .contentType: "application/json"],
                                     body: ByteBuffer(string: #"{"name": "x"}"#))
        }
        try assertProblem(response, .unauthorized, field: "Authorization")
    }

    func testCreatingAnAppPublishesAppCreatedAndShowsTheTokenOnce() async throws {
        let harness = Harness()
        let response = try await harness.test { client in
            try await client.admin(.post, "/admin/v1/apps", json: #"{"orgId": "\#(Fixture.orgId)", "name": "Shop"}"#)
        }
        XCTAssertEqual(response.status, .created)
        XCTAssertEqual(response.headers[.cacheControl], "no-store")
        let answer = try decodeBody(AdminAPI.AppCreatedAnswer.self, response)
        let command = try await harness.onlyPublished(AppCreated.self)
        XCTAssertEqual(command.orgId, Fixture.orgId)
        XCTAssertEqual(answer.orgId, Fixture.orgId)
        XCTAssertEqual(command.mobileAppId, answer.mobileAppId)
        XCTAssertEqual(command.tokenId, answer.tokenId)
        XCTAssertEqual(command.name, "Shop")
        XCTAssertEqual(command.tokenHash, ApiTokens.hash(answer.apiToken))
        XCTAssertGreaterThanOrEqual(answer.apiToken.utf8.count, 43, "32 random bytes in base64url")
        let encoded = await harness.publisher.commands
        XCTAssertEqual(encoded.map(\.topic), ["pushline.commands.admin"])
        XCTAssertNil(String(decoding: encoded[0].value, as: UTF8.self).range(of: answer.apiToken))
        // The second token: the client token that ships in the app.
        XCTAssertEqual(command.tokenScopes, [.client, .server])
        XCTAssertEqual(answer.apiTokenScopes, [.client, .server])
        XCTAssertEqual(command.clientTokenId, answer.clientTokenId)
        XCTAssertEqual(command.clientTokenHash, ApiTokens.hash(answer.clientToken))
        XCTAssertEqual(answer.clientTokenScopes, [.client])
        XCTAssertNotEqual(answer.clientToken, answer.apiToken)
        XCTAssertNotEqual(answer.clientTokenId, answer.tokenId)
        XCTAssertTrue(answer.note.contains("clientToken ships inside the mobile app"), answer.note)
        XCTAssertNil(String(decoding: encoded[0].value, as: UTF8.self).range(of: answer.clientToken))
    }

    func testAppViewsMarkLegacyTokensAndShowEachTokensScopes() async throws {
        let harness = Harness()
        let legacy = await harness.seedApp()
        let client = await harness.seedToken(rawToken: "c", scopes: [.client])
        let server = await harness.seedToken(rawToken: "s", revoked: true, scopes: [.server])
        let view = try await harness.test { client in
            try decodeBody(AdminAPI.AppView.self, try await client.admin(.get, "/admin/v1/apps/\(Fixture.appId)"))
        }
        XCTAssertEqual(view.tokens, [
            AdminAPI.TokenView(tokenId: legacy, revoked: false, scopes: [.client, .server], legacy: true),
            AdminAPI.TokenView(tokenId: client, revoked: false, scopes: [.client], legacy: false),
            AdminAPI.TokenView(tokenId: server, revoked: true, scopes: [.server], legacy: false),
        ])
    }

    func testCreatingAnAppWithoutOrgMakesANewOrg() async throws {
        let harness = Harness()
        let answers = try await harness.test { client in
            [try await client.admin(.post, "/admin/v1/apps", json: #"{"name": "a"}"#),
             try await client.admin(.post, "/admin/v1/apps", json: #"{"name": "b"}"#)]
        }
        let decoded = try answers.map { try decodeBody(AdminAPI.AppCreatedAnswer.self, $0) }
        let commands = try await harness.published(AppCreated.self)
        XCTAssertEqual(commands.map(\.orgId), decoded.map(\.orgId))
        XCTAssertNotEqual(decoded[0].orgId, decoded[1].orgId)
        XCTAssertNotEqual(decoded[0].apiToken, decoded[1].apiToken)
    }

    func testCreatingAnAppValidatesItsBody() async throws {
        let harness = Harness()
        try await harness.test { client in
            try assertProblem(try await client.admin(.post, "/admin/v1/apps", json: #"{}"#), .badRequest, field: "name")
            try assertProblem(try await client.admin(.post, "/admin/v1/apps", json: #"{"name": "  "}"#), .badRequest, field: "name")
            try assertProblem(try await client.admin(.post, "/admin/v1/apps", json: #"{"name": "x", "orgId": "acme"}"#),
                              .badRequest, field: "orgId")
            try assertProblem(try await client.admin(.post, "/admin/v1/apps", json: #"{"name": "#), .badRequest, field: "body")
        }
        await assertNothingPublished(harness.publisher)
    }

    /// The admin API's bodies take only the fields they list (`ListedFields`): any other is a 400
    /// naming it, checked before the fields' values, and nothing is written (the credentials'
    /// bodies: PushCredentialsAPITests).
    func testEveryAdminBodyRefusesAFieldItDoesNotList() async throws {
        let harness = Harness()
        _ = await harness.seedApp()
        let app = "/admin/v1/apps/\(Fixture.appId)"
        let cases: [(HTTPRequest.Method, String, String, String)] = [
            (.post, "/admin/v1/apps", #"{"name": "Shop", "colour": "red"}"#, "colour"),
            (.patch, app, #"{"nmae": "Shop"}"#, "nmae"),
            (.post, app + "/tokens", #"{"scopes": ["server"], "expiresIn": 60}"#, "expiresIn"),
            (.put, app + "/identity", #"{"required": true, "secret": "s"}"#, "secret"),
            (.post, "/admin/v1/admin-tokens", #"{"name": "ops", "scopes": ["all"]}"#, "scopes"),
        ]
        try await harness.test { client in
            for (method, uri, json, field) in cases {
                try assertProblem(try await client.admin(method, uri, json: json), .badRequest, field: field, code: .fieldUnknown)
            }
        }
        await assertNothingPublished(harness.publisher)
    }

    func testIssuingATokenPublishesApiTokenIssued() async throws {
        let harness = Harness()
        _ = await harness.seedApp()
        let response = try await harness.test { client in
            try await client.admin(.post, "/admin/v1/apps/\(Fixture.appId)/tokens", json: #"{"scopes": ["server", "client", "server"]}"#)
        }
        XCTAssertEqual(response.status, .created)
        let answer = try decodeBody(AdminAPI.TokenIssuedAnswer.self, response)
        XCTAssertEqual(answer.scopes, [.client, .server], "each once, sorted")
        let command = try await harness.onlyPublished(ApiTokenIssued.self)
        XCTAssertEqual(command, ApiTokenIssued(mobileAppId: Fixture.appId, tokenId: answer.tokenId,
                                               tokenHash: ApiTokens.hash(answer.apiToken), scopes: [.client, .server], actor: .bootstrap,
                                               requestId: command.requestId))
        XCTAssertNotNil(command.requestId)
    }

    func testIssuingATokenNeedsItsScopes() async throws {
        let harness = Harness()
        _ = await harness.seedApp()
        let uri = "/admin/v1/apps/\(Fixture.appId)/tokens"
        try await harness.test { client in
            try assertProblem(try await client.admin(.post, uri), .badRequest, field: "scopes", code: .fieldMissing)
            try assertProblem(try await client.admin(.post, uri, json: "{}"), .badRequest, field: "scopes", code: .fieldMissing)
            try assertProblem(try await client.admin(.post, uri, json: #"{"scopes": []}"#), .badRequest, field: "scopes", code: .fieldMissing)
            try assertProblem(try await client.admin(.post, uri, json: #"{"scopes": ["client", "admin"]}"#),
                              .badRequest, field: "scopes[1]", code: .fieldInvalid)
            let scoped = try await client.admin(.post, uri, json: #"{"scopes": ["client"]}"#)
            XCTAssertEqual(try decodeBody(AdminAPI.TokenIssuedAnswer.self, scoped).scopes, [.client])
        }
        let commands = try await harness.published(ApiTokenIssued.self)
        XCTAssertEqual(commands.map(\.scopes), [[.client]], "only the valid request wrote a command")
    }

    func testIssuingATokenForAnUnknownAppIs404() async throws {
        let harness = Harness()
        let response = try await harness.test { client in
            try await client.admin(.post, "/admin/v1/apps/\(UUID())/tokens", json: #"{"scopes": ["server"]}"#)
        }
        try assertProblem(response, .notFound, field: "mobileAppId")
        await assertNothingPublished(harness.publisher)
    }

    func testRevokingATokenPublishesApiTokenRevoked() async throws {
        let harness = Harness()
        let tokenId = await harness.seedApp()
        let response = try await harness.test { client in
            try await client.admin(.delete, "/admin/v1/apps/\(Fixture.appId)/tokens/\(tokenId)")
        }
        XCTAssertEqual(response.status, .accepted)
        let command = try await harness.onlyPublished(ApiTokenRevoked.self)
        XCTAssertEqual(command, ApiTokenRevoked(mobileAppId: Fixture.appId, tokenId: tokenId, actor: .bootstrap, requestId: command.requestId))
    }

    func testRevokingAnUnknownTokenOrAppIs404() async throws {
        let harness = Harness()
        let tokenId = await harness.seedApp()
        try await harness.test { client in
            try assertProblem(try await client.admin(.delete, "/admin/v1/apps/\(Fixture.appId)/tokens/\(UUID())"),
                              .notFound, field: "tokenId")
            try assertProblem(try await client.admin(.delete, "/admin/v1/apps/\(UUID())/tokens/\(tokenId)"),
                              .notFound, field: "mobileAppId")
            try assertProblem(try await client.admin(.delete, "/admin/v1/apps/\(Fixture.appId)/tokens/abc"),
                              .badRequest, field: "tokenId")
        }
        await assertNothingPublished(harness.publisher)
    }

    func testPatchingAnAppPublishesAppSettingsChanged() async throws {
        let harness = Harness()
        _ = await harness.seedApp()
        let body = #"{"name": "Shop 2", "callbackUrl": "https://shop.example.com/pushline", "callbackHeaders": {"x-key": "v"}, "webhookRetries": 3}"#
        let response = try await harness.test { client in
            try await client.admin(.patch, "/admin/v1/apps/\(Fixture.appId)", json: body)
        }
        XCTAssertEqual(response.status, .accepted)
        let command = try await harness.onlyPublished(AppSettingsChanged.self)
        XCTAssertEqual(command, AppSettingsChanged(mobileAppId: Fixture.appId, name: "Shop 2",
                                                   callbackUrl: "https://shop.example.com/pushline",
                                                   callbackHeaders: ["x-key": "v"], webhookRetries: 3, actor: .bootstrap,
                                                   requestId: command.requestId))
    }

    func testPatchingSetsTheAppsTimeZoneAndQuietHoursCanonicalAndEmptyRemovesThem() async throws {
        let harness = Harness()
        _ = await harness.seedApp()
        try await harness.test { client in
            for json in [#"{"timeZone": "America/Sao_Paulo", "quietHours": "22:00-07:30"}"#, #"{"timeZone": "", "quietHours": ""}"#] {
                let response = try await client.admin(.patch, "/admin/v1/apps/\(Fixture.appId)", json: json)
                XCTAssertEqual(response.status, .accepted)
            }
        }
        let commands = try await harness.published(AppSettingsChanged.self)
        XCTAssertEqual(commands.map(\.timeZone), ["America/Sao_Paulo", ""])
        XCTAssertEqual(commands.map(\.quietHours), ["22:00-07:30", ""])
    }

    func testPatchingWithAnEmptyCallbackUrlClearsIt() async throws {
        let harness = Harness()
        _ = await harness.seedApp()
        let response = try await harness.test { client in
            try await client.admin(.patch, "/admin/v1/apps/\(Fixture.appId)", json: #"{"callbackUrl": ""}"#)
        }
        XCTAssertEqual(response.status, .accepted)
        let command = try await harness.onlyPublished(AppSettingsChanged.self)
        XCTAssertEqual(command, AppSettingsChanged(mobileAppId: Fixture.appId, callbackUrl: "", actor: .bootstrap, requestId: command.requestId))
    }

    func testPatchingValidatesSettings() async throws {
        let harness = Harness()
        _ = await harness.seedApp()
        let cases: [(String, String)] = [
            (#"{"callbackUrl": "/relative"}"#, "callbackUrl"),
            (#"{"callbackUrl": "ftp://example.com"}"#, "callbackUrl"),
            (#"{"webhookRetries": 11}"#, "webhookRetries"),
            (#"{"webhookRetries": -1}"#, "webhookRetries"),
            (#"{"webhookRetries": "3"}"#, "webhookRetries"),
            (#"{"callbackHeaders": {"a": 1}}"#, "callbackHeaders.a"),
            (#"{"callbackHeaders": {"bad name": "v"}}"#, "callbackHeaders"),
            (#"{"name": ""}"#, "name"),
            (#"{"timeZone": "Mars/Olympus"}"#, "timeZone"),
            (#"{"timeZone": "+02:00"}"#, "timeZone"),
            (#"{"quietHours": "22:00"}"#, "quietHours"),
            (#"{"quietHours": "22:00-22:00"}"#, "quietHours"),
            (#"{"quietHours": "25:00-08:00"}"#, "quietHours"),
        ]
        try await harness.test { client in
            for (json, field) in cases {
                try assertProblem(try await client.admin(.patch, "/admin/v1/apps/\(Fixture.appId)", json: json),
                                  .badRequest, field: field)
            }
        }
        await assertNothingPublished(harness.publisher)
    }

    func testPatchingAnUnknownAppIs404() async throws {
        let harness = Harness()
        let response = try await harness.test { client in
            try await client.admin(.patch, "/admin/v1/apps/\(UUID())", json: #"{"webhookRetries": 1}"#)
        }
        try assertProblem(response, .notFound, field: "mobileAppId")
        await assertNothingPublished(harness.publisher)
    }

    func testGettingAnAppAnswersItsProjectedView() async throws {
        let harness = Harness()
        let tokenId = await harness.seedApp()
        let response = try await harness.test { client in
            try await client.admin(.get, "/admin/v1/apps/\(Fixture.appId)")
        }
        XCTAssertEqual(response.status, .ok)
        let view = try decodeBody(AdminAPI.AppView.self, response)
        XCTAssertEqual(view, AdminAPI.AppView(orgId: Fixture.orgId, mobileAppId: Fixture.appId, name: "app",
                                              callbackUrl: "https://app.example.com/cb", callbackHeaders: ["x-app": "redacted"],
                                              webhookRetries: 2,
                                              tokens: [AdminAPI.TokenView(tokenId: tokenId, revoked: false, scopes: [.client, .server], legacy: true)]))
        XCTAssertFalse(String(buffer: response.body).contains(Fixture.rawTokenHash), "token hashes stay inside")
    }

    func testListingAppsPagesThroughThemInIdOrder() async throws {
        let harness = Harness()
        let ids = (1...5).map { UUID(uuidString: String(format: "00000000-0000-0000-0000-%012x", 0xb0 + $0))! }
        for id in ids.reversed() { _ = await harness.seedApp(id, rawToken: "token-\(id)") }
        let pages = try await harness.test { client in
            var pages: [AdminAPI.AppList] = []
            var after: UUID? = nil
            repeat {
                let response = try await client.admin(.get, "/admin/v1/apps?limit=2" + (after.map { "&after=\($0)" } ?? ""))
                XCTAssertEqual(response.status, .ok)
                pages.append(try decodeBody(AdminAPI.AppList.self, response))
                after = pages.last?.next
            } while after != nil && pages.count < 10
            return pages
        }
        XCTAssertEqual(pages.map(\.apps.count), [2, 2, 1])
        XCTAssertEqual(pages.flatMap(\.apps).map(\.mobileAppId), ids)
        XCTAssertEqual(pages.map(\.next), [ids[1], ids[3], nil])
        XCTAssertEqual(pages[0].apps[0].tokens.count, 1, "each app comes with its tokens")
    }

    func testListingAppsWithoutLimitAnswersAllOfAFewAndRefusesBadParameters() async throws {
        let harness = Harness()
        _ = await harness.seedApp()
        try await harness.test { client in
            let all = try decodeBody(AdminAPI.AppList.self, try await client.admin(.get, "/admin/v1/apps"))
            XCTAssertEqual(all.apps.map(\.mobileAppId), [Fixture.appId])
            XCTAssertNil(all.next)
            for bad in ["limit=0", "limit=1001", "limit=ten", "after=nope"] {
                try assertProblem(try await client.admin(.get, "/admin/v1/apps?" + bad), .badRequest,
                                  field: String(bad.prefix { $0 != "=" }))
            }
        }
    }

    func testGettingAnUnprojectedAppIs404() async throws {
        let harness = Harness()
        let response = try await harness.test { client in
            try await client.admin(.get, "/admin/v1/apps/\(UUID())")
        }
        try assertProblem(response, .notFound, field: "mobileAppId")
    }

    func testStoreFailureOnAdminReadIs503() async throws {
        let harness = Harness()
        await harness.store.failEveryRead()
        let response = try await harness.test { client in
            try await client.admin(.get, "/admin/v1/apps/\(Fixture.appId)")
        }
        try assertProblem(response, .serviceUnavailable, field: nil)
        XCTAssertEqual(response.headers[.retryAfter], "1")
    }
}
