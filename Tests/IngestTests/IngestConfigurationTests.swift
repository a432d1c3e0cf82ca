import Contracts
import Ingest
import XCTest

/// `IngestConfiguration.fromEnvironment`.
final class IngestConfigurationTests: XCTestCase {
    private let adminToken = "an-admin-token-of-at-least-32-characters"

    func testDefaultsNeedOnlyTheAdminToken() throws {
        let configuration = try IngestConfiguration.fromEnvironment(["PUSHLINE_ADMIN_TOKEN": adminToken])
        XCTAssertEqual(configuration.host, "127.0.0.1")
        XCTAssertEqual(configuration.port, 8080)
        XCTAssertEqual(configuration.adminToken, adminToken)
        XCTAssertNil(configuration.legacyTokenScopes)
        XCTAssertEqual(configuration.shared.topics, Topics(prefix: "pushline."))
        XCTAssertEqual(configuration.maxBodyBytes, 1_048_576)
        XCTAssertEqual(configuration.retryAfterSeconds, 1)
    }

    func testEnvironmentOverridesHostPortAndTopicPrefix() throws {
        let configuration = try IngestConfiguration.fromEnvironment([
            "PUSHLINE_ADMIN_TOKEN": adminToken, "PUSHLINE_INGEST_HOST": "0.0.0.0", "PUSHLINE_INGEST_PORT": "9000",
            "PUSHLINE_TOPIC_PREFIX": "staging.",
        ])
        XCTAssertEqual(configuration.host, "0.0.0.0")
        XCTAssertEqual(configuration.port, 9000)
        XCTAssertEqual(configuration.shared.topics.registration, "staging.commands.registration")
    }

    func testKafkaPropertiesArePassedThroughAndAMalformedEntryIsNotEchoed() throws {
        let configuration = try IngestConfiguration.fromEnvironment([
            "PUSHLINE_ADMIN_TOKEN": adminToken,
            "PUSHLINE_KAFKA_PROPERTIES": "security.protocol=SASL_SSL; sasl.mechanisms=SCRAM-SHA-512;sasl.password=a=b;",
        ])
        XCTAssertEqual(configuration.shared.kafkaProperties,
                       ["security.protocol": "SASL_SSL", "sasl.mechanisms": "SCRAM-SHA-512", "sasl.password": "a=b"])
        XCTAssertThrowsError(try IngestConfiguration.fromEnvironment([
            "PUSHLINE_ADMIN_TOKEN": adminToken, "PUSHLINE_KAFKA_PROPERTIES": "sasl.username=u;hunter2-mistyped-password",
        ])) { error in
            XCTAssertEqual("\(error)", "invalid configuration: PUSHLINE_KAFKA_PROPERTIES: entry 2 is not key=value")
        }
    }

    func testAuthCacheTTLDefaultsToOneSecondAndCanBeDisabled() throws {
        XCTAssertEqual(try IngestConfiguration.fromEnvironment(["PUSHLINE_ADMIN_TOKEN": adminToken]).authCacheMs, 1_000)
        XCTAssertEqual(try IngestConfiguration.fromEnvironment(["PUSHLINE_ADMIN_TOKEN": adminToken, "PUSHLINE_AUTH_CACHE_MS": "0"]).authCacheMs, 0)
        XCTAssertEqual(try IngestConfiguration.fromEnvironment(["PUSHLINE_ADMIN_TOKEN": adminToken, "PUSHLINE_AUTH_CACHE_MS": "250"]).authCacheMs, 250)
        for value in ["-1", "soon", "10001", "3600000"] {
            XCTAssertThrowsError(try IngestConfiguration.fromEnvironment(["PUSHLINE_ADMIN_TOKEN": adminToken, "PUSHLINE_AUTH_CACHE_MS": value])) { error in
                XCTAssertTrue("\(error)".contains("PUSHLINE_AUTH_CACHE_MS"), "\(error)")
            }
        }
    }

    func testRateLimitsDefaultToPerAppAndPerSourceOnWithNoTrustedProxy() throws {
        let configuration = try IngestConfiguration.fromEnvironment(["PUSHLINE_ADMIN_TOKEN": adminToken])
        XCTAssertEqual(configuration.appRateLimit, RateLimit(perSecond: 1_000, burst: 2_000))
        XCTAssertTrue(configuration.appRateLimit.isEnabled)
        XCTAssertEqual(configuration.sourceRateLimit, RateLimit(perSecond: 100, burst: 200))
        XCTAssertTrue(configuration.sourceRateLimit.isEnabled)
        XCTAssertTrue(configuration.trustedProxies.isEmpty)
    }

    func testTrustedProxiesAreReadAsCIDRRangesAndAMalformedOneIsAClearError() throws {
        let configuration = try IngestConfiguration.fromEnvironment(["PUSHLINE_ADMIN_TOKEN": adminToken,
                                                                     "PUSHLINE_TRUSTED_PROXIES": "10.0.0.0/8, 192.168.1.7,fd00::/8"])
        XCTAssertEqual(configuration.trustedProxies, try TrustedProxies(parsing: "10.0.0.0/8,192.168.1.7/32,fd00::/8"))
        for value in ["10.0.0.0/33", "10.0.0/8", "proxy.example.com", "fd00::/129", "10.0.0.0/8/1"] {
            XCTAssertThrowsError(try IngestConfiguration.fromEnvironment(["PUSHLINE_ADMIN_TOKEN": adminToken, "PUSHLINE_TRUSTED_PROXIES": value])) { error in
                XCTAssertTrue("\(error)".contains("PUSHLINE_TRUSTED_PROXIES"), "\(error)")
            }
        }
    }

    func testRateLimitsAreReadFromTheEnvironmentAndZeroTurnsThemOff() throws {
        let configuration = try IngestConfiguration.fromEnvironment([
            "PUSHLINE_ADMIN_TOKEN": adminToken, "PUSHLINE_RATE_LIMIT_APP_PER_SECOND": "0", "PUSHLINE_RATE_LIMIT_APP_BURST": "7",
            "PUSHLINE_RATE_LIMIT_SOURCE_PER_SECOND": "20", "PUSHLINE_RATE_LIMIT_SOURCE_BURST": "40",
        ])
        XCTAssertEqual(configuration.appRateLimit, RateLimit(perSecond: 0, burst: 7))
        XCTAssertFalse(configuration.appRateLimit.isEnabled)
        XCTAssertEqual(configuration.sourceRateLimit, RateLimit(perSecond: 20, burst: 40))
    }

    func testInvalidRateLimitsAreClearErrors() {
        let invalid = [("PUSHLINE_RATE_LIMIT_APP_PER_SECOND", "-1"), ("PUSHLINE_RATE_LIMIT_APP_PER_SECOND", "fast"),
                       ("PUSHLINE_RATE_LIMIT_APP_BURST", "0"), ("PUSHLINE_RATE_LIMIT_SOURCE_PER_SECOND", "1000001"),
                       ("PUSHLINE_RATE_LIMIT_SOURCE_BURST", "1.5")]
        for (name, value) in invalid {
            XCTAssertThrowsError(try IngestConfiguration.fromEnvironment(["PUSHLINE_ADMIN_TOKEN": adminToken, name: value])) { error in
                XCTAssertTrue("\(error)".contains(name), "\(error)")
            }
        }
    }

    func testMissingOrEmptyAdminTokenIsAClearError() {
        for env in [[:], ["PUSHLINE_ADMIN_TOKEN": ""]] as [[String: String]] {
            XCTAssertThrowsError(try IngestConfiguration.fromEnvironment(env)) { error in
                XCTAssertTrue("\(error)".contains("PUSHLINE_ADMIN_TOKEN"), "\(error)")
            }
        }
    }

    func testAnAdminTokenShorterThan32CharactersIsRefused() {
        for short in ["Zq9-s3cret", String(repeating: "Zq9", count: 10)] {
            XCTAssertThrowsError(try IngestConfiguration.fromEnvironment(["PUSHLINE_ADMIN_TOKEN": short])) { error in
                XCTAssertTrue("\(error)".contains("PUSHLINE_ADMIN_TOKEN must be at least 32 characters"), "\(error)")
                XCTAssertFalse("\(error)".contains(short), "the error must not echo the token")
            }
        }
        XCTAssertNoThrow(try IngestConfiguration.fromEnvironment(["PUSHLINE_ADMIN_TOKEN": String(repeating: "x", count: 32)]))
    }

    func testLegacyTokensCanBeDowngradedToTheClientScope() throws {
        let all = try IngestConfiguration.fromEnvironment(["PUSHLINE_ADMIN_TOKEN": adminToken, "PUSHLINE_LEGACY_TOKEN_SCOPE": "all"])
        XCTAssertNil(all.legacyTokenScopes)
        let client = try IngestConfiguration.fromEnvironment(["PUSHLINE_ADMIN_TOKEN": adminToken, "PUSHLINE_LEGACY_TOKEN_SCOPE": "client"])
        XCTAssertEqual(client.legacyTokenScopes, [.client])
        XCTAssertThrowsError(try IngestConfiguration.fromEnvironment(["PUSHLINE_ADMIN_TOKEN": adminToken,
                                                                      "PUSHLINE_LEGACY_TOKEN_SCOPE": "server"])) { error in
            XCTAssertTrue("\(error)".contains("PUSHLINE_LEGACY_TOKEN_SCOPE"), "\(error)")
        }
    }

    func testInvalidPortIsAnError() {
        for port in ["http", "70000", "-1"] {
            XCTAssertThrowsError(try IngestConfiguration.fromEnvironment(["PUSHLINE_ADMIN_TOKEN": adminToken, "PUSHLINE_INGEST_PORT": port])) { error in
                XCTAssertTrue("\(error)".contains("PUSHLINE_INGEST_PORT"), "\(error)")
            }
        }
    }
}
