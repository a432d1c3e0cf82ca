import Contracts
import Ingest
import XCTest

/// `IngestConfiguration.fromEnvironment`.
final class IngestConfigurationTests: XCTestCase {
    func testDefaultsNeedOnlyTheAdminToken() throws {
        let configuration = try IngestConfiguration.fromEnvironment(["PUSHLINE_ADMIN_TOKEN": "s3cret"])
        XCTAssertEqual(configuration.host, "127.0.0.1")
        XCTAssertEqual(configuration.port, 8080)
        XCTAssertEqual(configuration.adminToken, "s3cret")
        XCTAssertEqual(configuration.topics, Topics(prefix: "pushline."))
        XCTAssertEqual(configuration.maxBodyBytes, 1_048_576)
        XCTAssertEqual(configuration.retryAfterSeconds, 1)
    }

    func testEnvironmentOverridesHostPortAndTopicPrefix() throws {
        let configuration = try IngestConfiguration.fromEnvironment([
            "PUSHLINE_ADMIN_TOKEN": "t", "PUSHLINE_INGEST_HOST": "0.0.0.0", "PUSHLINE_INGEST_PORT": "9000",
            "PUSHLINE_TOPIC_PREFIX": "staging.",
        ])
        XCTAssertEqual(configuration.host, "0.0.0.0")
        XCTAssertEqual(configuration.port, 9000)
        XCTAssertEqual(configuration.topics.registration, "staging.commands.registration")
    }

    func testAuthCacheTTLDefaultsToOneSecondAndCanBeDisabled() throws {
        XCTAssertEqual(try IngestConfiguration.fromEnvironment(["PUSHLINE_ADMIN_TOKEN": "t"]).authCacheMs, 1_000)
        XCTAssertEqual(try IngestConfiguration.fromEnvironment(["PUSHLINE_ADMIN_TOKEN": "t", "PUSHLINE_AUTH_CACHE_MS": "0"]).authCacheMs, 0)
        XCTAssertEqual(try IngestConfiguration.fromEnvironment(["PUSHLINE_ADMIN_TOKEN": "t", "PUSHLINE_AUTH_CACHE_MS": "250"]).authCacheMs, 250)
        for value in ["-1", "soon", "3600001"] {
            XCTAssertThrowsError(try IngestConfiguration.fromEnvironment(["PUSHLINE_ADMIN_TOKEN": "t", "PUSHLINE_AUTH_CACHE_MS": value])) { error in
                XCTAssertTrue("\(error)".contains("PUSHLINE_AUTH_CACHE_MS"), "\(error)")
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

    func testInvalidPortIsAnError() {
        for port in ["http", "70000", "-1"] {
            XCTAssertThrowsError(try IngestConfiguration.fromEnvironment(["PUSHLINE_ADMIN_TOKEN": "t", "PUSHLINE_INGEST_PORT": port])) { error in
                XCTAssertTrue("\(error)".contains("PUSHLINE_INGEST_PORT"), "\(error)")
            }
        }
    }
}
