import Contracts
import Foundation
import Hummingbird
import HummingbirdTesting
@testable import Ingest
import Logging
import Synchronization
import XCTest

/// The per-app and per-source token buckets: the buckets themselves on an injected clock, the
/// 429 answers of the routes, and one flood over real sockets.
final class RateLimitTests: XCTestCase {
    private let t0 = ContinuousClock.now

    // MARK: the buckets

    func testABucketAdmitsItsBurstThenRefuses() {
        let buckets = TokenBuckets<Int>(perSecond: 10, burst: 3, name: "test")
        for _ in 0..<3 { XCTAssertTrue(buckets.acquire(1, now: t0).isAllowed) }
        XCTAssertEqual(buckets.acquire(1, now: t0), .refused(retryAfterSeconds: 1))
        XCTAssertTrue(buckets.acquire(2, now: t0).isAllowed, "another key has a bucket of its own")
    }

    func testABucketRefillsByElapsedTimeUpToItsBurst() {
        let buckets = TokenBuckets<Int>(perSecond: 2, burst: 2, name: "test")
        XCTAssertTrue(buckets.acquire(1, now: t0).isAllowed)
        XCTAssertTrue(buckets.acquire(1, now: t0).isAllowed)
        XCTAssertEqual(buckets.acquire(1, now: t0 + .milliseconds(400)), .refused(retryAfterSeconds: 1), "0.8 tokens")
        XCTAssertTrue(buckets.acquire(1, now: t0 + .milliseconds(500)).isAllowed, "one token after half a second")
        XCTAssertTrue(buckets.acquire(1, now: t0 + .seconds(100)).isAllowed)
        XCTAssertTrue(buckets.acquire(1, now: t0 + .seconds(100)).isAllowed)
        XCTAssertEqual(buckets.acquire(1, now: t0 + .seconds(100)), .refused(retryAfterSeconds: 1), "never more than the burst")
    }

    func testAnAllowedRequestSaysWhatIsLeftAndWhenTheBucketIsFullAgain() {
        let buckets = TokenBuckets<Int>(perSecond: 2, burst: 5, name: "app")
        XCTAssertEqual(buckets.acquire(1, now: t0), .allowed(remaining: 4, fullInSeconds: 1), "half a token's refill rounds up")
        XCTAssertEqual(buckets.acquire(1, cost: 3, now: t0), .allowed(remaining: 1, fullInSeconds: 2))
        XCTAssertEqual(buckets.acquire(1, now: t0 + .milliseconds(250)), .allowed(remaining: 0, fullInSeconds: 3), "0.5 left, 4.5 to fill")
        let policy = buckets.policy
        XCTAssertEqual([policy.quota, policy.window], [5, 3], "an empty bucket fills in 2.5 s, rounded up")
        var fields = HTTPFields()
        policy.write(remaining: 0, resetSeconds: 3, to: &fields)
        XCTAssertEqual(fields[.rateLimitPolicy], #""app";q=5;w=3"#)
        XCTAssertEqual(fields[.rateLimit], #""app";r=0;t=3"#)
    }

    func testRetryAfterIsTheWholeSecondsUntilTheNextToken() {
        let buckets = TokenBuckets<Int>(perSecond: 0.25, burst: 1, name: "test")
        XCTAssertTrue(buckets.acquire(1, now: t0).isAllowed)
        XCTAssertEqual(buckets.acquire(1, now: t0), .refused(retryAfterSeconds: 4))
        XCTAssertEqual(buckets.acquire(1, now: t0 + .milliseconds(1_500)), .refused(retryAfterSeconds: 3), "2.5 s rounds up")
        XCTAssertEqual(buckets.acquire(1, now: t0 + .milliseconds(3_999)), .refused(retryAfterSeconds: 1), "never 0")
        XCTAssertTrue(buckets.acquire(1, now: t0 + .seconds(4)).isAllowed)
    }

    func testTheTableStaysBoundedForgettingFullBucketsFirst() {
        let buckets = TokenBuckets<Int>(perSecond: 1, burst: 2, name: "test", maxKeys: 3)
        XCTAssertTrue(buckets.acquire(1, now: t0).isAllowed)
        XCTAssertTrue(buckets.acquire(1, now: t0).isAllowed)
        XCTAssertTrue(buckets.acquire(2, now: t0).isAllowed)
        let later = t0 + .milliseconds(1_200)   // key 1 holds 1.2 tokens, key 2 is full again
        XCTAssertTrue(buckets.acquire(3, now: later).isAllowed)
        XCTAssertEqual(buckets.count, 3)
        XCTAssertTrue(buckets.acquire(4, now: later).isAllowed)
        XCTAssertEqual(buckets.count, 3, "key 2 (full) made room for key 4")
        XCTAssertTrue(buckets.acquire(1, now: later).isAllowed)
        XCTAssertEqual(buckets.acquire(1, now: later), .refused(retryAfterSeconds: 1), "key 1 was kept, not reset to a full bucket")

        // Every bucket in use: the table is emptied rather than grown.
        XCTAssertTrue(buckets.acquire(5, now: later).isAllowed)
        XCTAssertEqual(buckets.count, 1)
        for key in 6...1_000 { _ = buckets.acquire(key, now: later) }
        XCTAssertLessThanOrEqual(buckets.count, 3)
    }

    // MARK: the routes

    func testAnAppOverItsLimitGets429WithRetryAfterAndNothingMoreIsPublished() async throws {
        var harness = Harness()
        harness.configuration.appRateLimit = RateLimit(perSecond: 1, burst: 2)
        await harness.seedClientApps()
        let series = #"pushline_ingest_rate_limited_total{scope="app"}"#
        try await harness.test { client in
            let before = OpsTests.value(of: series, in: String(buffer: try await client.execute(uri: "/metrics", method: .get).body))
            // Each answer names the app's policy and what is left of it (and the source address's).
            for (left, full) in [(1, 1), (0, 2)] {
                let response = try await client.bearer(.post, Fixture.notifications(), json: Self.notification)
                XCTAssertEqual(response.status, .accepted)
                XCTAssertEqual(response.headers[values: .rateLimitPolicy].first, #""app";q=2;w=2"#)
                XCTAssertEqual(response.headers[values: .rateLimit].first, "\"app\";r=\(left);t=\(full)")
                XCTAssertTrue(response.headers[values: .rateLimitPolicy].dropFirst().allSatisfy { $0.hasPrefix(#""source";"#) })
            }
            let refused = try await client.bearer(.post, Fixture.notifications(), json: Self.notification)
            try assertProblem(refused, .tooManyRequests, field: nil, code: .rateLimitedApp)
            XCTAssertEqual(try decodeBody(Problem.self, refused).error, "rate limit exceeded for this app")
            XCTAssertEqual(refused.headers[.retryAfter], "1")
            XCTAssertEqual(refused.headers[values: .rateLimitPolicy], [#""app";q=2;w=2"#])
            XCTAssertEqual(refused.headers[values: .rateLimit], [#""app";r=0;t=1"#])
            // Every route of the app with the same scope spends the same bucket: its delivery statistics too.
            try assertProblem(try await client.bearer(.get, Fixture.delivery(UUID().uuidString)), .tooManyRequests, field: nil)
            let after = OpsTests.value(of: series, in: String(buffer: try await client.execute(uri: "/metrics", method: .get).body))
            XCTAssertEqual(after, before + 2)
            // Its client routes have a bucket of their own (docs/API.md#token-scopes).
            let ack = try await client.bearer(.put, Fixture.bw("acks"), json: Self.ack)
            XCTAssertEqual(ack.status, .created)
        }
        let calls = await harness.publisher.calls
        XCTAssertEqual(calls.count, 3, "only the admitted requests were published")
    }

    func testOneAppsExhaustedLimitDoesNotTouchAnotherApp() async throws {
        var harness = Harness()
        harness.configuration.appRateLimit = RateLimit(perSecond: 1, burst: 3)
        await harness.seedClientApps()
        try await harness.test { client in
            for _ in 0..<3 { _ = try await client.bearer(.post, Fixture.notifications(), json: Self.notification) }
            let response = try await client.bearer(.post, Fixture.notifications(), json: Self.notification)
            XCTAssertEqual(response.status, .tooManyRequests)
            for _ in 0..<3 {
                let other = try await client.bearer(.post, Fixture.notifications(Fixture.otherAppId.uuidString),
                                                    json: Self.notification, token: Fixture.otherRawToken)
                XCTAssertEqual(other.status, .accepted)
            }
        }
    }

    func testAnUnauthenticatedRequestDoesNotSpendTheAppsTokens() async throws {
        var harness = Harness()
        harness.configuration.appRateLimit = RateLimit(perSecond: 1, burst: 1)
        await harness.seedClientApps()
        try await harness.test { client in
            for _ in 0..<3 {
                let response = try await client.bearer(.post, Fixture.notifications(), json: Self.notification, token: "wrong")
                XCTAssertEqual(response.status, .unauthorized)
            }
            let response = try await client.bearer(.post, Fixture.notifications(), json: Self.notification)
            XCTAssertEqual(response.status, .accepted)
        }
    }

    func testTheSourceLimitRefusesBeforeAuthenticationOnEveryRouteButHealthAndMetrics() async throws {
        var harness = Harness()
        harness.configuration.appRateLimit = RateLimit(perSecond: 0, burst: 1)
        harness.configuration.sourceRateLimit = RateLimit(perSecond: 1, burst: 2)
        await harness.seedClientApps()
        try await harness.test { client in
            for _ in 0..<2 {
                let response = try await client.bearer(.post, Fixture.notifications(), json: Self.notification, token: "wrong")
                XCTAssertEqual(response.status, .unauthorized)
            }
            // A bad token is now refused as cheaply as a good one: the store is not asked.
            let refused = try await client.bearer(.post, Fixture.notifications(), json: Self.notification, token: "wrong")
            try assertProblem(refused, .tooManyRequests, field: nil, code: .rateLimitedSource)
            XCTAssertEqual(try decodeBody(Problem.self, refused).error, "rate limit exceeded for this source address")
            XCTAssertEqual(refused.headers[.retryAfter], "1")
            let goodToken = try await client.bearer(.post, Fixture.notifications(), json: Self.notification)
            XCTAssertEqual(goodToken.status, .tooManyRequests)
            let admin = try await client.admin(.get, "/admin/v1/apps/\(Fixture.appId)")
            XCTAssertEqual(admin.status, .tooManyRequests)
            let registration = try await client.post(Fixture.devices(), object: Fixture.registration())
            XCTAssertEqual(registration.status, .tooManyRequests)
            let health = try await client.execute(uri: "/health", method: .get)
            XCTAssertEqual(health.status, .ok)
            let metrics = try await client.execute(uri: "/metrics", method: .get)
            XCTAssertEqual(metrics.status, .ok)
        }
        await assertNothingPublished(harness.publisher)
    }

    // MARK: over real sockets

    /// App A floods from many connections at once while app B sends at 20/s, within its
    /// 50/s: every one of B's requests is admitted, A's admissions stay within its bucket and its
    /// refusals carry `Retry-After`. The per-source limit is off: every client here is 127.0.0.1.
    func testAFloodFromOneAppDoesNotStarveAnotherOverLoopback() async throws {
        var harness = Harness()
        let limit = RateLimit(perSecond: 50, burst: 25)
        harness.configuration.appRateLimit = limit
        harness.configuration.sourceRateLimit = RateLimit(perSecond: 0, burst: 1)
        await harness.seedClientApps()
        let app = buildApplication(configuration: harness.configuration, publisher: harness.publisher, store: harness.store,
                                   metrics: TestMetrics.registry, logger: Logger(label: "pushline-ingest-test"))

        let (flood, steady, elapsed) = try await app.test(.live) { client in
            let port = try XCTUnwrap(client.port)
            let start = ContinuousClock.now
            let stopFlooding = StopFlag()
            let (flood, steady) = try await withThrowingTaskGroup(of: [Outcome].self) { group in
                for _ in 0..<16 {
                    group.addTask { try await Self.flooder(port: port, until: stopFlooding) }
                }
                let steady = try await Self.steadySender(port: port, requests: 30, interval: .milliseconds(50))
                stopFlooding.set()
                return (try await group.reduce(into: [Outcome]()) { $0 += $1 }, steady)
            }
            return (flood, steady, ContinuousClock.now - start)
        }

        XCTAssertEqual(steady.count, 30)
        XCTAssertEqual(steady.filter { $0.status != .accepted }, [], "app B within its limit must always be served")
        let admitted = flood.filter { $0.status == .accepted }.count
        let refused = flood.filter { $0.status == .tooManyRequests }
        XCTAssertEqual(admitted + refused.count, flood.count, "A got only 202s and 429s")
        XCTAssertFalse(refused.isEmpty, "the flood (\(flood.count) requests) was never refused")
        XCTAssertTrue(refused.allSatisfy { ($0.retryAfter ?? 0) >= 1 }, "every 429 carries Retry-After")
        let seconds = elapsed.inSeconds
        let bound = Double(limit.burst) + Double(limit.perSecond) * seconds + 2
        XCTAssertLessThanOrEqual(Double(admitted), bound, "admitted \(admitted) of \(flood.count) in \(elapsed)")
    }

    // MARK: helpers

    private static let notification = #"{"userId": "u1", "title": "Hi"}"#
    private static let ack = #"{"nid": "0a1868e6-04c9-4d3b-8125-2f9597f68e78", "did": "\#(Fixture.apnsToken)"}"#

    private struct Outcome: Equatable, Sendable {
        var status: HTTPResponse.Status
        var retryAfter: Int?
    }

    /// A flag the steady sender raises to end the flood.
    private final class StopFlag: Sendable {
        private let raised = Mutex(false)
        func set() { raised.withLock { $0 = true } }
        var isSet: Bool { raised.withLock { $0 } }
    }

    private static func send(_ client: TestClient, app: UUID, token: String) async throws -> Outcome {
        let response = try await client.post(Fixture.notifications(app.uuidString),
                                             headers: [.authorization: "Bearer \(token)", .contentType: "application/json"],
                                             body: ByteBuffer(string: notification))
        return Outcome(status: response.status, retryAfter: response.headers[.retryAfter].flatMap { Int($0) })
    }

    /// App A on one connection of its own, back to back until told to stop.
    private static func flooder(port: Int, until stop: StopFlag) async throws -> [Outcome] {
        try await TestClient.withClient(host: "localhost", port: port, configuration: .init(timeout: .seconds(10))) { client in
            var outcomes: [Outcome] = []
            while !stop.isSet {
                outcomes.append(try await send(client, app: Fixture.appId, token: Fixture.rawToken))
            }
            return outcomes
        }
    }

    /// App B: `requests` requests, one every `interval`.
    private static func steadySender(port: Int, requests: Int, interval: Duration) async throws -> [Outcome] {
        try await TestClient.withClient(host: "localhost", port: port, configuration: .init(timeout: .seconds(10))) { client in
            var outcomes: [Outcome] = []
            for _ in 0..<requests {
                outcomes.append(try await send(client, app: Fixture.otherAppId, token: Fixture.otherRawToken))
                try await Task.sleep(for: interval)
            }
            return outcomes
        }
    }
}

extension TokenBuckets.Decision {
    var isAllowed: Bool {
        if case .allowed = self { return true }
        return false
    }
}
