import Foundation
import Hummingbird
import HummingbirdTesting
@testable import Ingest
import Logging
import XCTest

/// `PUSHLINE_TRUSTED_PROXIES`: `X-Forwarded-For` names the per-source limit's client only as far
/// as trusted proxies wrote it (the rightmost address that is not a trusted proxy), and only on a
/// connection from a trusted proxy.
final class TrustedProxiesTests: XCTestCase {
    private let proxies = try! TrustedProxies(parsing: "10.0.0.0/8, 127.0.0.1, fd00::/8")

    private func address(_ text: String) -> [UInt8] { TrustedProxies.parseAddress(text)! }

    func testWithoutTrustedProxiesTheHeaderIsNeverRead() {
        XCTAssertEqual(TrustedProxies.none.client(peer: address("203.0.113.9"), forwardedFor: ["198.51.100.1"]),
                       address("203.0.113.9"))
    }

    func testAConnectionFromAnUntrustedAddressIsTheClientWhateverItsHeaderSays() {
        XCTAssertEqual(proxies.client(peer: address("203.0.113.9"), forwardedFor: ["198.51.100.1"]), address("203.0.113.9"))
    }

    func testBehindTrustedProxiesTheRightmostUntrustedAddressIsTheClient() {
        // The client wrote a fake first entry; the trusted proxies appended what they saw.
        let client = proxies.client(peer: address("10.1.2.3"), forwardedFor: ["6.6.6.6, 198.51.100.7", "10.9.9.9"])
        XCTAssertEqual(client, address("198.51.100.7"))
        XCTAssertEqual(proxies.client(peer: address("fd00::1"), forwardedFor: ["[2001:db8::5]:443"]), address("2001:db8::5"))
        XCTAssertEqual(proxies.client(peer: address("127.0.0.1"), forwardedFor: ["198.51.100.7:5123"]), address("198.51.100.7"))
    }

    func testWhenEveryEntryIsTrustedOrOneIsNotAnAddressTheLastTrustedAddressSeenIsTheClient() {
        XCTAssertEqual(proxies.client(peer: address("10.0.0.1"), forwardedFor: ["10.0.0.2"]), address("10.0.0.2"))
        XCTAssertEqual(proxies.client(peer: address("10.0.0.1"), forwardedFor: []), address("10.0.0.1"))
        XCTAssertEqual(proxies.client(peer: address("10.0.0.1"), forwardedFor: ["198.51.100.7, garbage, 10.0.0.2"]), address("10.0.0.2"))
    }

    func testRangesMatchByPrefixAndAnIPv4MappedPeerCountsAsIPv4() {
        let ranges = try! TrustedProxies(parsing: "192.168.0.0/23")
        XCTAssertTrue(ranges.trusts(address("192.168.1.255")))
        XCTAssertFalse(ranges.trusts(address("192.168.2.0")))
        XCTAssertTrue(ranges.trusts(address("::ffff:192.168.0.9")))
        XCTAssertTrue(try! TrustedProxies(parsing: "0.0.0.0/0").trusts(address("8.8.8.8")))
        XCTAssertFalse(try! TrustedProxies(parsing: "0.0.0.0/0").trusts(address("2001:db8::1")))
    }

    // MARK: over real sockets (every connection comes from 127.0.0.1)

    func testBehindATrustedProxyEachForwardedClientHasItsOwnBucketAndAnUntrustedHeaderIsIgnored() async throws {
        let trusted = try await statuses(trusting: "127.0.0.1/32")
        XCTAssertEqual(trusted["198.51.100.1"], [.ok, .ok, .tooManyRequests])
        XCTAssertEqual(trusted["198.51.100.2"], [.ok, .ok, .tooManyRequests], "another forwarded client is not throttled by the first")

        let untrusted = try await statuses(trusting: "10.0.0.0/8")
        XCTAssertEqual(untrusted["198.51.100.1"], [.ok, .ok, .tooManyRequests])
        XCTAssertEqual(untrusted["198.51.100.2"], [.tooManyRequests, .tooManyRequests, .tooManyRequests],
                       "the header of an untrusted peer names nobody: one bucket for the connection's address")
    }

    /// Three requests as each of two forwarded clients, in turn, through the per-source limit with
    /// a burst of 2 that does not refill within a test.
    private func statuses(trusting ranges: String) async throws -> [String: [HTTPResponse.Status]] {
        let router = Router(context: IngestRequestContext.self)
        router.add(middleware: RequestMiddleware(metrics: IngestMetrics(), retryAfterSeconds: 1))
        router.add(middleware: SourceRateLimitMiddleware(buckets: TokenBuckets(perSecond: 0.001, burst: 2, name: "source"),
                                                         trustedProxies: try TrustedProxies(parsing: ranges), metrics: IngestMetrics()))
        router.get("probe") { _, _ in HTTPResponse.Status.ok }
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        return try await app.test(.live) { client in
            var statuses: [String: [HTTPResponse.Status]] = [:]
            for forwarded in ["198.51.100.1", "198.51.100.2"] {
                for _ in 0..<3 {
                    let response = try await client.execute(uri: "/probe", method: .get, headers: [.xForwardedFor: forwarded])
                    statuses[forwarded, default: []].append(response.status)
                }
            }
            return statuses
        }
    }
}
