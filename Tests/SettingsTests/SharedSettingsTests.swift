import Contracts
import Ingest
import Logging
import Processor
@testable import Handlers
import Settings
import XCTest

/// Every executable reads the settings they share through `SharedSettings`, so the same
/// environment means the same broker, topics, store and log level to all of them. These tests
/// hold ingest's and the processor's readings side by side.
final class SharedSettingsTests: XCTestCase {
    /// Environments whose shared settings must read the same everywhere, including the empty
    /// values that once made ingest and the processor use different topics.
    static let environments: [[String: String]] = [
        [:],
        ["PUSHLINE_TOPIC_PREFIX": ""],
        ["PUSHLINE_TOPIC_PREFIX": "staging."],
        ["PUSHLINE_KAFKA_BROKERS": "", "PUSHLINE_STORE": "", "PUSHLINE_PARTITIONS": "", "PUSHLINE_LOG_LEVEL": ""],
        ["PUSHLINE_KAFKA_BROKERS": "k1:9092,k2:9092", "PUSHLINE_STORE": "postgres://p@db:5432/pushline?schema=a",
         "PUSHLINE_PARTITIONS": "48", "PUSHLINE_KAFKA_PROPERTIES": "security.protocol=SSL;ssl.ca.location=/ca.pem",
         "PUSHLINE_LOG_LEVEL": "WARNING"],
    ]

    func testIngestAndProcessorReadTheSameSharedSettingsFromTheSameEnvironment() throws {
        for environment in Self.environments {
            let ingest = try IngestConfiguration.fromEnvironment(environment.merging(["PUSHLINE_ADMIN_TOKEN": "an-admin-token-of-at-least-32-characters"]) { $1 }).shared
            let processor = try ProcessorConfiguration.fromEnvironment(environment).shared
            XCTAssertEqual(ingest, processor, "\(environment)")
            XCTAssertEqual(ingest, try SharedSettings(SettingsReader(environment: environment)), "\(environment)")
        }
    }

    func testAnEmptyTopicPrefixIsTheEmptyPrefixForEveryService() throws {
        let environment = ["PUSHLINE_TOPIC_PREFIX": "", "PUSHLINE_ADMIN_TOKEN": "an-admin-token-of-at-least-32-characters"]
        XCTAssertEqual(try IngestConfiguration.fromEnvironment(environment).shared.topics.registration, "commands.registration")
        XCTAssertEqual(try ProcessorConfiguration.fromEnvironment(environment).shared.topics.registration, "commands.registration")
    }

    func testEmptyValuesOtherThanThePrefixMeanTheDefault() throws {
        let settings = try SharedSettings(SettingsReader(environment: Self.environments[3]))
        XCTAssertEqual(settings, SharedSettings())
        XCTAssertEqual(settings.store, "sqlite:./var/pushline.sqlite")
        XCTAssertEqual(settings.topics.prefix, "pushline.")
    }

    func testAnUnusableSharedValueIsRefusedByEveryServiceNamingTheVariable() {
        let bad: [(String, String)] = [("PUSHLINE_PARTITIONS", "0"), ("PUSHLINE_PARTITIONS", "twelve"),
                                       ("PUSHLINE_LOG_LEVEL", "loud"), ("PUSHLINE_KAFKA_PROPERTIES", "ssl")]
        for (name, value) in bad {
            XCTAssertThrowsError(try IngestConfiguration.fromEnvironment(["PUSHLINE_ADMIN_TOKEN": "an-admin-token-of-at-least-32-characters", name: value])) { error in
                XCTAssertTrue("\(error)".contains(name), "\(error)")
            }
            XCTAssertThrowsError(try ProcessorConfiguration.fromEnvironment([name: value])) { error in
                XCTAssertTrue("\(error)".contains(name), "\(error)")
            }
        }
    }

    func testAFlagWinsOverItsVariableAndAFlagNotGivenLeavesTheVariable() throws {
        let environment = ["PUSHLINE_KAFKA_BROKERS": "env:9092", "PUSHLINE_STORE": "sqlite:/env.sqlite"]
        let flagged = try ProcessorConfiguration.fromEnvironment(
            environment, overrides: ["PUSHLINE_KAFKA_BROKERS": "flag:9092", "PUSHLINE_STORE": nil])
        XCTAssertEqual(flagged.shared.brokers, "flag:9092")
        XCTAssertEqual(flagged.shared.store, "sqlite:/env.sqlite")
        let ingest = try IngestConfiguration.fromEnvironment(
            environment.merging(["PUSHLINE_ADMIN_TOKEN": "an-admin-token-of-at-least-32-characters"]) { $1 }, overrides: ["PUSHLINE_KAFKA_BROKERS": "flag:9092"])
        XCTAssertEqual(ingest.shared, flagged.shared)
    }

    func testTheLogLevelDefaultIsTheExecutablesAndTheVariableWins() throws {
        XCTAssertEqual(try ProcessorConfiguration.fromEnvironment([:]).shared.logLevel, .info)
        XCTAssertEqual(try ProcessorConfiguration.fromEnvironment([:], defaultLogLevel: .warning).shared.logLevel, .warning)
        XCTAssertEqual(try ProcessorConfiguration.fromEnvironment(["PUSHLINE_LOG_LEVEL": "debug"], defaultLogLevel: .warning)
            .shared.logLevel, .debug)
    }
}
