import Foundation
import Hummingbird
import HummingbirdTesting
import XCTest
@testable import Ingest
#if canImport(Glibc)
import Glibc
#endif

/// A client cannot hold an ingest connection by sending slowly: a connection that sends only
/// part of a request head and then nothing is closed by the idle timeout, and one that trickles
/// its body below the idle timeout is closed by the request-read timeout. Real sockets.
final class ConnectionTimeoutTests: XCTestCase {
    /// A blocking TCP connection to 127.0.0.1:`port`.
    private final class Connection {
        let fd: Int32

        init(port: Int) throws {
            fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard connected == 0 else { throw TestFailure("connect failed: \(errno)") }
        }

        deinit { close(fd) }

        func send(_ text: String) {
            _ = text.utf8CString.withUnsafeBufferPointer { Glibc.send(fd, $0.baseAddress, $0.count - 1, Int32(MSG_NOSIGNAL)) }
        }

        /// True once the server closed the connection (a read returns end of file or an error).
        var isClosedByServer: Bool {
            var byte: UInt8 = 0
            let n = recv(fd, &byte, 1, Int32(MSG_DONTWAIT))
            return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
        }
    }

    private func withLiveIngest(idleMs: Int, readMs: Int, _ body: @escaping @Sendable (Int) async throws -> Void) async throws {
        var harness = Harness()
        harness.configuration.idleTimeoutMs = idleMs
        harness.configuration.requestReadTimeoutMs = readMs
        let app = buildApplication(configuration: harness.configuration, publisher: harness.publisher, store: harness.store,
                                   metrics: TestMetrics.registry, logger: .init(label: "test"))
        try await app.test(.live) { client in
            guard let port = client.port else { throw TestFailure("no port") }
            try await body(port)
        }
    }

    func testAConnectionThatStopsInsideARequestHeadIsClosed() async throws {
        try await withLiveIngest(idleMs: 300, readMs: 60_000) { port in
            let connection = try Connection(port: port)
            connection.send("POST /noop HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Ty")
            try await Self.eventually("the server closes the silent connection") { connection.isClosedByServer }
        }
    }

    func testABodyTrickledBelowTheIdleTimeoutIsCutOffByTheReadTimeout() async throws {
        try await withLiveIngest(idleMs: 1_000, readMs: 500) { port in
            let connection = try Connection(port: port)
            connection.send("POST /noop HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n")
            var closed = false
            for _ in 0..<100 where !closed {
                connection.send("a")
                try await Task.sleep(for: .milliseconds(100))
                closed = connection.isClosedByServer
            }
            XCTAssertTrue(closed, "a byte every 100 ms never lets the idle timeout fire; the read timeout must")
        }
    }

    private static func eventually(_ what: String, timeout: Duration = .seconds(20), _ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if condition() { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw TestFailure("timed out waiting until \(what)")
    }
}

private struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
