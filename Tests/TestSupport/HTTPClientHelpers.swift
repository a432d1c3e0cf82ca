import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// Small HTTP calls for tests: status, headers and the whole body.
public enum HTTPClientHelpers {
    public struct Answer: Sendable {
        public var status: Int
        public var headers: HTTPHeaders
        public var body: Data

        public func decode<T: Decodable>(_: T.Type) throws -> T { try JSONDecoder().decode(T.self, from: body) }
        public var text: String { String(decoding: body, as: UTF8.self) }
    }

    public static func request(_ method: HTTPMethod, _ url: String, body: Data? = nil, headers: [String: String] = [:],
                               contentType: String? = "application/json") async throws -> Answer {
        var request = HTTPClientRequest(url: url)
        request.method = method
        if let contentType, body != nil { request.headers.add(name: "Content-Type", value: contentType) }
        for (k, v) in headers { request.headers.add(name: k, value: v) }
        if let body { request.body = .bytes(ByteBuffer(bytes: body)) }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        let buffer = try await response.body.collect(upTo: 64 << 20)
        return Answer(status: Int(response.status.code), headers: response.headers, body: Data(buffer: buffer))
    }

    public static func get(_ url: String, headers: [String: String] = [:]) async throws -> Answer {
        try await request(.GET, url, headers: headers)
    }

    /// The value of one series (`name{labels}`) of the `/metrics` of the service at `base`, 0 when
    /// absent.
    public static func metric(_ series: String, of base: String) async throws -> Double {
        let text = try await get("\(base)/metrics").text
        for line in text.split(separator: "\n") where line.hasPrefix(series + " ") {
            return Double(line.split(separator: " ").last ?? "") ?? 0
        }
        return 0
    }

    public static func post<T: Encodable>(_ url: String, json: T, headers: [String: String] = [:]) async throws -> Answer {
        try await request(.POST, url, body: try JSONEncoder().encode(json), headers: headers)
    }
}
