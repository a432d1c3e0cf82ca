import Contracts
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Decides, before each webhook or callback attempt, whether its URL may be contacted.
///
/// Webhook and callback URLs come from app registrations, so without this check anyone who can
/// register an app could make the processor POST into the private network it runs in. When
/// private targets are denied (the default), the URL must be http(s) and every address its host
/// resolves to must be public. A name is resolved once: the decision names the address that was
/// checked (`pinned`), and a plain `http` attempt connects to exactly that address, so a hostile
/// name server cannot answer a public address to the check and a private one to the connection
/// (DNS rebinding). An `https` attempt connects by name, and the server must prove that name
/// with its certificate, which a private service reached by rebinding cannot.
struct WebhookTargetPolicy: Sendable {
    /// `PUSHLINE_WEBHOOK_ALLOW_PRIVATE_TARGETS`: true in the local stack and tests, whose
    /// receivers listen on loopback.
    var allowPrivateTargets = false
    /// Resolves a host name to its addresses (getaddrinfo; tests substitute a name server).
    var resolver: @Sendable (String) throws -> [[UInt8]] = { try WebhookTargetPolicy.resolve($0) }

    init(allowPrivateTargets: Bool = false) {
        self.allowPrivateTargets = allowPrivateTargets
    }

    enum Decision: Equatable, Sendable {
        case allowed
        /// Allowed, and the host name resolved to these addresses, all checked: connect to the first.
        case pinned([[UInt8]])
        /// The attempt cannot succeed under this policy; the reason is recorded as its error.
        case refused(String)
    }

    /// Thrown when the host does not resolve: an ordinary failed attempt, retried later.
    struct LookupFailed: Error, CustomStringConvertible {
        var description: String
    }

    func check(_ url: String) async throws -> Decision {
        if allowPrivateTargets { return .allowed }
        guard let parsed = URL(string: url), let scheme = parsed.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
            return .refused("target \(RedactedURL.string(url)) is not an http(s) URL")
        }
        guard let rawHost = parsed.host, !rawHost.isEmpty else { return .refused("target \(RedactedURL.string(url)) has no host") }
        // An IPv6 literal without its brackets and zone.
        let host = String(rawHost.trimmingCharacters(in: CharacterSet(charactersIn: "[]")).prefix { $0 != "%" })
        let addresses: [[UInt8]]
        if let literal = Self.parseLiteral(host) {
            addresses = [literal]
        } else {
            // getaddrinfo blocks: run it on a thread of its own, not on the concurrency pool.
            addresses = try await withCheckedThrowingContinuation { continuation in
                let resolver = self.resolver
                Thread.detachNewThread { continuation.resume(with: Result { try resolver(host) }) }
            }
        }
        for address in addresses {
            if let kind = Self.forbiddenKind(address) {
                let shown = Self.format(address)
                let target = shown == host ? shown : "\(shown) (\(host))"
                let article = "aeiou".contains(kind.lowercased().first ?? "x") ? "an" : "a"
                return .refused("target \(target) is \(article) \(kind) address; set PUSHLINE_WEBHOOK_ALLOW_PRIVATE_TARGETS=true to allow")
            }
        }
        return Self.parseLiteral(host) == nil && !addresses.isEmpty ? .pinned(addresses) : .allowed
    }

    /// `url` with its host replaced by `address` (IPv6 in brackets), and the `Host` header the
    /// original URL implies, for connecting to a checked address; nil when `url` is not plain
    /// `http` (TLS connects by name) or cannot be taken apart.
    static func pinnedRequest(_ url: String, to address: [UInt8]) -> (url: String, host: String)? {
        guard var components = URLComponents(string: url), components.scheme?.lowercased() == "http",
              let host = components.host, !host.isEmpty else { return nil }
        let hostHeader = components.port.map { "\(host):\($0)" } ?? host
        let literal = format(address)
        components.host = address.count == 16 ? "[\(literal)]" : literal
        guard let pinned = components.string else { return nil }
        return (pinned, hostHeader)
    }

    /// Why `address` (4 or 16 bytes) must not be contacted, or nil when it is public.
    ///
    /// Every block of IANA's IPv4 and IPv6 special-purpose address registries that is not
    /// globally reachable is refused, and so are the few globally reachable ones that no
    /// receiver lives in (protocol anycast, deprecated relays): a webhook has no business there.
    static func forbiddenKind(_ a: [UInt8]) -> String? {
        if a.count == 4 {
            switch (a[0], a[1], a[2]) {
            case (0, _, _): return "unspecified"
            case (127, _, _): return "loopback"
            case (10, _, _), (172, 16...31, _), (192, 168, _): return "private"
            case (169, 254, _): return "link-local"
            case (100, 64...127, _): return "carrier-grade NAT"
            // 192.0.0.0/24: IETF protocol assignments (DS-Lite, NAT64 discovery, PCP and TURN anycast).
            case (192, 0, 0): return "IETF protocol"
            case (192, 0, 2), (198, 51, 100), (203, 0, 113): return "documentation"
            case (198, 18...19, _): return "benchmarking"
            // 192.88.99.0/24: the 6to4 relay anycast, deprecated (RFC 7526).
            case (192, 88, 99): return "6to4 relay"
            case (224...239, _, _): return "multicast"
            case (255, 255, 255) where a[3] == 255: return "broadcast"
            case (240...255, _, _): return "reserved"
            default: return nil
            }
        }
        guard a.count == 16 else { return "unrecognised" }
        let zeros = a[0..<10].allSatisfy { $0 == 0 }
        if zeros && a[10...15].allSatisfy({ $0 == 0 }) { return "unspecified" }
        if zeros && a[10...14].allSatisfy({ $0 == 0 }) && a[15] == 1 { return "loopback" }
        // IPv4-mapped (::ffff:a.b.c.d) and IPv4-compatible (::a.b.c.d): judged as the IPv4 address.
        if zeros && ((a[10] == 0xff && a[11] == 0xff) || (a[10] == 0 && a[11] == 0)) { return forbiddenKind(Array(a[12...15])) }
        // NAT64 (64:ff9b::/96) and 6to4 (2002::/16) carry an IPv4 address a gateway forwards to.
        if a[0...11] == [0x00, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0] { return forbiddenKind(Array(a[12...15])) }
        // 64:ff9b:1::/48: NAT64 for a network's own use, which may lead anywhere inside it.
        if a[0...5] == [0x00, 0x64, 0xff, 0x9b, 0x00, 0x01] { return "local-use NAT64" }
        if a[0] == 0x20 && a[1] == 0x02 { return forbiddenKind(Array(a[2...5])) }
        // 2001::/32 is Teredo, whose addresses hide an IPv4 address a relay forwards to; the rest
        // of 2001::/23 are IETF protocol assignments (benchmarking, ORCHID, anycast).
        if a[0...3] == [0x20, 0x01, 0x00, 0x00] { return "Teredo" }
        if a[0] == 0x20 && a[1] == 0x01 && a[2] & 0xfe == 0x00 { return "IETF protocol" }
        if a[0...3] == [0x20, 0x01, 0x0d, 0xb8] || (a[0] == 0x3f && a[1] == 0xff && a[2] & 0xf0 == 0) { return "documentation" }
        if a[0...7] == [0x01, 0x00, 0, 0, 0, 0, 0, 0] { return "discard-only" }
        if a[0] == 0x5f && a[1] == 0x00 { return "segment-routing (SRv6)" }
        if a[0] & 0xfe == 0xfc { return "private" }
        if a[0] == 0xfe && a[1] & 0xc0 == 0x80 { return "link-local" }
        // fec0::/10: site-local, deprecated (RFC 3879) but still routed inside some networks.
        if a[0] == 0xfe && a[1] & 0xc0 == 0xc0 { return "site-local" }
        if a[0] == 0xff { return "multicast" }
        return nil
    }

    /// The bytes of an IPv4 or IPv6 literal, or nil for a name.
    static func parseLiteral(_ host: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, host, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, host, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
        return nil
    }

    static func format(_ address: [UInt8]) -> String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let family = address.count == 4 ? AF_INET : AF_INET6
        let ok = address.withUnsafeBytes { inet_ntop(family, $0.baseAddress, &buffer, socklen_t(buffer.count)) } != nil
        return ok ? String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "?"
    }

    /// Every address `host` resolves to (blocking).
    static func resolve(_ host: String) throws -> [[UInt8]] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        #if canImport(Glibc)
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
        hints.ai_socktype = SOCK_STREAM
        #endif
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, nil, &hints, &list)
        guard status == 0, let first = list else {
            throw LookupFailed(description: "cannot resolve \(host): \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(first) }
        var out: [[UInt8]] = []
        var next: UnsafeMutablePointer<addrinfo>? = first
        while let info = next {
            if let sockaddr = info.pointee.ai_addr {
                switch info.pointee.ai_family {
                case AF_INET:
                    var a = sockaddr.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
                    out.append(withUnsafeBytes(of: &a) { Array($0) })
                case AF_INET6:
                    var a = sockaddr.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_addr }
                    out.append(withUnsafeBytes(of: &a) { Array($0) })
                default: break
                }
            }
            next = info.pointee.ai_next
        }
        guard !out.isEmpty else { throw LookupFailed(description: "cannot resolve \(host): no addresses") }
        return out
    }
}
