import _CryptoExtras
import Contracts
import Crypto
import Foundation
import Hummingbird
import NIOCore
import Synchronization
import WireCodec

/// A stand-in for Google's OAuth 2.0 token endpoint and the FCM HTTP v1 API together, that a
/// sender under test reaches over real HTTP/2 and TLS, and that checks each request as Google
/// documents it.
///
/// `POST /token` (give `tokenURI` as the service account's `token_uri`) takes the form
/// `grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer&assertion=<JWT>`. The assertion must be
/// RS256, signed by a trusted account's key, with `iss` its `client_email`, `aud` the token URI,
/// a `scope` that covers FCM (`…/auth/firebase.messaging` or `…/auth/cloud-platform`), and
/// `iat`/`exp` at most an hour apart around now. It answers an access token, or 400 with an
/// OAuth `error` and `error_description`.
///
/// `POST /v1/projects/{projectId}/messages:send` needs `Authorization: Bearer <access token>`, a
/// token issued here, not expired nor revoked (else 401), to an account of that project (else
/// 403), and a body `{"message": {"token": …, …}, "validate_only"?: …}` (else 400). It answers
/// `{"name": "projects/{projectId}/messages/{id}"}` — unless the test scripted another answer
/// for the registration token. Errors are Google's JSON: `{"error": {"code", "message",
/// "status", "details"?}}`.
///
/// Every request answered is recorded for assertions; sends are also counted by status, and a
/// server made not to keep them only counts them. An observer, when set, is told of each send answered.
public final class MockFCMServer: Sendable {
    /// A service account the server trusts: its project, `client_email` and key's public part.
    public struct TrustedAccount: Sendable {
        public var projectId: String
        public var clientEmail: String
        public var publicKey: _RSA.Signing.PublicKey

        public init(projectId: String, clientEmail: String, publicKey: _RSA.Signing.PublicKey) {
            self.projectId = projectId
            self.clientEmail = clientEmail
            self.publicKey = publicKey
        }

        /// The account of test push credentials.
        public init(_ keys: TestPushKeys) throws {
            self.init(projectId: keys.projectId, clientEmail: keys.clientEmail,
                      publicKey: try _RSA.Signing.PrivateKey(pemRepresentation: keys.rsaPEM).publicKey)
        }
    }

    /// An answer scripted for a registration token, given to sends that are otherwise valid.
    public enum Behaviour: Sendable, Equatable {
        /// 404 `NOT_FOUND`, error code `UNREGISTERED`: the app instance is gone.
        case unregistered
        /// 400 `INVALID_ARGUMENT`, error code `INVALID_ARGUMENT`: not a valid registration token.
        case invalidToken
        /// Any status, Google status and FCM error code, e.g. `(403, "PERMISSION_DENIED",
        /// "SENDER_ID_MISMATCH")`, `(500, "INTERNAL", "INTERNAL")`, `(503, "UNAVAILABLE", "UNAVAILABLE")`.
        case status(Int, status: String, errorCode: String?)
        /// 429 `RESOURCE_EXHAUSTED`, error code `QUOTA_EXCEEDED`, with a `retry-after` header.
        case tooManyRequests(retryAfterSeconds: Int)
        /// Success, after waiting this long.
        case slow(Duration)
    }

    /// A request to the token endpoint, and its answer.
    public struct TokenRequest: Sendable {
        /// The form fields, decoded.
        public var form: [String: String]
        /// The assertion decoded; nil if missing or not a compact JWT.
        public var assertion: DecodedJWT?
        public var status: Int
        /// The OAuth error (`invalid_grant`, …); nil on success.
        public var error: String?
        /// The access token issued; nil on failure.
        public var accessToken: String?
        /// When it was answered.
        public var at: ContinuousClock.Instant
    }

    /// A request other than to the token endpoint (normally a send), and its answer.
    public struct Request: Sendable {
        public var method: String
        public var path: String
        /// The project in a send's path; nil for another path.
        public var projectId: String?
        /// `message.token` from the body, if there was one.
        public var registrationToken: String?
        /// Every request header, names lower-cased; a repeated header's values joined by ", ".
        public var headers: [String: String]
        public var body: Data
        /// The body parsed; nil if it was not JSON.
        public var json: JSONValue?
        /// The access token as sent in `Authorization: Bearer <token>`; nil without one.
        public var accessToken: String?
        public var status: Int
        /// Google's status (`NOT_FOUND`, …) for a failure; nil on success.
        public var errorStatus: String?
        /// FCM's error code (`UNREGISTERED`, …) when the failure has one.
        public var errorCode: String?
        /// The message name answered on success.
        public var messageName: String?
        /// When it was answered.
        public var at: ContinuousClock.Instant
    }

    /// An access token handed out.
    private struct IssuedToken {
        var projectId: String
        var expiresAt: ContinuousClock.Instant
    }

    private struct State {
        var scripts = ScriptBook<Behaviour>()
        var responseDelay: Duration?
        var accessTokenLifetime: Int
        var issuedTokens: [String: IssuedToken] = [:]
        var tokenRequests: [TokenRequest] = []
        var requests: [Request] = []
        var answeredByStatus: [Int: Int] = [:]
        var pushObserver: (@Sendable (AnsweredPush) -> Void)?
    }

    private let accounts: [TrustedAccount]
    private let keepsRequests: Bool
    private let server: MockHTTP2Server
    private let state: Mutex<State>

    /// - Parameters:
    ///   - accessTokenLifetime: The `expires_in` of the access tokens issued, in seconds;
    ///     Google's is 3599. The tokens do expire after it.
    ///   - keepsRequests: false: sends are only counted (`answeredByStatus`), not kept for
    ///     `requests`, so that a server answering millions of them stays the same size.
    public init(ca: TestCA, accounts: [TrustedAccount], accessTokenLifetime: Int = 3599, keepsRequests: Bool = true) {
        self.accounts = accounts
        self.keepsRequests = keepsRequests
        server = MockHTTP2Server(name: "mock FCM", ca: ca)
        state = Mutex(State(accessTokenLifetime: accessTokenLifetime))
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

    /// `https://127.0.0.1:PORT`, the FCM host to give the sender; only once started.
    public var baseURL: String { "https://127.0.0.1:\(port)" }

    /// The token endpoint: the `token_uri` of the service accounts, and the `aud` their
    /// assertions must name; only once started.
    public var tokenURI: String { "\(baseURL)/token" }

    // MARK: Access tokens

    /// The `expires_in` of access tokens issued from now on, in seconds; they expire after it.
    public var accessTokenLifetime: Int {
        get { state.withLock { $0.accessTokenLifetime } }
        set { state.withLock { $0.accessTokenLifetime = newValue } }
    }

    /// Makes every access token issued so far invalid: sends with one get 401.
    public func revokeAccessTokens() {
        state.withLock { $0.issuedTokens = [:] }
    }

    /// How many access tokens the token requests recorded were answered with.
    public var issuedAccessTokenCount: Int {
        tokenRequests.count(where: { $0.accessToken != nil })
    }

    // MARK: Scripting

    /// Answers every later valid send to `registrationToken` with `behaviour`; nil restores success.
    public func setBehaviour(_ behaviour: Behaviour?, for registrationToken: String) {
        state.withLock { $0.scripts.set(behaviour, for: registrationToken) }
    }

    /// Answers the next `count` valid sends to `registrationToken` with `behaviour` and the ones
    /// after with success: a failure that a retry gets past.
    public func setBehaviour(_ behaviour: Behaviour, forNext count: Int, requestsTo registrationToken: String) {
        state.withLock { $0.scripts.set(behaviour, forNext: count, requestsTo: registrationToken) }
    }

    /// Answers every later valid send to a registration token that has no behaviour set of its
    /// own with what `rule` returns for the token (nil: success), e.g. `UNREGISTERED` for every
    /// token with a given prefix; nil removes the rule.
    public func setBehaviourRule(_ rule: (@Sendable (_ registrationToken: String) -> Behaviour?)?) {
        state.withLock { $0.scripts.setRule(rule) }
    }

    /// How long every request, token requests included, waits before it is answered, whatever
    /// the answer: a slow Google. Nil (the default) answers at once.
    public var responseDelay: Duration? {
        get { state.withLock { $0.responseDelay } }
        set { state.withLock { $0.responseDelay = newValue } }
    }

    // MARK: Records

    /// Tells `observer` of every send (a request to a `messages:send` path) answered from now on,
    /// kept or not (`pushline-mocks --push-log`); nil stops telling. `reset` leaves it.
    public func setPushObserver(_ observer: (@Sendable (AnsweredPush) -> Void)?) {
        state.withLock { $0.pushObserver = observer }
    }

    /// Every token request answered so far, in the order answered.
    public var tokenRequests: [TokenRequest] { state.withLock { $0.tokenRequests } }

    /// Every other request (sends) answered so far, in the order answered; none when the server
    /// keeps no requests.
    public var requests: [Request] { state.withLock { $0.requests } }

    /// How many sends (requests other than token requests) were answered with each status so
    /// far, kept or not.
    public var answeredByStatus: [Int: Int] { state.withLock { $0.answeredByStatus } }

    /// The sends answered so far for `registrationToken`.
    public func requests(for registrationToken: String) -> [Request] {
        requests.filter { $0.registrationToken == registrationToken }
    }

    /// How many different access tokens the sends so far carried.
    public var distinctAccessTokens: Int {
        Set(requests.compactMap(\.accessToken)).count
    }

    /// Forgets the requests recorded and counted (token requests too), the scripted behaviours,
    /// the rule and the response delay. Access tokens issued stay valid.
    public func reset() {
        state.withLock {
            $0.scripts.removeAll()
            $0.responseDelay = nil
            $0.tokenRequests = []
            $0.requests = []
            $0.answeredByStatus = [:]
        }
    }

    // MARK: Answering

    /// The scope that grants sending with FCM, and the broader one that includes it.
    private static let fcmScopes: Set<String> = [
        "https://www.googleapis.com/auth/firebase.messaging", "https://www.googleapis.com/auth/cloud-platform",
    ]

    /// Google accepts an assertion valid for at most an hour; `iat` may run ahead of its clock a little.
    private static let maxAssertionLifetime: TimeInterval = 3600
    private static let allowedClockSkew: TimeInterval = 300

    /// Answers a request to either endpoint, after the response delay if one is set.
    private func answer(_ httpRequest: Hummingbird.Request) async -> Response {
        let body = (try? await Data(buffer: httpRequest.body.collect(upTo: 1 << 20))) ?? Data()
        if let delay = state.withLock({ $0.responseDelay }) {
            try? await Task.sleep(for: delay)
        }
        if httpRequest.uri.path == "/token" && httpRequest.method == .post {
            return exchangeToken(body: body)
        }
        return await send(httpRequest, body: body)
    }

    // MARK: Token endpoint

    /// An OAuth error: 400 and a JSON body.
    private struct OAuthError: Error, Encodable {
        var error: String
        var errorDescription: String

        enum CodingKeys: String, CodingKey {
            case error
            case errorDescription = "error_description"
        }
    }

    /// The token endpoint's answer to a good grant.
    private struct AccessTokenBody: Encodable {
        var accessToken: String
        var expiresIn: Int
        var tokenType = "Bearer"

        enum CodingKeys: String, CodingKey {
            case accessToken = "access_token"
            case expiresIn = "expires_in"
            case tokenType = "token_type"
        }
    }

    /// Answers a token request: an access token for a good grant, else the OAuth error; records it.
    private func exchangeToken(body: Data) -> Response {
        let form = Self.formFields(body)
        let assertion = form["assertion"].flatMap(DecodedJWT.init(compact:))
        do throws(OAuthError) {
            let account = try checkGrant(form: form, assertion: assertion)
            let accessToken = "ya29.mock-" + Self.randomToken()
            let lifetime = state.withLock { state in
                state.issuedTokens[accessToken] = IssuedToken(projectId: account.projectId,
                                                              expiresAt: .now + .seconds(state.accessTokenLifetime))
                state.tokenRequests.append(TokenRequest(form: form, assertion: assertion, status: 200, error: nil,
                                                        accessToken: accessToken, at: .now))
                return state.accessTokenLifetime
            }
            return Self.jsonResponse(200, AccessTokenBody(accessToken: accessToken, expiresIn: lifetime))
        } catch {
            state.withLock {
                $0.tokenRequests.append(TokenRequest(form: form, assertion: assertion, status: 400, error: error.error,
                                                     accessToken: nil, at: .now))
            }
            return Self.jsonResponse(400, error)
        }
    }

    /// Checks a JWT-bearer grant as Google does and returns the account it authenticates.
    private func checkGrant(form: [String: String], assertion: DecodedJWT?) throws(OAuthError) -> TrustedAccount {
        guard form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer" else {
            throw OAuthError(error: "unsupported_grant_type", errorDescription: "Invalid grant_type: \(form["grant_type"] ?? "")")
        }
        guard form["assertion"] != nil else {
            throw OAuthError(error: "invalid_request", errorDescription: "Missing required parameter: assertion")
        }
        guard let assertion, assertion.headerString("alg") == "RS256" else {
            throw OAuthError(error: "invalid_grant", errorDescription: "Invalid JWT: not an RS256 JSON Web Token.")
        }
        guard let account = accounts.first(where: { $0.clientEmail == assertion.claimString("iss") }) else {
            throw OAuthError(error: "invalid_grant", errorDescription: "Invalid grant: account not found")
        }
        let signature = _RSA.Signing.RSASignature(rawRepresentation: assertion.signature)
        guard account.publicKey.isValidSignature(signature, for: assertion.signingInput, padding: .insecurePKCS1v1_5) else {
            throw OAuthError(error: "invalid_grant", errorDescription: "Invalid JWT Signature.")
        }
        guard assertion.claimString("aud") == tokenURI else {
            throw OAuthError(error: "invalid_grant",
                             errorDescription: "Invalid JWT: Failed audience check. The right audience is \(tokenURI)")
        }
        let now = Date().timeIntervalSince1970
        guard let issuedAt = assertion.claimNumber("iat"), let expiresAt = assertion.claimNumber("exp"),
              issuedAt < expiresAt, expiresAt - issuedAt <= Self.maxAssertionLifetime,
              issuedAt <= now + Self.allowedClockSkew, now < expiresAt
        else {
            throw OAuthError(error: "invalid_grant", errorDescription: "Invalid JWT: Token must be a short-lived token (60 minutes) "
                + "and in a reasonable timeframe. Check your iat and exp values in the JWT claim.")
        }
        let scopes = (assertion.claimString("scope") ?? "").split(separator: " ").map(String.init)
        guard scopes.contains(where: Self.fcmScopes.contains) else {
            throw OAuthError(error: "invalid_scope", errorDescription: "Invalid OAuth scope or ID token audience provided.")
        }
        return account
    }

    // MARK: messages:send

    /// A Google API error: the status, and what `{"error": …}` says.
    private struct GoogleError: Error {
        var code: Int
        var status: String
        var message: String
        var errorCode: String?
        /// A `google.rpc.BadRequest` field violation: the field, and the message says what is wrong.
        var field: String?
        var retryAfterSeconds: Int?
    }

    /// `{"error": {"code", "message", "status", "details"}}`, as Google's APIs write it.
    private struct GoogleErrorBody: Encodable {
        struct Status: Encodable {
            var code: Int
            var message: String
            var status: String
            var details: [Detail]?
        }

        struct Detail: Encodable {
            var type: String
            var errorCode: String?
            var fieldViolations: [FieldViolation]?

            enum CodingKeys: String, CodingKey {
                case type = "@type"
                case errorCode, fieldViolations
            }
        }

        struct FieldViolation: Encodable {
            var field: String
            var description: String
        }

        var error: Status

        init(_ failure: GoogleError) {
            var details: [Detail] = []
            if let errorCode = failure.errorCode {
                details.append(Detail(type: "type.googleapis.com/google.firebase.fcm.v1.FcmError", errorCode: errorCode))
            }
            if let field = failure.field {
                details.append(Detail(type: "type.googleapis.com/google.rpc.BadRequest",
                                      fieldViolations: [FieldViolation(field: field, description: failure.message)]))
            }
            error = Status(code: failure.code, message: failure.message, status: failure.status,
                           details: details.isEmpty ? nil : details)
        }
    }

    /// The answer to a good send: the message's name.
    private struct SendBody: Encodable {
        var name: String
    }

    /// The members a send request and its message may have (proto3 JSON takes either spelling).
    private static let requestFields: Set<String> = ["message", "validate_only", "validateOnly"]
    private static let messageFields: Set<String> = [
        "name", "data", "notification", "android", "webpush", "apns", "fcm_options", "fcmOptions", "token", "topic", "condition",
    ]

    /// Answers any request but a token request as `messages:send` does (another path gets 404); records it.
    private func send(_ httpRequest: Hummingbird.Request, body: Data) async -> Response {
        let path = httpRequest.uri.path.removingPercentEncoding ?? httpRequest.uri.path
        let projectId = Self.projectId(inSendPath: path)
        let headers = MockHTTP2Server.headerValues(httpRequest.headers)
        let accessToken = MockHTTP2Server.bearerToken(headers["authorization"])
        let json = try? JSONValue.parse(body)
        let registrationToken = json?["message"]?["token"]?.stringValue

        var failure: GoogleError?
        var messageName: String?
        do throws(GoogleError) {
            guard httpRequest.method == .post, let projectId else {
                throw GoogleError(code: 404, status: "NOT_FOUND", message: "Method not found.")
            }
            try authorize(accessToken, projectId: projectId)
            let validateOnly = try Self.checkSendBody(json)
            switch state.withLock({ $0.scripts.behaviour(forRequestTo: registrationToken ?? "") }) {
            case nil:
                break
            case .unregistered:
                throw GoogleError(code: 404, status: "NOT_FOUND", message: "Requested entity was not found.", errorCode: "UNREGISTERED")
            case .invalidToken:
                throw GoogleError(code: 400, status: "INVALID_ARGUMENT",
                                  message: "The registration token is not a valid FCM registration token", errorCode: "INVALID_ARGUMENT")
            case .status(let code, let status, let errorCode):
                throw GoogleError(code: code, status: status, message: Self.message(status: status, errorCode: errorCode),
                                  errorCode: errorCode)
            case .tooManyRequests(let seconds):
                throw GoogleError(code: 429, status: "RESOURCE_EXHAUSTED", message: "Quota exceeded for sending messages.",
                                  errorCode: "QUOTA_EXCEEDED", retryAfterSeconds: seconds)
            case .slow(let delay):
                try? await Task.sleep(for: delay)
            }
            messageName = "projects/\(projectId)/messages/" + (validateOnly ? "fake_message_id" : "0:\(Self.randomToken())")
        } catch {
            failure = error
        }

        let status = failure?.code ?? 200
        let record = keepsRequests ? Request(
            method: httpRequest.method.rawValue, path: path, projectId: projectId, registrationToken: registrationToken,
            headers: headers, body: body, json: json, accessToken: accessToken, status: status,
            errorStatus: failure?.status, errorCode: failure?.errorCode, messageName: messageName, at: .now
        ) : nil
        let observer = state.withLock { state in
            state.answeredByStatus[status, default: 0] += 1
            if let record { state.requests.append(record) }
            return state.pushObserver
        }
        if let observer, projectId != nil {
            let ids = AnsweredPush.pushlineIds(body, provider: .fcm)
            observer(AnsweredPush(provider: .fcm, deviceToken: registrationToken ?? "", status: status, messageName: messageName,
                                  deliveryId: ids.deliveryId, messageId: ids.messageId))
        }
        guard let failure else { return Self.jsonResponse(200, SendBody(name: messageName ?? "")) }
        var response = Self.jsonResponse(failure.code, GoogleErrorBody(failure))
        if let seconds = failure.retryAfterSeconds { response.headers[.retryAfter] = String(seconds) }
        if failure.code == 401 { response.headers[.wwwAuthenticate] = #"Bearer realm="https://accounts.google.com/""# }
        return response
    }

    /// Checks the access token of a send to `projectId`, or throws Google's 401 or 403.
    private func authorize(_ accessToken: String?, projectId: String) throws(GoogleError) {
        let issued = state.withLock { state in accessToken.flatMap { state.issuedTokens[$0] } }
        guard let issued, ContinuousClock.now < issued.expiresAt else {
            throw GoogleError(code: 401, status: "UNAUTHENTICATED", message: "Request had invalid authentication credentials. "
                + "Expected OAuth 2 access token, login cookie or other valid authentication credential.")
        }
        guard issued.projectId == projectId else {
            throw GoogleError(code: 403, status: "PERMISSION_DENIED",
                              message: "Permission 'cloudmessaging.messages.create' denied on resource "
                                  + "'//cloudresourcemanager.googleapis.com/projects/\(projectId)' (or it may not exist).")
        }
    }

    /// Checks a send's body and returns whether it asks for validation only, or throws Google's 400.
    private static func checkSendBody(_ json: JSONValue?) throws(GoogleError) -> Bool {
        func invalid(_ message: String, field: String? = nil) -> GoogleError {
            GoogleError(code: 400, status: "INVALID_ARGUMENT", message: message, field: field)
        }
        guard case .object(let request)? = json else { throw invalid("Invalid JSON payload received.") }
        if let unknown = request.keys.sorted().first(where: { !requestFields.contains($0) }) {
            throw invalid("Invalid JSON payload received. Unknown name \"\(unknown)\": Cannot find field.")
        }
        var validateOnly = false
        switch request["validate_only"] ?? request["validateOnly"] {
        case nil: break
        case .bool(let value)?: validateOnly = value
        default: throw invalid("Invalid value at 'validate_only' (TYPE_BOOL)", field: "validate_only")
        }
        guard case .object(let message)? = request["message"] else {
            throw invalid("Request contains an invalid argument.", field: "message")
        }
        if let unknown = message.keys.sorted().first(where: { !messageFields.contains($0) }) {
            throw invalid("Invalid JSON payload received. Unknown name \"\(unknown)\" at 'message': Cannot find field.")
        }
        guard case .string(let token)? = message["token"], !token.isEmpty, message["topic"] == nil, message["condition"] == nil else {
            throw invalid("Recipient of the message is not set.", field: "message.token")
        }
        if let data = message["data"] {
            guard case .object(let members) = data else { throw invalid("Invalid value at 'message.data'", field: "message.data") }
            for (index, key) in members.keys.sorted().enumerated() where members[key]?.stringValue == nil {
                throw invalid("Invalid value at 'message.data[\(index)].value' (TYPE_STRING)", field: "message.data[\(index)].value")
            }
        }
        return validateOnly
    }

    /// The project of a `/v1/projects/{projectId}/messages:send` path; nil for another path.
    private static func projectId(inSendPath path: String) -> String? {
        let prefix = "/v1/projects/", suffix = "/messages:send"
        guard path.hasPrefix(prefix), path.hasSuffix(suffix), path.count > prefix.count + suffix.count else { return nil }
        let projectId = String(path.dropFirst(prefix.count).dropLast(suffix.count))
        return projectId.contains("/") ? nil : projectId
    }

    /// The message Google gives with a status, as near as the mock knows it.
    private static func message(status: String, errorCode: String?) -> String {
        switch (status, errorCode) {
        case (_, "SENDER_ID_MISMATCH"?): "SenderId mismatch"
        case ("PERMISSION_DENIED", _): "The caller does not have permission"
        case ("INTERNAL", _): "Internal error encountered."
        case ("UNAVAILABLE", _): "The service is currently unavailable."
        default: status
        }
    }

    // MARK: Helpers

    /// The fields of an `application/x-www-form-urlencoded` body.
    private static func formFields(_ body: Data) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in String(decoding: body, as: UTF8.self).split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decoded(_ text: Substring) -> String {
                let spaced = text.replacingOccurrences(of: "+", with: " ")
                return spaced.removingPercentEncoding ?? spaced
            }
            fields[decoded(parts[0])] = parts.count > 1 ? decoded(parts[1]) : ""
        }
        return fields
    }

    /// 32 random bytes, base64url: unguessable tokens and message ids.
    private static func randomToken() -> String {
        SymmetricKey(size: .bits256).withUnsafeBytes { Data($0) }.base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    private static func jsonResponse(_ status: Int, _ body: some Encodable) -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .withoutEscapingSlashes
        var headers = HTTPFields()
        headers[.contentType] = "application/json; charset=UTF-8"
        // Encoding these plain structs cannot fail.
        return Response(status: .init(code: status), headers: headers,
                        body: .init(byteBuffer: ByteBuffer(bytes: try! encoder.encode(body))))
    }
}
