import Contracts
import Foundation
import Hummingbird
import HummingbirdTesting
import Ingest
import Logging
import Metrics
import Prometheus
import Projections
import WireCodec
import XCTest

/// The process-wide metrics backend of the tests: swift-metrics can be bootstrapped only once,
/// so every test application reports into this one registry.
enum TestMetrics {
    static let registry: PrometheusCollectorRegistry = {
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        return registry
    }()
}

/// One ingest application over a fake publisher and an in-memory store, driven in-process.
struct Harness: Sendable {
    let publisher = FakeCommandPublisher()
    let store = InMemoryProjectionStore()
    /// No processor applies what these tests publish: admin changes are answered once published.
    /// The in-process client has no address, so every request is one source: the per-source limit
    /// is off here, and its tests (`RateLimitTests`) turn it on.
    var configuration: IngestConfiguration = {
        var configuration = IngestConfiguration(adminToken: Fixture.adminToken)
        configuration.adminApplyTimeoutMs = 0
        configuration.sourceRateLimit = RateLimit(perSecond: 0, burst: 1)
        return configuration
    }()

    /// A harness with the deployment's secrets key, as keyed admin creates need: each `test`
    /// builds the application anew, and their raw tokens derive from that key.
    static func keyed() -> Harness {
        var harness = Harness()
        harness.configuration.secrets = try! SecretsKeyring(current: Fixture.secretsKey)
        return harness
    }

    func test<Value: Sendable>(_ body: @Sendable (any TestClientProtocol) async throws -> Value) async throws -> Value {
        let app = buildApplication(configuration: configuration, publisher: publisher, store: store,
                                   metrics: TestMetrics.registry, logger: Logger(label: "pushline-ingest-test"))
        return try await app.test(.router, body)
    }

    /// Every command published so far, decoded as `C` (checking envelope and record metadata).
    func published<C: Command>(_ type: C.Type, file: StaticString = #filePath, line: UInt = #line) async throws -> [C] {
        let topics = configuration.shared.topics
        return try await publisher.commands.map { try payload(C.self, of: $0, topics: topics, file: file, line: line) }
    }

    /// The only command published so far, decoded as `C`.
    func onlyPublished<C: Command>(_ type: C.Type, file: StaticString = #filePath, line: UInt = #line) async throws -> C {
        let commands = try await published(C.self, file: file, line: line)
        XCTAssertEqual(commands.count, 1, "expected exactly one command", file: file, line: line)
        return try XCTUnwrap(commands.first, file: file, line: line)
    }

    /// Seeds an app of `Fixture.orgId` with one live token (`Fixture.rawToken`), a legacy token
    /// (every scope) unless `scopes` are given.
    func seedApp(_ appId: UUID = Fixture.appId, orgId: UUID = Fixture.orgId, rawToken: String = Fixture.rawToken,
                 revoked: Bool = false, scopes: [ApiTokenScope]? = nil) async -> UUID {
        await store.seed(app: AppRow(appId: appId, orgId: orgId, name: "app", callbackUrl: "https://app.example.com/cb",
                                     callbackHeaders: ["x-app": "1"], webhookRetries: 2, createdAt: Date()))
        return await seedToken(appId, rawToken: rawToken, revoked: revoked, scopes: scopes)
    }

    /// Seeds one more token of an app already seeded; returns its id.
    @discardableResult
    func seedToken(_ appId: UUID = Fixture.appId, rawToken: String, revoked: Bool = false, scopes: [ApiTokenScope]?) async -> UUID {
        let tokenId = UUID()
        await store.seed(token: ApiTokenRow(tokenId: tokenId, appId: appId, tokenHash: ApiTokens.hash(rawToken),
                                            revoked: revoked, createdAt: Date(), scopes: scopes))
        return tokenId
    }
}

/// Fixed inputs, with expected values computed outside Swift (Python's hashlib/hmac).
enum Fixture {
    static let adminToken = "admin-secret-token"
    /// The deployment's secrets key: 32 bytes, base64.
    static let secretsKey = Data((0..<32).map { UInt8($0) }).base64EncodedString()
    static let orgId = UUID(uuidString: "6f1d2c3b-4a59-4e7d-8c21-0a1b2c3d4e5f")!
    static let appId = UUID(uuidString: "00000000-0000-0000-0000-0000000000a1")!
    static let otherAppId = UUID(uuidString: "00000000-0000-0000-0000-0000000000b2")!
    static let rawToken = "app-token-1"
    static let otherRawToken = "app-token-2"
    /// sha256("app-token-1") in lower-case hex.
    static let rawTokenHash = "fe32198e4b6b3612ad441a7640f3ae672b18f42dc29348b8e53332634385238c"
    static let callbackURL = "https://hooks.example.com/pushline/status?x=1"
    /// base64(HMAC-SHA256(key: "app-token-1", message: callbackURL)).
    static let callbackSignature = "/I3ScQONmJOyk6F1eGfBjuJPGEmNpRlL1DBGbN3+YOU="
    /// base64(HMAC-SHA256(key: "app-token-2", message: callbackURL)).
    static let otherCallbackSignature = "CsaabJqv6n4WMiCwazTPcdBQZL50UNot1LLqkZfG818="
    static let apnsToken = String(repeating: "ab", count: 32)
    static let fcmToken = "fcm:" + String(repeating: "Xy_9-", count: 30)

    static func base(_ org: UUID = orgId) -> String { "/api/v1.0/orgs/\(org)/pushdeviceregistration" }
    static func devices(_ org: UUID = orgId) -> String { base(org) + "/devices" }

    /// A registration API registration as a JSON object (`nil` values are left out).
    static func registration(app: UUID? = appId, user: String? = "user-1", token: String? = rawToken,
                             apns: String? = apnsToken, fcm: String? = nil, timeZone: String? = nil) -> [String: Any] {
        present(["MobileAppId": app?.uuidString, "UserId": user, "ApiToken": token,
                 "ApnsDeviceToken": apns, "FcmDeviceToken": fcm, "TimeZone": timeZone])
    }

    static func cleanup(app: UUID? = appId, user: String? = "user-1", token: String? = rawToken,
                        device: String? = nil) -> [String: Any] {
        present(["MobileAppId": app?.uuidString, "UserId": user, "ApiToken": token, "DeviceToken": device])
    }

    private static func present(_ fields: [String: String?]) -> [String: Any] {
        fields.compactMapValues { $0 }
    }

    static func json(_ object: Any) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .fragmentsAllowed]), as: UTF8.self)
    }
}

/// Header names of the registration API, spelled out here rather than taken from the code under
/// test.
extension HTTPFields.Element.Name {
    static let xMsTrackRegistration = Self("x-ms-track-registration")!
    static let xMsCallbackURL = Self("x-ms-callback-url")!
    static let xMsStatusCallbackURL = Self("x-ms-status-callback-url")!
    static let xMsCallbackURLHeaders = Self("x-ms-callback-url-headers")!
    static let xRequestId = Self("x-request-id")!
}

extension TestClientProtocol {
    /// POSTs `json` as `application/json` (unless the headers say otherwise).
    func post(_ uri: String, json: String, headers: HTTPFields = [:]) async throws -> TestResponse {
        var headers = headers
        if headers[.contentType] == nil { headers[.contentType] = "application/json" }
        return try await execute(uri: uri, method: .post, headers: headers, body: ByteBuffer(string: json))
    }

    func post(_ uri: String, object: Any, headers: HTTPFields = [:]) async throws -> TestResponse {
        try await post(uri, json: Fixture.json(object), headers: headers)
    }

    func admin(_ method: HTTPRequest.Method, _ uri: String, json: String? = nil,
               token: String = Fixture.adminToken) async throws -> TestResponse {
        var headers: HTTPFields = [.authorization: "Bearer \(token)"]
        if json != nil { headers[.contentType] = "application/json" }
        return try await execute(uri: uri, method: method, headers: headers, body: json.map { ByteBuffer(string: $0) })
    }
}

/// Decodes a published command's envelope and checks its record metadata.
func payload<C: Command>(_ type: C.Type, of command: EncodedCommand, topics: Topics = Topics(),
                         file: StaticString = #filePath, line: UInt = #line) throws -> C {
    let envelope = try WireJSON.decoder().decode(Envelope<C>.self, from: command.value)
    XCTAssertEqual(envelope.type, C.type.rawValue, file: file, line: line)
    XCTAssertEqual(command.type, C.type.rawValue, file: file, line: line)
    XCTAssertEqual(envelope.v, 1, file: file, line: line)
    XCTAssertEqual(command.topic, C.topic.name(in: topics), file: file, line: line)
    XCTAssertEqual(command.key, envelope.payload.recordKey, file: file, line: line)
    return envelope.payload
}

/// Decodes a JSON answer body.
func decodeBody<T: Decodable>(_ type: T.Type, _ response: TestResponse) throws -> T {
    try JSONDecoder().decode(T.self, from: Data(response.body.readableBytesView))
}

/// Asserts a JSON problem answer with this status and field.
/// Asserts a refusal: its status, its JSON problem body naming `field`, and a code this version
/// documents (`code`, when given).
func assertProblem(_ response: TestResponse, _ status: HTTPResponse.Status, field: String?, code: ProblemCode? = nil,
                   file: StaticString = #filePath, line: UInt = #line) throws {
    XCTAssertEqual(response.status, status, file: file, line: line)
    XCTAssertEqual(response.headers[.contentType], "application/json", file: file, line: line)
    let problem = try decodeBody(Problem.self, response)
    XCTAssertEqual(problem.field, field, "problem: \(problem.error)", file: file, line: line)
    XCTAssertFalse(problem.error.isEmpty, file: file, line: line)
    XCTAssertTrue(problem.code.map(ProblemCode.known.contains) ?? false, "undocumented code \(problem.code?.rawValue ?? "none")",
                  file: file, line: line)
    if let code { XCTAssertEqual(problem.code, code, "problem: \(problem.error)", file: file, line: line) }
}

/// Asserts that the fake publisher was never called.
func assertNothingPublished(_ publisher: FakeCommandPublisher, file: StaticString = #filePath, line: UInt = #line) async {
    let calls = await publisher.calls
    XCTAssertTrue(calls.isEmpty, "expected no publish call, got \(calls.count)", file: file, line: line)
}
