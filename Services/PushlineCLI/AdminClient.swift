import AsyncHTTPClient
import Contracts
import Foundation
import NIOCore
import NIOHTTP1
import WireCodec

/// Calls the ingest's admin API (`/admin/v1/…`) with the admin token and turns every answer
/// that is not the expected one into a `CLIError` an operator can act on. Shapes are the
/// `AdminAPI` types of Contracts, the ones ingest itself answers with.
struct AdminClient: Sendable {
    let baseURL: String
    let adminToken: String

    /// What a refused call was about, for the 404 message.
    enum Subject {
        case app(UUID)
        case token(app: UUID, token: UUID)
        /// `GET /admin/v1/apps`, which ingest versions before it answer 404.
        case appList
        case adminToken(UUID)
        /// A call of an app's routes with one of its API tokens (`pushline send`, `audiences`, `devices`).
        case apiToken
        case none
    }

    enum Method: String {
        case GET, POST, PUT, PATCH, DELETE
    }

    /// Sends `body` as JSON and returns the body of an answer with status `expected`.
    func call(_ method: Method, _ path: String, body: some Encodable, expected: Int, subject: Subject,
              headers: [String: String] = [:]) async throws -> Data {
        try await call(method, path, json: try WireJSON.encoder().encode(body), expected: expected, subject: subject, headers: headers)
    }

    /// Sends the request and returns the body of an answer with status `expected`.
    func call(_ method: Method, _ path: String, json: Data? = nil, expected: Int, subject: Subject,
              headers extra: [String: String] = [:]) async throws -> Data {
        var request = HTTPClientRequest(url: baseURL + path)
        request.method = HTTPMethod(rawValue: method.rawValue)
        request.headers.add(name: "Authorization", value: "Bearer \(adminToken)")
        for (name, value) in extra { request.headers.add(name: name, value: value) }
        request.headers.add(name: "Accept", value: "application/json")
        if let json {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: json))
        }
        let status: Int
        let data: Data
        let headers: HTTPHeaders
        let client = Self.makeHTTPClient()
        do {
            let response = try await client.execute(request, timeout: .seconds(30))
            status = Int(response.status.code)
            headers = response.headers
            data = Data(buffer: try await response.body.collect(upTo: 64 << 20))
            try? await client.shutdown()
        } catch {
            try? await client.shutdown()
            throw CLIError("cannot reach ingest at \(baseURL): \(Self.reason(error))")
        }
        guard status != expected else { return data }
        throw Self.failure(status: status, body: data, retryAfter: headers.first(name: "Retry-After"), subject: subject)
    }

    /// The operating system's words for a socket error ("Connection refused"), else the error.
    static func reason(_ error: any Error) -> String {
        if let error = error as? IOError { return String(cString: strerror(error.errnoCode)) }
        return "\(error)"
    }

    /// A client of its own rather than `HTTPClient.shared`: that one retries a refused connection
    /// until the request's deadline, and an operator who mistyped the URL should know at once.
    static func makeHTTPClient() -> HTTPClient {
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow,
                                                     timeout: .init(connect: .seconds(10), read: .seconds(30)))
        configuration.connectionPool.retryConnectionEstablishment = false
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }

    func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        do {
            return try WireJSON.decoder().decode(type, from: data)
        } catch {
            throw CLIError("unexpected answer from ingest at \(baseURL): \(String(decoding: data.prefix(200), as: UTF8.self))")
        }
    }

    /// The one-line message for an unexpected answer.
    static func failure(status: Int, body: Data, retryAfter: String?, subject: Subject) -> CLIError {
        let problem = try? JSONDecoder().decode(Problem.self, from: body)
        let detail = problem.map { $0.error + ($0.field.map { " (field \($0))" } ?? "") + ($0.code.map { " [\($0.rawValue)]" } ?? "") }
            ?? String(decoding: body.prefix(200), as: UTF8.self)
        switch status {
        case 401 where subject.isAPIToken, 403 where subject.isAPIToken:
            return CLIError("the API token was refused (HTTP \(status)): \(detail); check PUSHLINE_API_TOKEN or --token")
        case 401, 403:
            return CLIError("the admin token was refused (HTTP \(status)): check PUSHLINE_ADMIN_TOKEN or --admin-token")
        case 404:
            switch subject {
            case .token(let app, let token) where problem?.field == "tokenId":
                return CLIError("unknown API token \(token) of app \(app) (HTTP 404)")
            case .app(let app), .token(let app, _):
                return CLIError("unknown app \(app) (HTTP 404: \(detail))")
            case .adminToken(let id):
                return CLIError("unknown admin token \(id.lowercasedString) (HTTP 404)")
            case .appList:
                return CLIError("this ingest does not list apps (HTTP 404: \(detail)); it predates GET /admin/v1/apps")
            case .none, .apiToken:
                return CLIError("not found (HTTP 404): \(detail)")
            }
        case 503:
            // Either the broker did not take the command, or no processor applied it in time (the
            // detail says which, and what was written).
            return CLIError("ingest could not complete the change (HTTP 503\(retryAfter.map { ", retry after \($0)s" } ?? "")): \(detail)")
        default:
            return CLIError("ingest refused the request (HTTP \(status)): \(detail)")
        }
    }
}

extension AdminClient.Subject {
    var isAPIToken: Bool { if case .apiToken = self { true } else { false } }
}
