import Foundation

/// The key of the per-source limit: the client's address, without its port — the connection's,
/// or, behind a trusted proxy, the one `TrustedProxies` reads from `X-Forwarded-For`.
///
/// An IPv6 client is keyed by its /64 prefix, since one host commonly holds a whole /64 and could
/// otherwise pick a fresh address (and a fresh bucket) per request. Connections without an IP
/// address (a Unix socket, or none known, as in the in-process test client) share one key.
enum SourceAddress: Hashable, Sendable {
    case v4(UInt32)
    case v6Prefix(UInt64)
    case unknown

    /// `bytes`: 4 (IPv4) or 16 (IPv6), in network order; nil: unknown.
    init(_ bytes: [UInt8]?) {
        switch bytes?.count {
        case 4: self = .v4(bytes!.withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) })
        case 16: self = .v6Prefix(bytes!.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) })
        default: self = .unknown
        }
    }
}
