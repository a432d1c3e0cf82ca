import Contracts
import Foundation
import Hummingbird
import HummingbirdTesting
@testable import Ingest
import Projections
import XCTest

/// Token scopes (docs/API.md#token-scopes): the one route→scope table is the router's, every app
/// route refuses a live token without its scope with a 403 naming it, legacy tokens pass and are
/// counted on server routes, and the per-app rate limit is kept per scope.
final class TokenScopeTests: XCTestCase {
    static let clientToken = "client-token-1"
    static let serverToken = "server-token-1"
    static let bothToken = "both-token-1"

    /// The app of `Fixture.appId` with a legacy token (`Fixture.rawToken`), a client token, a
    /// server-only token and a token with both scopes; the other app as usual.
    static func harness(configure: (inout IngestConfiguration) -> Void = { _ in }) async -> Harness {
        var harness = Harness()
        configure(&harness.configuration)
        await harness.seedClientApps()
        await harness.seedToken(rawToken: clientToken, scopes: [.client])
        await harness.seedToken(rawToken: serverToken, scopes: [.server])
        await harness.seedToken(rawToken: bothToken, scopes: [.client, .server])
        return harness
    }

    // MARK: the table is the router's

    func testEveryRouteOfTheRouterHasExactlyOneScopeInTheTable() throws {
        let router = OpenAPIDocumentTests.router()
        let routed = Set(router.routes.map { RouteScopes.Route($0.method, Self.path($0.path.description)) })
        let tabled = Set(RouteScopes.table.keys)
        XCTAssertEqual(routed.subtracting(tabled).map { "\($0.method) \($0.path)" }.sorted(), [], "routes without a scope")
        XCTAssertEqual(tabled.subtracting(routed).map { "\($0.method) \($0.path)" }.sorted(), [], "scopes of routes that do not exist")
    }

    func testARouteWithoutAnEntryIsRefusedNotServedUnguarded() async throws {
        let harness = Harness()
        let router = buildRouter(configuration: harness.configuration, publisher: harness.publisher, store: harness.store,
                                 metrics: TestMetrics.registry)
        router.get("unscoped") { _, _ in HTTPResponse.Status.noContent }
        let response = try await Application(router: router).test(.router) { client in
            try await client.execute(uri: "/unscoped", method: .get)
        }
        XCTAssertEqual(response.status, .internalServerError)
    }

    // MARK: Bearer routes

    /// Every Bearer route with a valid request, and the scope the table gives it.
    static func bearerRoutes() throws -> [(route: ClientRoute, scope: ApiTokenScope)] {
        let delivery = "0a1868e6-04c9-4d3b-8125-2f9597f68e78"
        let routes = try ClientRoute.all() + [
            ClientRoute(method: .get, path: { Fixture.delivery(delivery, app: $0) }, json: nil, success: .notFound),
            ClientRoute(method: .get, path: { Fixture.delivery(delivery, app: $0) + "/outcomes" }, json: nil, success: .notFound),
            ClientRoute(method: .get, path: { Fixture.notifications($0) }, json: nil, success: .ok),
            ClientRoute(method: .delete, path: { Fixture.notifications($0) + "/" + delivery }, json: nil, success: .notFound),
            ClientRoute(method: .put, path: { "/v1/apps/\($0)/users/user-7/settings" }, json: #"{"quietHours": "22:00-08:00"}"#, success: .ok),
            ClientRoute(method: .get, path: { "/v1/apps/\($0)/users/user-7/settings" }, json: nil, success: .ok),
        ]
        return try routes.map { route in
            let template = route.path("{mobileAppId}")
                .replacingOccurrences(of: delivery, with: "{deliveryId}")
                .replacingOccurrences(of: Fixture.apnsToken, with: "{deviceToken}")
                .replacingOccurrences(of: "user-7", with: "{userId}")
            let scope = try XCTUnwrap(RouteScopes.scope(route.method, template)?.tokenScope, "\(route.method) \(template)")
            return (route, scope)
        }
    }

    func testTheServerRoutesAreSendsAndTheirSchedulesStatisticsAndOutcomesAndEveryOtherAppRouteIsClient() throws {
        let server = try Self.bearerRoutes().filter { $0.scope == .server }.map(\.route.name).sorted()
        XCTAssertEqual(server, ["DELETE /v1/apps/{mobileAppId}/notifications/0a1868e6-04c9-4d3b-8125-2f9597f68e78",
                                "GET /v1/apps/{mobileAppId}/deliveries/0a1868e6-04c9-4d3b-8125-2f9597f68e78",
                                "GET /v1/apps/{mobileAppId}/deliveries/0a1868e6-04c9-4d3b-8125-2f9597f68e78/outcomes",
                                "GET /v1/apps/{mobileAppId}/notifications",
                                "GET /v1/apps/{mobileAppId}/users/user-7/settings",
                                "POST /v1/apps/{mobileAppId}/audiences/count",
                                "POST /v1/apps/{mobileAppId}/devices/changes/batch",
                                "POST /v1/apps/{mobileAppId}/notifications",
                                "PUT /v1/apps/{mobileAppId}/users/user-7/settings"])
        XCTAssertEqual(try Self.bearerRoutes().count, 17)
    }

    func testATokenWithoutTheRoutesScopeIsRefusedWith403NamingTheScopeAndNothingIsWritten() async throws {
        let harness = await Self.harness()
        for (route, scope) in try Self.bearerRoutes() {
            let other = scope == .server ? Self.clientToken : Self.serverToken
            let response = try await harness.test { client in try await client.call(route, token: other) }
            try assertProblem(response, .forbidden, field: "Authorization", code: .scopeMissing)
            XCTAssertEqual(response.status, .forbidden, "\(route.name) with a token lacking \(scope)")
            let problem = try decodeBody(Problem.self, response)
            XCTAssertTrue(problem.error.contains("lacks the \"\(scope.rawValue)\" scope"), "\(route.name): \(problem.error)")
        }
        await assertNothingPublished(harness.publisher)
    }

    func testATokenWithTheScopeALegacyTokenAndATokenWithBothPassEveryRoute() async throws {
        for (route, scope) in try Self.bearerRoutes() {
            for token in [scope == .server ? Self.serverToken : Self.clientToken, Fixture.rawToken, Self.bothToken] {
                let harness = await Self.harness()
                let response = try await harness.test { client in try await client.call(route, token: token) }
                XCTAssertEqual(response.status, route.success, "\(route.name) with \(token): \(String(buffer: response.body))")
            }
        }
    }

    func testLegacyTokensDowngradedToTheClientScopeAreRefusedOnServerRoutesOnly() async throws {
        for (route, scope) in try Self.bearerRoutes() {
            let harness = await Self.harness { $0.legacyTokenScopes = [.client] }
            let response = try await harness.test { client in try await client.call(route, token: Fixture.rawToken) }
            if scope == .server {
                try assertProblem(response, .forbidden, field: "Authorization")
                await assertNothingPublished(harness.publisher)
            } else {
                XCTAssertEqual(response.status, route.success, "\(route.name): \(String(buffer: response.body))")
            }
        }
    }

    /// Scopes change nothing for a token that is not the app's: unknown or another app's, a 401
    /// that names no scope.
    func testUnknownAndOtherAppTokensKeepTheirAnswers() async throws {
        let harness = await Self.harness()
        let send = try XCTUnwrap(try Self.bearerRoutes().first { $0.scope == .server }?.route)
        try await harness.test { client in
            try assertProblem(try await client.call(send, token: "unknown"), .unauthorized, field: "Authorization", code: .tokenInvalid)
            try assertProblem(try await client.call(send, token: Fixture.otherRawToken), .unauthorized, field: "Authorization")
            let problem = try decodeBody(Problem.self, try await client.call(send, token: Fixture.otherRawToken))
            XCTAssertFalse(problem.error.contains("scope"), problem.error)
        }
    }

    func testALegacyTokenOnAServerRouteIsCountedAndOnAClientRouteItIsNot() async throws {
        let harness = await Self.harness()
        let routes = try Self.bearerRoutes()
        let send = try XCTUnwrap(routes.first { $0.route.method == .post && $0.scope == .server }?.route)
        let track = try XCTUnwrap(routes.first { $0.route.name.hasSuffix("/tracking") }?.route)
        let series = #"pushline_ingest_legacy_token_requests_total{route="/v1/apps/{mobileAppId}/notifications"}"#
        try await harness.test { client in
            let before = try await Self.metric(series, client)
            let status1 = try await client.call(send, token: Fixture.rawToken).status
            XCTAssertEqual(status1, .accepted)
            let status2 = try await client.call(send, token: Fixture.rawToken).status
            XCTAssertEqual(status2, .accepted)
            let status3 = try await client.call(send, token: Self.serverToken).status
            XCTAssertEqual(status3, .accepted)
            let status4 = try await client.call(track, token: Fixture.rawToken).status
            XCTAssertEqual(status4, .accepted)
            let after = try await Self.metric(series, client)
            XCTAssertEqual(after - before, 2, "the two legacy sends; not the server token's, not the legacy tracking")
            let text = String(buffer: try await client.execute(uri: "/metrics", method: .get).body)
            XCTAssertFalse(text.contains(#"pushline_ingest_legacy_token_requests_total{route="/v1/apps/{mobileAppId}/tracking"}"#))
        }
    }

    // MARK: the registration API (token in the body)

    func testARegistrationWithAServerOnlyTokenIs403NamingTheScopeAndTheFieldAndWritesNothing() async throws {
        let harness = await Self.harness()
        try await harness.test { client in
            let single = try await client.post(Fixture.devices(), object: Fixture.registration(token: Self.serverToken))
            try assertProblem(single, .forbidden, field: "ApiToken")
            XCTAssertTrue(try decodeBody(Problem.self, single).error.contains(#"lacks the "client" scope"#))

            let batch = try await client.post(Fixture.devices() + "/batch", object: [
                Fixture.registration(token: Self.clientToken), Fixture.registration(token: Self.serverToken),
            ])
            try assertProblem(batch, .forbidden, field: "[1].ApiToken")

            try assertProblem(try await client.post(Fixture.base() + "/devices/cleanup", object: Fixture.cleanup(token: Self.serverToken)),
                              .forbidden, field: "ApiToken")
            try assertProblem(try await client.post(Fixture.base() + "/devices/cleanup/batch",
                                                    object: [Fixture.cleanup(token: Self.serverToken)]),
                              .forbidden, field: "[0].ApiToken")
            let status = try await client.post(Fixture.base() + "/devices/status", object: [
                "RegistrationRequestIds": [UUID().uuidString], "MobileAppId": Fixture.appId.uuidString, "ApiToken": Self.serverToken,
            ])
            try assertProblem(status, .forbidden, field: "ApiToken")
        }
        await assertNothingPublished(harness.publisher)
    }

    func testRegistrationsWithClientLegacyAndBothTokensAreWrittenAndForgedOnesStillAre202() async throws {
        let harness = await Self.harness()
        try await harness.test { client in
            for token in [Self.clientToken, Fixture.rawToken, Self.bothToken, "forged"] {
                let response = try await client.post(Fixture.devices(), object: Fixture.registration(token: token))
                XCTAssertEqual(response.status, .accepted, token)
            }
        }
        let written = try await harness.published(DeviceRegistrationRequested.self)
        XCTAssertEqual(written.map(\.apiTokenHash), [Self.clientToken, Fixture.rawToken, Self.bothToken].map(ApiTokens.hash))
    }

    // MARK: per-scope rate limit

    func testAFloodOfClientTrafficExhaustsOnlyTheClientBucketAndSendsStillPass() async throws {
        let harness = await Self.harness { $0.appRateLimit = RateLimit(perSecond: 1, burst: 3) }
        let routes = try Self.bearerRoutes()
        let track = try XCTUnwrap(routes.first { $0.route.name.hasSuffix("/tracking") }?.route)
        let send = try XCTUnwrap(routes.first { $0.route.method == .post && $0.scope == .server }?.route)
        try await harness.test { client in
            var refused = 0
            for _ in 0..<10 {
                let status = try await client.call(track, token: Self.clientToken).status
                if status == .tooManyRequests { refused += 1 }
            }
            XCTAssertGreaterThanOrEqual(refused, 5, "the client bucket (burst 3) ran dry")
            // The registration API shares the app's client bucket.
            let registration = try await client.post(Fixture.devices(), object: Fixture.registration(token: Self.clientToken))
            XCTAssertEqual(registration.status, .tooManyRequests)
            // The app's server bucket is untouched: its sends pass, even with a token that also has the client scope.
            let status5 = try await client.call(send, token: Self.serverToken).status
            XCTAssertEqual(status5, .accepted)
            let status6 = try await client.call(send, token: Self.bothToken).status
            XCTAssertEqual(status6, .accepted)
        }
    }

    // MARK: helpers

    static func path(_ description: String) -> String {
        description.hasPrefix("/") ? description : "/" + description
    }

    static func metric(_ series: String, _ client: any TestClientProtocol) async throws -> Double {
        OpsTests.value(of: series, in: String(buffer: try await client.execute(uri: "/metrics", method: .get).body))
    }
}
