import AsyncHTTPClient
import Crypto
import Foundation
import NIOHTTP1

/// Requests to one bucket of the durable broker's object store (`scripts/s3-store`), signed as
/// Tansu signs them (AWS Signature Version 4, path-style, the payload's SHA-256 in
/// `x-amz-content-sha256`), with the store's one identity.
public struct S3TestClient: Sendable {
    /// A listing the store did not answer with 200.
    public struct ListingError: Error {
        public var status: Int
        public var body: String
    }

    public let endpoint: String
    public let bucket: String
    private let accessKey = "pushline"
    private let secretKey = "pushline"
    private let region = "eu-west-2"

    /// `endpoint` as `http://127.0.0.1:PORT`.
    public init(endpoint: String, bucket: String) {
        self.endpoint = endpoint
        self.bucket = bucket
    }

    /// Creates the bucket; `true` once it exists (created now or before).
    public func createBucket() async throws -> Bool {
        [200, 409].contains(try await request(.PUT, key: nil).status)
    }

    public func put(_ key: String, _ body: Data, headers: [String: String] = [:]) async throws -> HTTPClientHelpers.Answer {
        try await request(.PUT, key: key, body: body, headers: headers)
    }

    public func get(_ key: String) async throws -> HTTPClientHelpers.Answer {
        try await request(.GET, key: key)
    }

    /// Every key under `prefix`, page after page of at most `pageSize` keys (ListObjectsV2).
    public func keys(under prefix: String, pageSize: Int = 1000) async throws -> [String] {
        var keys: [String] = []
        var token: String?
        repeat {
            var query = [("list-type", "2"), ("max-keys", String(pageSize)), ("prefix", prefix)]
            if let token { query.append(("continuation-token", token)) }
            let answer = try await request(.GET, key: nil, query: query)
            guard answer.status == 200 else { throw ListingError(status: answer.status, body: answer.text) }
            keys += Self.values(of: "Key", in: answer.text)
            token = Self.values(of: "NextContinuationToken", in: answer.text).first
        } while token != nil
        return keys
    }

    public func request(_ method: HTTPMethod, key: String?, query: [(String, String)] = [], body: Data = Data(),
                        headers: [String: String] = [:]) async throws -> HTTPClientHelpers.Answer {
        let path = "/" + bucket + (key.map { "/" + Self.encode($0, keepingSlashes: true) } ?? "")
        let canonicalQuery = query.map { (Self.encode($0.0), Self.encode($0.1)) }.sorted { $0 < $1 }
            .map { "\($0.0)=\($0.1)" }.joined(separator: "&")
        var signed = headers
        for (name, value) in signatureHeaders(method, path: path, query: canonicalQuery, body: body) { signed[name] = value }
        return try await HTTPClientHelpers.request(method, endpoint + path + (canonicalQuery.isEmpty ? "" : "?" + canonicalQuery),
                                                   body: method == .PUT ? body : nil, headers: signed,
                                                   contentType: "application/octet-stream")
    }

    /// `Authorization`, `x-amz-date` and `x-amz-content-sha256` for a request (host and those two signed).
    private func signatureHeaders(_ method: HTTPMethod, path: String, query: String, body: Data) -> [String: String] {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
        let stamp = formatter.string(from: Date())
        let day = String(stamp.prefix(8))
        let payload = Self.hex(SHA256.hash(data: body))
        let host = endpoint.replacingOccurrences(of: "http://", with: "")
        let canonicalHeaders = "host:\(host)\nx-amz-content-sha256:\(payload)\nx-amz-date:\(stamp)\n"
        let signedHeaders = "host;x-amz-content-sha256;x-amz-date"
        let canonicalRequest = [method.rawValue, path, query, canonicalHeaders, signedHeaders, payload].joined(separator: "\n")
        let scope = "\(day)/\(region)/s3/aws4_request"
        let toSign = ["AWS4-HMAC-SHA256", stamp, scope, Self.hex(SHA256.hash(data: Data(canonicalRequest.utf8)))].joined(separator: "\n")
        var key = SymmetricKey(data: Data("AWS4\(secretKey)".utf8))
        for part in [day, region, "s3", "aws4_request"] {
            key = SymmetricKey(data: Data(HMAC<SHA256>.authenticationCode(for: Data(part.utf8), using: key)))
        }
        let signature = Self.hex(HMAC<SHA256>.authenticationCode(for: Data(toSign.utf8), using: key))
        return ["Authorization": "AWS4-HMAC-SHA256 Credential=\(accessKey)/\(scope), SignedHeaders=\(signedHeaders), Signature=\(signature)",
                "x-amz-date": stamp, "x-amz-content-sha256": payload]
    }

    /// SigV4's URI encoding: every byte but letters, digits and `-._~` (and `/` in a path) as %XX.
    private static func encode(_ text: String, keepingSlashes: Bool = false) -> String {
        var allowed = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~")
        if keepingSlashes { allowed.insert("/") }
        return text.addingPercentEncoding(withAllowedCharacters: allowed)!
    }

    /// The hex MD5 of `data`: an S3 ETag of an object written in one request.
    public static func md5(_ data: Data) -> String {
        hex(Insecure.MD5.hash(data: data))
    }

    private static func hex<D: Sequence>(_ bytes: D) -> String where D.Element == UInt8 {
        bytes.map { String(format: "%02x", $0) }.joined()
    }

    /// The text of every `<tag>…</tag>` in a listing, XML entities decoded.
    private static func values(of tag: String, in text: String) -> [String] {
        var found: [String] = []
        var rest = text[...]
        while let open = rest.range(of: "<\(tag)>"), let close = rest.range(of: "</\(tag)>", range: open.upperBound..<rest.endIndex) {
            found.append(String(rest[open.upperBound..<close.lowerBound])
                .replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
                .replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&apos;", with: "'")
                .replacingOccurrences(of: "&amp;", with: "&"))
            rest = rest[close.upperBound...]
        }
        return found
    }
}
