import XCTest
@testable import Processor
@testable import Handlers
@testable import ProcessorServer

/// Which webhook and callback targets the production policy refuses, and why.
final class WebhookTargetPolicyTests: XCTestCase {
    private let denying = WebhookTargetPolicy(allowPrivateTargets: false)

    func testAddressesAreClassifiedAsPublicOrByTheirForbiddenKind() throws {
        let table: [(String, String?)] = [
            ("8.8.8.8", nil),
            ("93.184.216.34", nil),
            ("172.15.255.255", nil),
            ("172.16.0.1", "private"),
            ("172.31.255.255", "private"),
            ("172.32.0.1", nil),
            ("10.0.0.5", "private"),
            ("192.168.1.1", "private"),
            ("192.169.0.1", nil),
            ("127.0.0.1", "loopback"),
            ("127.255.0.9", "loopback"),
            ("169.254.169.254", "link-local"),
            ("100.63.255.255", nil),
            ("100.64.0.1", "carrier-grade NAT"),
            ("100.127.255.255", "carrier-grade NAT"),
            ("100.128.0.1", nil),
            ("0.0.0.0", "unspecified"),
            ("224.0.0.1", "multicast"),
            ("239.255.255.250", "multicast"),
            ("255.255.255.255", "broadcast"),
            ("2606:4700:4700::1111", nil),
            ("::1", "loopback"),
            ("::", "unspecified"),
            ("fc00::1", "private"),
            ("fd12:3456::1", "private"),
            ("fe80::1", "link-local"),
            ("febf::1", "link-local"),
            ("fec0::1", "site-local"),
            ("febf:ffff::1", "link-local"),
            ("ff02::1", "multicast"),
            ("::ffff:127.0.0.1", "loopback"),
            ("::ffff:10.0.0.5", "private"),
            ("::ffff:8.8.8.8", nil),
            ("::127.0.0.1", "loopback"),
            ("::192.168.0.1", "private"),
            ("64:ff9b::127.0.0.1", "loopback"),
            ("64:ff9b::a9fe:a9fe", "link-local"),
            ("64:ff9b::8.8.8.8", nil),
            ("64:ff9b:1::8.8.8.8", "local-use NAT64"),
            ("64:ff9b:2::8.8.8.8", nil),
            ("2002:7f00:1::", "loopback"),
            ("2002:c0a8:101::1", "private"),
            ("2002:808:808::1", nil),
            // IANA special-purpose blocks that are not globally reachable, and their neighbours.
            ("192.0.0.1", "IETF protocol"),
            ("192.0.0.170", "IETF protocol"),
            ("192.0.1.1", nil),
            ("192.0.2.1", "documentation"),
            ("198.51.100.7", "documentation"),
            ("203.0.113.9", "documentation"),
            ("198.17.255.255", nil),
            ("198.18.0.1", "benchmarking"),
            ("198.19.255.255", "benchmarking"),
            ("198.20.0.1", nil),
            ("192.88.99.1", "6to4 relay"),
            ("223.255.255.255", nil),
            ("240.0.0.1", "reserved"),
            ("255.255.255.254", "reserved"),
            ("2001::1", "Teredo"),
            ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo"),
            ("2001:2::1", "IETF protocol"),
            ("2001:1ff::1", "IETF protocol"),
            ("2001:200::1", nil),
            ("2001:db8::1", "documentation"),
            ("3fff::1", "documentation"),
            ("3fff:fff::1", "documentation"),
            ("3ffe::1", nil),
            ("3fff:1000::1", nil),
            ("100::1", "discard-only"),
            ("100:0:0:1::1", nil),
            ("5f00::1", "segment-routing (SRv6)"),
        ]
        for (text, expected) in table {
            let address = try XCTUnwrap(WebhookTargetPolicy.parseLiteral(text), text)
            XCTAssertEqual(WebhookTargetPolicy.forbiddenKind(address), expected, text)
        }
        XCTAssertNil(WebhookTargetPolicy.parseLiteral("example.com"))
    }

    func testDenyingPolicyRefusesPrivateLiteralsWithTheSettingInTheReason() async throws {
        let decision = try await denying.check("http://10.0.0.5:8080/hook")
        XCTAssertEqual(decision, .refused("target 10.0.0.5 is a private address; set PUSHLINE_WEBHOOK_ALLOW_PRIVATE_TARGETS=true to allow"))
        let mapped = try await denying.check("https://[::ffff:127.0.0.1]/hook")
        guard case .refused(let reason) = mapped else { return XCTFail("IPv4-mapped loopback was allowed") }
        XCTAssertTrue(reason.contains("loopback"), reason)
    }

    func testDenyingPolicyRefusesSpecialPurposeBlocksNamingTheirKind() async throws {
        let benchmarking = try await denying.check("http://198.18.0.7/hook")
        XCTAssertEqual(benchmarking, .refused("target 198.18.0.7 is a benchmarking address; set PUSHLINE_WEBHOOK_ALLOW_PRIVATE_TARGETS=true to allow"))
        let protocolBlock = try await denying.check("http://192.0.0.8/hook")
        XCTAssertEqual(protocolBlock, .refused("target 192.0.0.8 is an IETF protocol address; set PUSHLINE_WEBHOOK_ALLOW_PRIVATE_TARGETS=true to allow"))
        let teredo = try await denying.check("https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/hook")
        guard case .refused(let reason) = teredo else { return XCTFail("a Teredo address was allowed") }
        XCTAssertTrue(reason.contains("Teredo"), reason)
    }

    func testDenyingPolicyRefusesLocalhostByNameAndNumericForms() async throws {
        for url in ["http://localhost:9/hook", "http://2130706433/hook"] {
            let decision = try await denying.check(url)
            guard case .refused(let reason) = decision else { XCTFail("\(url) was allowed"); continue }
            XCTAssertTrue(reason.contains("loopback"), reason)
        }
    }

    func testDenyingPolicyRefusesOtherSchemesAndAllowsPublicAddresses() async throws {
        let file = try await denying.check("file:///etc/passwd")
        XCTAssertEqual(file, .refused("target file:///etc/redacted is not an http(s) URL"), "shown as RedactedURL shows it")
        let unix = try await denying.check("http+unix://%2Ftmp%2Fsocket/hook")
        XCTAssertNotEqual(unix, .allowed)
        let publicTarget = try await denying.check("https://93.184.216.34/hook")
        XCTAssertEqual(publicTarget, .allowed)
    }

    func testAllowingPolicyAllowsLoopback() async throws {
        let decision = try await WebhookTargetPolicy(allowPrivateTargets: true).check("http://127.0.0.1:9/hook")
        XCTAssertEqual(decision, .allowed)
    }

    func testConfigurationDeniesPrivateTargetsUnlessTheVariableAllowsThem() throws {
        XCTAssertFalse(try ProcessorConfiguration.fromEnvironment([:]).webhookAllowPrivateTargets)
        XCTAssertTrue(try ProcessorConfiguration.fromEnvironment(["PUSHLINE_WEBHOOK_ALLOW_PRIVATE_TARGETS": "true"]).webhookAllowPrivateTargets)
        XCTAssertFalse(try ProcessorConfiguration.fromEnvironment(["PUSHLINE_WEBHOOK_ALLOW_PRIVATE_TARGETS": "false"]).webhookAllowPrivateTargets)
        XCTAssertThrowsError(try ProcessorConfiguration.fromEnvironment(["PUSHLINE_WEBHOOK_ALLOW_PRIVATE_TARGETS": "maybe"]))
    }
}

/// A name is resolved once, and a plain-http attempt connects to the address that was checked.
final class WebhookTargetPinningTests: XCTestCase {
    func testANameResolvedToPublicAddressesIsPinnedToThem() async throws {
        var policy = WebhookTargetPolicy(allowPrivateTargets: false)
        policy.resolver = { _ in [[93, 184, 216, 34]] }
        let decision = try await policy.check("http://hooks.example.com:8080/status")
        XCTAssertEqual(decision, .pinned([[93, 184, 216, 34]]))
        // A name server that answers a private address the next time is never asked again.
        policy.resolver = { _ in [[127, 0, 0, 1]] }
        let rebound = try await policy.check("http://hooks.example.com:8080/status")
        guard case .refused = rebound else { return XCTFail("a private answer is refused: \(rebound)") }
    }

    func testAPinnedHttpRequestGoesToTheCheckedAddressWithTheOriginalHost() throws {
        let v4 = try XCTUnwrap(WebhookTargetPolicy.pinnedRequest("http://hooks.example.com:8080/a/b?x=1#f", to: [93, 184, 216, 34]))
        XCTAssertEqual(v4.url, "http://93.184.216.34:8080/a/b?x=1#f")
        XCTAssertEqual(v4.host, "hooks.example.com:8080")
        let v6Address: [UInt8] = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]
        let v6 = try XCTUnwrap(WebhookTargetPolicy.pinnedRequest("HTTP://Hooks.Example.com/x", to: v6Address))
        XCTAssertTrue(v6.url.hasPrefix("HTTP://[2001:db8::1]/x") || v6.url.hasPrefix("http://[2001:db8::1]/x"), v6.url)
        XCTAssertEqual(v6.host, "Hooks.Example.com")
        XCTAssertNil(WebhookTargetPolicy.pinnedRequest("https://hooks.example.com/x", to: [93, 184, 216, 34]),
                     "TLS connects by name: the certificate proves it")
    }
}
