import Contracts
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import Synchronization

/// A stand-in for Apple's APNs provider API (token-based authentication) that a sender under
/// test reaches over real HTTP/2 and TLS, and that checks each request as Apple documents it.
///
/// It serves `POST /3/device/{deviceToken}` at `baseURL`. The `authorization: bearer <JWT>` must
/// be an ES256 provider token (header `alg`, `kid`; claims `iss`, `iat`) signed by one of the
/// trusted keys, issued by that key's team, less than an hour old. `apns-topic` must be the
/// bundle id of one of the team's apps (with the suffix Apple prescribes for a VoIP, complication,
/// file-provider, Live Activity, location or push-to-talk push); `apns-push-type`,
/// `apns-priority`, `apns-expiration`, `apns-collapse-id` and `apns-id` must be valid when
/// present; the device token must be hex; the body a JSON object of at most 4096 bytes (5120 for
/// VoIP). A request that passes gets 200, an empty body and `apns-id` (the request's, else a new
/// UUID) and `apns-unique-id` — unless the test scripted another answer for its device token.
/// A request that fails gets Apple's status and `{"reason": …}`.
///
/// Every request answered is counted by status and, unless the server was made not to keep
/// them, recorded for assertions; an observer, when set, is told of each push answered.
public final class MockAPNsServer: Sendable {
    /// A signing key the server trusts: a `.p8` key's public part, the key id Apple gave it, its
    /// team, and an app of that team. Several entries may name one team, to give it several apps.
    public struct TrustedKey: Sendable {
        public var teamId: String
        public var keyId: String
        public var bundleId: String
        /// The public key as an uncompressed point: swift-crypto's key type is not `Sendable`.
        private var publicKeyX963: Data

        public init(teamId: String, keyId: String, bundleId: String, publicKey: P256.Signing.PublicKey) {
            self.teamId = teamId
            self.keyId = keyId
            self.bundleId = bundleId
            publicKeyX963 = publicKey.x963Representation
        }

        public var publicKey: P256.Signing.PublicKey {
            // It was made from a key, so it makes one again.
            try! P256.Signing.PublicKey(x963Representation: publicKeyX963)
        }
    }

    /// An answer scripted for a device token, given to requests that are otherwise valid.
    public enum Behaviour: Sendable, Equatable {
        /// 410 `Unregistered`, with the time APNs learnt the token was no longer valid.
        case unregistered(timestampMs: Int64)
        /// Any status and reason, e.g. `(400, "BadDeviceToken")`, `(403, "Forbidden")`,
        /// `(500, "InternalServerError")`, `(503, "ServiceUnavailable")`. A 410 carries the
        /// current time as its timestamp.
        case status(Int, reason: String)
        /// 429 `TooManyRequests` with a `retry-after` header.
        case tooManyRequests(retryAfterSeconds: Int)
        /// Success, after waiting this long.
        case slow(Duration)
    }

    /// A request the server answered, and its answer.
    public struct Request: Sendable {
        public var method: String
        public var path: String
        /// The device token from the path; empty if the path had none.
        public var deviceToken: String
        /// Every request header, names lower-cased; a repeated header's values joined by ", ".
        public var headers: [String: String]
        public var body: Data
        /// The provider token as sent in `authorization: bearer <token>`; nil without one.
        public var bearerToken: String?
        /// The provider token decoded; nil if it was missing or not a compact JWT.
        public var providerToken: DecodedJWT?
        public var status: Int
        /// Apple's reason for a failure; nil on success.
        public var reason: String?
        /// The `apns-id` answered.
        public var apnsId: String
        /// When it was answered.
        public var at: ContinuousClock.Instant
    }

    private struct State {
        var scripts = ScriptBook<Behaviour>()
        var responseDelay: Duration?
        var requests: [Request] = []
        var answeredByStatus: [Int: Int] = [:]
        /// Provider tokens whose signature and issuer checked out, with their team and `iat`: a
        /// sender reuses one token for up to an hour, so each is verified once, not per push.
        var verifiedTokens: [String: (teamId: String, issuedAt: Double)] = [:]
        var pushObserver: (@Sendable (AnsweredPush) -> Void)?
    }

    private let trustedKeys: [TrustedKey]
    private let keepsRequests: Bool
    private let server: MockHTTP2Server
    private let state = Mutex(State())

    /// - Parameter keepsRequests: false: requests are only counted (`answeredByStatus`), not
    ///   kept for `requests`, so that a server answering millions of them stays the same size.
    public init(ca: TestCA, trustedKeys: [TrustedKey], keepsRequests: Bool = true) {
        self.trustedKeys = trustedKeys
        self.keepsRequests = keepsRequests
        server = MockHTTP2Server(name: "mock APNs", ca: ca)
    }

    /// Starts listening on 127.0.0.1, on `port` or, with 0, on a port the system picks.
    public func start(port: Int = 0) async throws {
        try await server.start(port: port) { [self] request in await answer(request) }
    }

    /// Stops listening; requests in flight are cut off.
    public func stop() async {
        await server.stop()
    }

    /// The port it listens on; only once started.
    public var port: Int { server.port }

    /// `https://127.0.0.1:PORT`, the APNs host to give the sender; only once started.
    public var baseURL: String { "https://127.0.0.1:\(port)" }

    // MARK: Scripting

    /// Answers every later valid request to `deviceToken` with `behaviour`; nil restores success.
    public func setBehaviour(_ behaviour: Behaviour?, for deviceToken: String) {
        state.withLock { $0.scripts.set(behaviour, for: deviceToken) }
    }

    /// Answers the next `count` valid requests to `deviceToken` with `behaviour` and the ones
    /// after with success: a failure that a retry gets past.
    public func setBehaviour(_ behaviour: Behaviour, forNext count: Int, requestsTo deviceToken: String) {
        state.withLock { $0.scripts.set(behaviour, forNext: count, requestsTo: deviceToken) }
    }

    /// Answers every later valid request to a device token that has no behaviour set of its own
    /// with what `rule` returns for the token (nil: success), e.g. 410 for every token with a
    /// given prefix; nil removes the rule.
    public func setBehaviourRule(_ rule: (@Sendable (_ deviceToken: String) -> Behaviour?)?) {
        state.withLock { $0.scripts.setRule(rule) }
    }

    /// How long every request waits before it is answered, whatever the answer: a slow APNs.
    /// Nil (the default) answers at once.
    public var responseDelay: Duration? {
        get { state.withLock { $0.responseDelay } }
        set { state.withLock { $0.responseDelay = newValue } }
    }

    // MARK: Records

    /// Tells `observer` of every request to a device path answered from now on, kept or not
    /// (`pushline-mocks --push-log`); nil stops telling. `reset` removes it too.
    public func setPushObserver(_ observer: (@Sendable (AnsweredPush) -> Void)?) {
        state.withLock { $0.pushObserver = observer }
    }

    /// Every request answered so far, in the order answered; none when the server keeps no requests.
    public var requests: [Request] { state.withLock { $0.requests } }

    /// How many requests were answered with each status so far, kept or not.
    public var answeredByStatus: [Int: Int] { state.withLock { $0.answeredByStatus } }

    /// The requests answered so far for `deviceToken`.
    public func requests(for deviceToken: String) -> [Request] {
        requests.filter { $0.deviceToken == deviceToken }
    }

    /// How many different provider tokens the requests so far carried: a sender that reuses its
    /// token, as Apple asks, shows one per key and 20–60 minutes.
    public var distinctJWTs: Int {
        Set(requests.compactMap(\.bearerToken)).count
    }

    /// Forgets the requests recorded and counted, the scripted behaviours, the rule and the response delay.
    public func reset() {
        state.withLock { $0 = State() }
    }

    // MARK: Answering

    /// A rejection: Apple's status and reason.
    private struct Failure: Error {
        var status: Int
        var reason: String
        var retryAfterSeconds: Int?
        var timestampMs: Int64?

        init(_ status: Int, _ reason: String, retryAfterSeconds: Int? = nil, timestampMs: Int64? = nil) {
            self.status = status
            self.reason = reason
            self.retryAfterSeconds = retryAfterSeconds
            self.timestampMs = timestampMs
        }
    }

    /// The push types Apple documents, and the suffix each adds to the bundle id in `apns-topic`.
    private static let topicSuffixByPushType: [String: String] = [
        "alert": "", "background": "", "mdm": "",
        "location": ".location-query",
        "voip": ".voip",
        "complication": ".complication",
        "fileprovider": ".pushkit.fileprovider",
        "liveactivity": ".push-type.liveactivity",
        "pushtotalk": ".voip-ptt",
    ]

    /// Headers Apple answers `DuplicateHeaders` for when repeated.
    private static let singleHeaders: Set<String> = [
        "authorization", "apns-id", "apns-topic", "apns-push-type", "apns-priority", "apns-expiration", "apns-collapse-id",
    ]

    /// How long a provider token is accepted after its `iat`.
    private static let providerTokenLifetime: TimeInterval = 3600

    /// Answers a request as APNs would, after the response delay if one is set; records it.
    private func answer(_ httpRequest: Hummingbird.Request) async -> Response {
        let path = httpRequest.uri.path
        let deviceToken = path.hasPrefix("/3/device/") ? String(path.dropFirst("/3/device/".count)) : ""
        let headers = MockHTTP2Server.headerValues(httpRequest.headers)
        let body = try? await Data(buffer: httpRequest.body.collect(upTo: 1 << 20))
        if let delay = state.withLock({ $0.responseDelay }) {
            try? await Task.sleep(for: delay)
        }
        let bearerToken = MockHTTP2Server.bearerToken(headers["authorization"])
        // Decoded for the record; checking a token known to be good needs no decoding.
        let providerToken = keepsRequests ? bearerToken.flatMap(DecodedJWT.init(compact:)) : nil
        let requestedId = headers["apns-id"].flatMap { Self.isUUID($0) ? $0 : nil }
        let apnsId = requestedId ?? UUID().uuidString.lowercased()

        var failure: Failure?
        do throws(Failure) {
            try validate(method: httpRequest.method, path: path, deviceToken: deviceToken, fields: httpRequest.headers,
                         headers: headers, bearerToken: bearerToken, body: body)
            switch state.withLock({ $0.scripts.behaviour(forRequestTo: deviceToken) }) {
            case nil:
                break
            case .unregistered(let timestampMs):
                throw Failure(410, "Unregistered", timestampMs: timestampMs)
            case .status(let status, let reason):
                throw Failure(status, reason, timestampMs: status == 410 ? Int64(Date().timeIntervalSince1970 * 1000) : nil)
            case .tooManyRequests(let seconds):
                throw Failure(429, "TooManyRequests", retryAfterSeconds: seconds)
            case .slow(let delay):
                try? await Task.sleep(for: delay)
            }
        } catch {
            failure = error
        }

        let status = failure?.status ?? 200
        let record = keepsRequests ? Request(
            method: httpRequest.method.rawValue, path: path, deviceToken: deviceToken, headers: headers, body: body ?? Data(),
            bearerToken: bearerToken, providerToken: providerToken, status: status, reason: failure?.reason,
            apnsId: apnsId, at: .now
        ) : nil
        let observer = state.withLock { state in
            state.answeredByStatus[status, default: 0] += 1
            if let record { state.requests.append(record) }
            return state.pushObserver
        }
        if let observer, !deviceToken.isEmpty {
            let ids = AnsweredPush.pushlineIds(body, provider: .apns)
            observer(AnsweredPush(provider: .apns, deviceToken: deviceToken, status: status, apnsId: apnsId,
                                  deliveryId: ids.deliveryId, messageId: ids.messageId))
        }

        var fields = HTTPFields()
        fields[HTTPField.Name("apns-id")!] = apnsId
        guard let failure else {
            fields[HTTPField.Name("apns-unique-id")!] = UUID().uuidString.lowercased()
            return Response(status: .ok, headers: fields)
        }
        if let seconds = failure.retryAfterSeconds { fields[.retryAfter] = String(seconds) }
        fields[.contentType] = "application/json"
        let json = try! JSONEncoder().encode(ErrorBody(reason: failure.reason, timestamp: failure.timestampMs))
        return Response(status: .init(code: failure.status), headers: fields, body: .init(byteBuffer: ByteBuffer(bytes: json)))
    }

    /// The body of an error answer, as Apple writes it.
    private struct ErrorBody: Encodable {
        var reason: String
        var timestamp: Int64?
    }

    /// Throws the `Failure` Apple would answer for the request, checking what Apple documents.
    private func validate(method: HTTPRequest.Method, path: String, deviceToken: String, fields: HTTPFields,
                          headers: [String: String], bearerToken: String?, body: Data?) throws(Failure) {
        guard method == .post else { throw Failure(405, "MethodNotAllowed") }
        guard path.hasPrefix("/3/device/"), !deviceToken.contains("/") else { throw Failure(404, "BadPath") }
        guard !deviceToken.isEmpty else { throw Failure(400, "MissingDeviceToken") }
        let names = fields.map { $0.name.canonicalName }.filter { Self.singleHeaders.contains($0) }
        guard Set(names).count == names.count else { throw Failure(400, "DuplicateHeaders") }

        let team = try authenticate(headers["authorization"], bearerToken)

        guard deviceToken.utf8.count % 2 == 0, deviceToken.allSatisfy({ $0.isASCII && $0.isHexDigit }) else {
            throw Failure(400, "BadDeviceToken")
        }
        var topicSuffix = ""
        if let pushType = headers["apns-push-type"] {
            guard let suffix = Self.topicSuffixByPushType[pushType] else { throw Failure(400, "InvalidPushType") }
            topicSuffix = suffix
        }
        guard let topic = headers["apns-topic"], !topic.isEmpty else { throw Failure(400, "MissingTopic") }
        guard trustedKeys.contains(where: { $0.teamId == team && $0.bundleId + topicSuffix == topic }) else {
            throw Failure(400, "TopicDisallowed")
        }
        if let priority = headers["apns-priority"], !["10", "5", "1"].contains(priority) { throw Failure(400, "BadPriority") }
        if let expiration = headers["apns-expiration"], expiration.isEmpty || !expiration.allSatisfy({ $0.isASCII && $0.isWholeNumber }) {
            throw Failure(400, "BadExpirationDate")
        }
        if let collapseId = headers["apns-collapse-id"], collapseId.utf8.count > 64 { throw Failure(400, "BadCollapseId") }
        if let apnsId = headers["apns-id"], !Self.isUUID(apnsId) { throw Failure(400, "BadMessageId") }

        guard let body else { throw Failure(413, "PayloadTooLarge") }
        guard !body.isEmpty else { throw Failure(400, "PayloadEmpty") }
        guard body.count <= (headers["apns-push-type"] == "voip" ? 5120 : 4096) else { throw Failure(413, "PayloadTooLarge") }
        // Apple documents no reason for a payload that is not a JSON object; one is needed so that
        // such a payload cannot pass unnoticed. (JSONSerialization: checking takes a fraction of
        // what decoding a `JSONValue` does.)
        guard (try? JSONSerialization.jsonObject(with: body)) is [String: Any] else { throw Failure(400, "BadPayload") }
    }

    /// Checks the provider token and returns its team, or throws Apple's 403.
    private func authenticate(_ authorization: String?, _ bearerToken: String?) throws(Failure) -> String {
        guard let authorization, !authorization.isEmpty else { throw Failure(403, "MissingProviderToken") }
        let (team, issuedAt) = try verified(bearerToken)
        guard Date().timeIntervalSince1970 - issuedAt <= Self.providerTokenLifetime else {
            throw Failure(403, "ExpiredProviderToken")
        }
        return team
    }

    /// The team and `iat` of a provider token signed by a trusted key for its team, from the
    /// tokens verified before or verified now; throws Apple's 403 for any other.
    private func verified(_ bearerToken: String?) throws(Failure) -> (teamId: String, issuedAt: Double) {
        guard let bearerToken else { throw Failure(403, "InvalidProviderToken") }
        if let known = state.withLock({ $0.verifiedTokens[bearerToken] }) { return known }
        guard let token = DecodedJWT(compact: bearerToken),
              token.headerString("alg") == "ES256",
              let keyId = token.headerString("kid"),
              let key = trustedKeys.first(where: { $0.keyId == keyId }),
              // A JWS ES256 signature is r‖s, 32 bytes each (RFC 7518 §3.4), not DER.
              token.signature.count == 64,
              let signature = try? P256.Signing.ECDSASignature(rawRepresentation: token.signature),
              key.publicKey.isValidSignature(signature, for: token.signingInput),
              token.claimString("iss") == key.teamId,
              let issuedAt = token.claimNumber("iat")
        else { throw Failure(403, "InvalidProviderToken") }
        state.withLock { state in
            // Bounded: a test that signs token after token does not grow the server without end.
            if state.verifiedTokens.count >= 1_000 { state.verifiedTokens = [:] }
            state.verifiedTokens[bearerToken] = (key.teamId, issuedAt)
        }
        return (key.teamId, issuedAt)
    }

    /// A UUID in its textual form, 8-4-4-4-12 hex digits.
    private static func isUUID(_ text: String) -> Bool {
        text.utf8.count == 36 && UUID(uuidString: text) != nil
    }
}
