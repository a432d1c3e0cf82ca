import Foundation
import NIOCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The proxies whose `X-Forwarded-For` ingest believes (`PUSHLINE_TRUSTED_PROXIES`): address
/// ranges in CIDR notation (`10.0.0.0/8`, `fd00::/8`; a bare address is one host).
///
/// A client can write anything into `X-Forwarded-For`, so the header names the client only as
/// far as trusted proxies appended to it. `client(peer:forwardedFor:)` therefore reads it only
/// when the connection comes from a trusted proxy, and walks it from the right: the first
/// address that is not a trusted proxy is the client. Without ranges (the default) the header is
/// never read and the connection's address is the client.
public struct TrustedProxies: Sendable, Equatable {
    /// One range: the network's bytes (4 or 16) and its prefix length.
    struct Range: Sendable, Equatable {
        var network: [UInt8]
        var prefixLength: Int

        func contains(_ address: [UInt8]) -> Bool {
            guard address.count == network.count else { return false }
            var bits = prefixLength
            for (a, n) in zip(address, network) where bits > 0 {
                let mask: UInt8 = bits >= 8 ? 0xFF : ~(0xFF >> UInt8(bits))
                guard a & mask == n & mask else { return false }
                bits -= 8
            }
            return true
        }
    }

    let ranges: [Range]

    public static let none = TrustedProxies(ranges: [])

    init(ranges: [Range]) {
        self.ranges = ranges
    }

    /// Parses a comma-separated list of CIDR ranges (spaces allowed); throws naming the first
    /// entry that is not one.
    public init(parsing list: String) throws(InvalidRange) {
        var ranges: [Range] = []
        for entry in list.split(separator: ",") {
            let text = entry.trimmingCharacters(in: .whitespaces)
            guard !text.isEmpty else { continue }
            let parts = text.split(separator: "/", omittingEmptySubsequences: false)
            guard parts.count <= 2, let address = Self.parseAddress(String(parts[0])) else { throw InvalidRange(entry: text) }
            let maxLength = address.count * 8
            var prefixLength = maxLength
            if parts.count == 2 {
                guard let length = Int(parts[1]), (0...maxLength).contains(length) else {
                    throw InvalidRange(entry: text)
                }
                prefixLength = length
            }
            ranges.append(Range(network: address, prefixLength: prefixLength))
        }
        self.init(ranges: ranges)
    }

    /// An entry of the list that is not an address range.
    public struct InvalidRange: Error, Equatable, CustomStringConvertible {
        public var entry: String
        public var description: String {
            "\"\(entry)\" is not an address range: write a CIDR range (10.0.0.0/8, fd00::/8) or an address, comma-separated"
        }
    }

    public var isEmpty: Bool { ranges.isEmpty }

    func trusts(_ address: [UInt8]) -> Bool {
        ranges.contains { $0.contains(address) }
    }

    /// The client's address: the connection's `peer`, unless it is a trusted proxy, in which case
    /// the rightmost address of `forwardedFor` (the `X-Forwarded-For` values in order) that is not
    /// a trusted proxy. An entry that is not an address stops the walk (what lies left of it was
    /// not written by a trusted proxy), and the last trusted address seen is the client then, as
    /// it is when every entry is trusted.
    func client(peer: [UInt8]?, forwardedFor: [String]) -> [UInt8]? {
        guard var client = peer, !ranges.isEmpty, trusts(client) else { return peer }
        let entries = forwardedFor.flatMap { $0.split(separator: ",") }
        for entry in entries.reversed() {
            guard let address = Self.parseForwarded(entry.trimmingCharacters(in: .whitespaces)) else { break }
            client = address
            if !trusts(address) { break }
        }
        return client
    }

    /// The bytes of an address (IPv4-mapped IPv6 as its IPv4 address), nil when not connected
    /// over IP.
    static func bytes(of address: SocketAddress?) -> [UInt8]? {
        switch address {
        case .v4(let address):
            return withUnsafeBytes(of: address.address.sin_addr) { Array($0) }
        case .v6(let address):
            return unmapped(withUnsafeBytes(of: address.address.sin6_addr) { Array($0) })
        case .unixDomainSocket, nil:
            return nil
        }
    }

    /// An IPv4 or IPv6 address in text, as bytes (IPv4-mapped IPv6 as its IPv4 address).
    static func parseAddress(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 { return unmapped(withUnsafeBytes(of: v6) { Array($0) }) }
        return nil
    }

    /// An `X-Forwarded-For` entry: an address, an IPv6 address in brackets, either with a port.
    private static func parseForwarded(_ text: String) -> [UInt8]? {
        if let address = parseAddress(text) { return address }
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
            return parseAddress(String(text[text.index(after: text.startIndex)..<close]))
        }
        if let colon = text.firstIndex(of: ":"), text[text.index(after: colon)...].allSatisfy(\.isNumber) {
            return parseAddress(String(text[..<colon]))
        }
        return nil
    }

    private static func unmapped(_ bytes: [UInt8]) -> [UInt8] {
        guard bytes.count == 16, bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF else { return bytes }
        return Array(bytes[12..<16])
    }
}
