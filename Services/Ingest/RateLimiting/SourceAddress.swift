import Foundation
import NIOCore

/// The key of the per-source limit: the client address of the connection, without its port.
///
/// An IPv6 client is keyed by its /64 prefix, since one host commonly holds a whole /64 and could
/// otherwise pick a fresh address (and a fresh bucket) per request. Connections without an IP
/// address (a Unix socket, or none known, as in the in-process test client) share one key.
/// `X-Forwarded-For` is never read: a client could write any address into it.
enum SourceAddress: Hashable, Sendable {
    case v4(UInt32)
    case v6Prefix(UInt64)
    case unknown

    init(_ address: SocketAddress?) {
        switch address {
        case .v4(let address):
            self = .v4(address.address.sin_addr.s_addr)
        case .v6(let address):
            self = .v6Prefix(withUnsafeBytes(of: address.address.sin6_addr) { $0.loadUnaligned(as: UInt64.self) })
        case .unixDomainSocket, nil:
            self = .unknown
        }
    }
}
