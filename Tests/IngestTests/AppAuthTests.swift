import Contracts
import Foundation
import Hummingbird
import HummingbirdTesting
@testable import Ingest
import Projections
import XCTest

/// `AppAuthMiddleware` on every Bearer route (docs/API.md#authentication): 400 for a malformed app
/// id, 401 for a missing, malformed, unknown or revoked token, 403 for another app's token, 503
/// when the store or the broker is down; and the auth cache's TTL.
final class AppAuthTests: XCTestCase {
    func testEveryClientRouteAcceptsTheAppsToken() async throws {
        let harness = Harness()
        await harness.seedClientApps()
        let routes = try ClientRoute.all()
        try await harness.test { client in
            for route in routes {
                let response = try await client.call(route)
                XCTAssertEqual(response.status, route.success, "\(route.name): \(String(buffer: response.body))")
            }
        }
        let commands = await harness.publisher.commands
        XCTAssertEqual(commands.count, routes.filter(\.publishes).count, "every route that writes publishes one command")
        for command in commands {
            XCTAssertNil(String(decoding: command.value, as: UTF8.self).range(of: Fixture.rawToken), "raw token in \(command.type)")
        }
    }

    func testMissingOrMalformedAuthorizationIs401WithWWWAuthenticate() async throws {
        let harness = Harness()
        await harness.seedClientApps()
        let headers: [HTTPFields] = [
            [:],
            [.authorization: "Bearer"],
            [.authorization: "Bearer    "],
            [.authorization: "Basic \(Fixture.rawToken)"],
            [.authorization: Fixture.rawToken],
        ]
        try await harness.test { client in
            for route in try ClientRoute.all() {
                for header in headers {
                    let response = try await client.call(route, token: nil, headers: header)
                    try assertProblem(response, .unauthorized, field: "Authorization")
                    XCTAssertEqual(response.headers[.wwwAuthenticate], "Bearer", route.name)
                }
            }
        }
        await assertNothingPublished(harness.publisher)
    }

    func testBearerSchemeIsCaseInsensitive() async throws {
        let harness = Harness()
        await harness.seedClientApps()
        let route = try ClientRoute.all()[0]
        let response = try await harness.test { client in
            try await client.call(route, token: nil, headers: [.authorization: "bEaReR \(Fixture.rawToken)"])
        }
        XCTAssertEqual(response.status, .accepted)
    }

    func testUnknownAndRevokedTokensAre401() async throws {
        let harness = Harness()
        let tokenId = await harness.seedClientApps()
        await harness.store.revoke(tokenId: tokenId)
        try await harness.test { client in
            for route in try ClientRoute.all() {
                for token in [Fixture.rawToken, "not-a-token", Fixture.rawTokenHash] {
                    let response = try await client.call(route, token: token)
                    try assertProblem(response, .unauthorized, field: "Authorization")
                    XCTAssertEqual(response.headers[.wwwAuthenticate], "Bearer", route.name)
                }
            }
        }
        await assertNothingPublished(harness.publisher)
    }

    /// Another app's live token is refused as any token that is not the app's is, word for word:
    /// the answer tells nobody whether a token is live elsewhere.
    func testAnotherAppsLiveTokenIs401LikeAForgedOne() async throws {
        let harness = Harness()
        await harness.seedClientApps()
        try await harness.test { client in
            for route in try ClientRoute.all() {
                let response = try await client.call(route, token: Fixture.otherRawToken)
                try assertProblem(response, .unauthorized, field: "Authorization")
                let forged = try await client.call(route, token: "forged")
                XCTAssertEqual(response.body, forged.body, route.name)
                // The other app's token works on its own app.
                let own = try await client.call(route, app: Fixture.otherAppId.uuidString, token: Fixture.otherRawToken)
                XCTAssertEqual(own.status, route.success, route.name)
            }
        }
        let commands = await harness.publisher.commands
        XCTAssertEqual(Set(commands.map { $0.key.prefix(36) }), [Substring(Fixture.otherAppId.uuidString.lowercased())])
    }

    func testAnotherAppsRevokedTokenIs401AndAnUnprojectedAppIsNoDifferent() async throws {
        let harness = Harness()
        _ = await harness.seedApp()
        let otherTokenId = await harness.seedApp(Fixture.otherAppId, orgId: Fixture.otherOrgId, rawToken: Fixture.otherRawToken)
        await harness.store.revoke(tokenId: otherTokenId)
        let route = try ClientRoute.all()[0]
        try await harness.test { client in
            try assertProblem(try await client.call(route, token: Fixture.otherRawToken), .unauthorized, field: "Authorization")
            // An app that is not projected (yet): every token is 401, a live token of another app too.
            let unknown = UUID().uuidString
            try assertProblem(try await client.call(route, app: unknown, token: Fixture.rawToken), .unauthorized, field: "Authorization")
            try assertProblem(try await client.call(route, app: unknown, token: "nope"), .unauthorized, field: "Authorization")
        }
        await assertNothingPublished(harness.publisher)
    }

    func testMalformedMobileAppIdIs400() async throws {
        let harness = Harness()
        await harness.seedClientApps()
        try await harness.test { client in
            for route in try ClientRoute.all() {
                for app in ["not-a-uuid", "00000000-0000-0000-0000-0000000000a"] {
                    try assertProblem(try await client.call(route, app: app), .badRequest, field: "mobileAppId")
                }
            }
        }
        await assertNothingPublished(harness.publisher)
    }

    func testStoreFailureIs503WithRetryAfter() async throws {
        let harness = Harness()
        await harness.seedClientApps()
        await harness.store.failEveryRead()
        try await harness.test { client in
            for route in try ClientRoute.all() {
                let response = try await client.call(route)
                try assertProblem(response, .serviceUnavailable, field: nil)
                XCTAssertEqual(response.headers[.retryAfter], "1", route.name)
            }
        }
        await assertNothingPublished(harness.publisher)
    }

    func testPublisherFailureIs503WithRetryAfter() async throws {
        let harness = Harness()
        await harness.seedClientApps()
        await harness.publisher.failEveryPublish(with: PublishUnavailable(reason: "broker down"))
        let routes = try ClientRoute.all().filter(\.publishes)
        try await harness.test { client in
            for route in routes {
                let response = try await client.call(route)
                try assertProblem(response, .serviceUnavailable, field: nil)
                XCTAssertEqual(response.headers[.retryAfter], "1", route.name)
            }
        }
        let calls = await harness.publisher.calls
        XCTAssertEqual(calls.map(\.commands.count), Array(repeating: 1, count: routes.count))
    }

    // MARK: - The auth cache

    func testWithTTLZeroARevokedTokenIsRefusedImmediately() async throws {
        var harness = Harness()
        harness.configuration.authCacheMs = 0
        let tokenId = await harness.seedClientApps()
        let route = try ClientRoute.all()[0]
        let store = harness.store
        let (before, after) = try await harness.test { client in
            let before = try await client.call(route)
            await store.revoke(tokenId: tokenId)
            return (before, try await client.call(route))
        }
        XCTAssertEqual(before.status, .accepted)
        try assertProblem(after, .unauthorized, field: "Authorization")
    }

    func testWithinTheTTLTheStoreIsReadOncePerAppAndARevokedTokenStillPasses() async throws {
        var harness = Harness()
        harness.configuration.authCacheMs = 60_000
        let tokenId = await harness.seedClientApps()
        let route = try ClientRoute.all()[0]
        let store = harness.store
        let statuses = try await harness.test { client in
            var statuses: [HTTPResponse.Status] = []
            for _ in 0..<3 { statuses.append(try await client.call(route).status) }
            await store.revoke(tokenId: tokenId)
            statuses.append(try await client.call(route).status)
            return statuses
        }
        XCTAssertEqual(statuses, [.accepted, .accepted, .accepted, .accepted], "the documented TTL trade-off")
        let reads = await store.readCount
        XCTAssertEqual(reads, 2, "one app read and one token read for four requests")
    }

    func testARevokedTokenIsRefusedOnceTheTTLHasPassed() async throws {
        var harness = Harness()
        harness.configuration.authCacheMs = 50
        let tokenId = await harness.seedClientApps()
        let route = try ClientRoute.all()[0]
        let store = harness.store
        let (cached, expired) = try await harness.test { client in
            _ = try await client.call(route)
            await store.revoke(tokenId: tokenId)
            let cached = try await client.call(route)
            try await Task.sleep(for: .milliseconds(120))
            return (cached, try await client.call(route))
        }
        XCTAssertEqual(cached.status, .accepted)
        try assertProblem(expired, .unauthorized, field: "Authorization")
    }

    func testAFloodOfForgedTokensReadsTheStoreOnceForTheApp() async throws {
        var harness = Harness()
        harness.configuration.authCacheMs = 60_000
        await harness.seedClientApps()
        let route = try ClientRoute.all()[0]
        let store = harness.store
        let statuses = try await harness.test { client in
            var statuses: [HTTPResponse.Status] = []
            for index in 0..<50 { statuses.append(try await client.call(route, token: index % 2 == 0 ? "forged" : "forged-\(index)").status) }
            for _ in 0..<5 { statuses.append(try await client.call(route, token: Fixture.otherRawToken).status) }
            return statuses
        }
        XCTAssertEqual(Set(statuses), [.unauthorized])
        let reads = await store.readCount
        XCTAssertEqual(reads, 2, "the app and its tokens, once for 55 requests: one forged token, 25 distinct ones and another app's")
    }

    /// Requests that miss the cache for one app at the same moment share one store read.
    func testRequestsThatMissTogetherShareOneStoreRead() async throws {
        var harness = Harness()
        harness.configuration.authCacheMs = 60_000
        await harness.seedClientApps()
        let route = try ClientRoute.all()[0]
        let store = harness.store
        let statuses = try await harness.test { client in
            try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                for index in 0..<40 {
                    group.addTask { try await client.call(route, token: index % 4 == 0 ? Fixture.rawToken : "forged-\(index)").status }
                }
                return try await group.reduce(into: [HTTPResponse.Status]()) { $0.append($1) }
            }
        }
        XCTAssertEqual(statuses.filter { $0 == .unauthorized }.count, 30)
        XCTAssertEqual(statuses.count, 40)
        let reads = await store.readCount
        XCTAssertEqual(reads, 2, "the app and its tokens, once for 40 requests at once")
    }

    func testForgedTokensOnTheRegistrationAPICostNoStoreReadOnceTheAppIsCached() async throws {
        var harness = Harness()
        harness.configuration.authCacheMs = 60_000
        await harness.seedClientApps()
        let store = harness.store
        try await harness.test { client in
            for index in 0..<30 {
                let response = try await client.post(Fixture.devices(), object: Fixture.registration(token: "forged-\(index)"))
                XCTAssertEqual(response.status, .accepted)
            }
        }
        let reads = await store.readCount
        XCTAssertEqual(reads, 2, "the app and its tokens, once: a fresh entry refuses every other token on its own")
        await assertNothingPublished(harness.publisher)
    }

    func testMadeUpAppIdsCostOneReadEachAndNeverPushARealAppOutOfTheCache() async throws {
        let cache = AppAuthCache(ttl: .seconds(60), maxApps: 10, maxRefusals: 100)
        let start = ContinuousClock.now
        let real = AppCredentials(app: AppRow(appId: Fixture.appId, orgId: Fixture.orgId, name: "a", createdAt: Date()),
                                  liveTokens: [.init(hash: Fixture.rawTokenHash, scopes: [.client])])
        cache.remember(real, readAt: start)
        for _ in 0..<1_000 {
            let madeUp = UUID()
            cache.rememberMissing(madeUp, readAt: start)
        }
        XCTAssertLessThanOrEqual(cache.refusalCount, 100, "refusals are bounded")
        XCTAssertEqual(cache.appCount, 1)
        guard case .admitted(let app, let scopes) = cache.verdict(Fixture.appId, tokenHash: Fixture.rawTokenHash, now: start + .seconds(1)) else {
            return XCTFail("the real app's entry was pushed out by made-up ids")
        }
        XCTAssertEqual(app.appId, Fixture.appId)
        XCTAssertEqual(scopes, [.client])
        guard case .refused = cache.verdict(Fixture.appId, tokenHash: ApiTokens.hash("forged"), now: start + .seconds(1)) else {
            return XCTFail("a fresh entry refuses a token it lacks")
        }
    }

    func testAMissingAppIsRefusedFromTheCacheUntilItsRefusalExpires() {
        let cache = AppAuthCache(ttl: .seconds(1))
        let start = ContinuousClock.now
        cache.rememberMissing(Fixture.appId, readAt: start)
        guard case .refused = cache.verdict(Fixture.appId, tokenHash: Fixture.rawTokenHash, now: start + .milliseconds(999)) else {
            return XCTFail("a missing app is refused within the TTL")
        }
        XCTAssertNil(cache.verdict(Fixture.appId, tokenHash: Fixture.rawTokenHash, now: start + .seconds(1)), "then the store is asked again")
    }

    func testTheCacheIsBoundedAndExpiresEntries() {
        let cache = AppAuthCache(ttl: .seconds(60))
        let start = ContinuousClock.now
        for _ in 0..<AppAuthCache.maxApps + 5 {
            cache.remember(AppCredentials(app: AppRow(appId: UUID(), orgId: Fixture.orgId, name: "a", createdAt: Date()),
                                          liveTokens: []), readAt: start)
        }
        XCTAssertLessThanOrEqual(cache.appCount, AppAuthCache.maxApps)

        let credentials = AppCredentials(app: AppRow(appId: Fixture.appId, orgId: Fixture.orgId, name: "a", createdAt: Date()),
                                         liveTokens: [.init(hash: Fixture.rawTokenHash, scopes: nil),
                                                      .init(hash: ApiTokens.hash("second"), scopes: [.client])])
        cache.remember(credentials, readAt: start)
        XCTAssertNotNil(try XCTUnwrap(cache.credentials(for: Fixture.appId, now: start + .seconds(59))).admits(Fixture.rawTokenHash))
        XCTAssertEqual(credentials.admits(ApiTokens.hash("second"))?.scopes, [.client])
        XCTAssertNil(credentials.admits(ApiTokens.hash("third")))
        XCTAssertNil(cache.credentials(for: Fixture.appId, now: start + .seconds(60)))

        let disabled = AppAuthCache(ttl: .zero)
        disabled.remember(credentials, readAt: start)
        XCTAssertNil(disabled.credentials(for: Fixture.appId, now: start))
        XCTAssertEqual(disabled.appCount, 0)
    }
}
