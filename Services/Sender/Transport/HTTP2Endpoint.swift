import Foundation
import NIOCore

/// Where the requests of one base URL go: what to connect to, the `:authority`, the name to
/// present in TLS (SNI; none for an IP address, which the certificate is then checked against)
/// and the base URL's path, put before each request's.
struct HTTP2Endpoint: Sendable, Hashable {
    var host: String
    var port: Int
    var authority: String
    var serverName: String?
    var pathPrefix: String

    init(baseURL: String) throws {
        guard let url = URLComponents(string: baseURL), url.scheme?.lowercased() == "https",
              var host = url.host, !host.isEmpty else { throw HTTP2TransportError.unsupportedURL(baseURL) }
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        self.host = host
        port = url.port ?? 443
        let hostText = host.contains(":") ? "[\(host)]" : host
        authority = url.port.map { "\(hostText):\($0)" } ?? hostText
        serverName = (try? SocketAddress(ipAddress: host, port: 0)) == nil ? host : nil
        var path = url.percentEncodedPath
        while path.hasSuffix("/") { path.removeLast() }
        pathPrefix = path
    }
}
