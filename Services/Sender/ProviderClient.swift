import AsyncHTTPClient
import Contracts
import Foundation
import NIOCore
import NIOHPACK
import NIOSSL
import Synchronization
import WireCodec

/// The HTTP side of delivery: APNs pushes and FCM messages over the sender's own HTTP/2
/// transport (`HTTP2Transport`: one TLS connection per provider host, many streams on it), and
/// FCM's rare token exchange over AsyncHTTPClient.
public final class ProviderClient: Sendable {
    let pushes: HTTP2Transport
    /// For the token exchange, made at its first use: a lane's client never exchanges.
    private let http = Mutex<(client: HTTPClient?, shutDown: Bool)>((nil, false))
    private let tls: TLSConfiguration
    private let timeout: TimeAmount

    /// - Parameters:
    ///   - caFile: a PEM file of further CAs to trust besides the system's
    ///     (`PUSHLINE_SENDER_CA_FILE`: the test servers' CA).
    ///   - timeout: for one attempt, connecting included.
    public convenience init(caFile: String? = nil, timeout: Duration = .seconds(30)) throws {
        try self.init(caFile: caFile, timeout: timeout, settings: .init())
    }

    /// With the push connections' sizes given (the tests make them small).
    init(caFile: String?, timeout: Duration, settings: HTTP2Connection.Settings) throws {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let caFile { tls.additionalTrustRoots = [.file(caFile)] }
        self.timeout = .nanoseconds(timeout.inNanoseconds)
        pushes = try HTTP2Transport(tls: tls, timeout: self.timeout, settings: settings)
        self.tls = tls
    }

    public func shutdown() async throws {
        await pushes.shutdown()
        let client = http.withLock { http in
            http.shutDown = true
            return http.client
        }
        try await client?.shutdown()
    }

    /// The exchange's client, nil once shut down.
    private func httpClient() -> HTTPClient? {
        http.withLock { http in
            guard !http.shutDown else { return nil }
            if let client = http.client { return client }
            var configuration = HTTPClient.Configuration(tlsConfiguration: tls)
            configuration.httpVersion = .automatic
            configuration.timeout = .init(connect: .seconds(10))
            // A token endpoint that redirects is not followed: the assertion goes to the URI
            // that was checked (`ProviderEndpoints.allowsTokenURI`) or nowhere.
            configuration.redirectConfiguration = .disallow
            let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
            http.client = client
            return client
        }
    }

    /// Sends one push to APNs at `baseURL` with the provider token `jwt`.
    public func send(_ push: APNsRequest, baseURL: String, jwt: String) async -> AttemptOutcome {
        do {
            let answer = try await pushes.post(baseURL: baseURL, path: push.path, body: ByteBuffer(bytes: push.body),
                                               headerCount: push.headers.count + 2) { headers in
                headers.add(name: "authorization", value: "bearer \(jwt)")
                for header in push.headers { headers.add(name: header.name, value: header.value) }
                headers.add(name: "content-length", value: String(push.body.count))
            }
            return ProviderAnswers.apns(status: answer.status, body: Self.data(answer.body), retryAfter: answer.retryAfter)
        } catch {
            return .retry(reason: "connection: \(error)", retryAfter: nil)
        }
    }

    /// Sends one message to FCM at `baseURL` with the OAuth access token `accessToken`.
    public func send(_ message: FCMRequest, baseURL: String, accessToken: String) async -> AttemptOutcome {
        do {
            let answer = try await pushes.post(baseURL: baseURL, path: message.path, body: ByteBuffer(bytes: message.body),
                                               headerCount: 3) { headers in
                headers.add(name: "authorization", value: "Bearer \(accessToken)")
                headers.add(name: "content-type", value: "application/json")
                headers.add(name: "content-length", value: String(message.body.count))
            }
            return ProviderAnswers.fcm(status: answer.status, body: Self.data(answer.body), retryAfter: answer.retryAfter)
        } catch {
            return .retry(reason: "connection: \(error)", retryAfter: nil)
        }
    }

    private static func data(_ body: ByteBuffer?) -> Data {
        body.map { Data($0.readableBytesView) } ?? Data()
    }

    /// Trades a signed assertion for an access token at the account's token URI (RFC 7523).
    public func exchange(assertion: String, tokenURI: String) async -> AccessTokenAnswer {
        var request = HTTPClientRequest(url: tokenURI)
        request.method = .POST
        request.headers.add(name: "content-type", value: "application/x-www-form-urlencoded")
        request.body = .bytes(ByteBuffer(string: GoogleAssertion.tokenRequestBody(assertion: assertion)))
        do {
            let (status, body, retryAfter) = try await execute(request)
            switch status {
            case 200:
                guard let answer = try? JSONDecoder().decode(TokenAnswer.self, from: body), !answer.access_token.isEmpty else {
                    return .retry(reason: "the token endpoint answered 200 without an access token", retryAfter: nil)
                }
                return .token(answer.access_token, expiresIn: TimeInterval(answer.expires_in ?? 3600))
            case 429, 500...:
                return .retry(reason: "token endpoint: HTTP \(status)", retryAfter: retryAfter.flatMap { ProviderAnswers.parseRetryAfter($0) })
            default:
                let error = (try? JSONValue.parse(body))?["error"]
                var reason = "HTTP \(status)"
                if case .string(let code)? = error { reason = code }
                return .refused(reason: reason)
            }
        } catch {
            return .retry(reason: "token endpoint: \(error)", retryAfter: nil)
        }
    }

    private func execute(_ request: HTTPClientRequest) async throws -> (status: Int, body: Data, retryAfter: String?) {
        guard let http = httpClient() else { throw HTTP2TransportError.shutDown }
        let response = try await http.execute(request, timeout: timeout)
        // Provider answers are small; a larger one is not buffered: the attempt fails (and is retried).
        let body = try await response.body.collect(upTo: 64 * 1024)
        return (Int(response.status.code), Data(body.readableBytesView), response.headers.first(name: "retry-after"))
    }

    private struct TokenAnswer: Decodable {
        var access_token: String
        var expires_in: Int?
    }
}
