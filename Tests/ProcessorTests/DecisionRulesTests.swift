import Foundation
@testable import Processor
@testable import Handlers
import Settings
import XCTest

/// The settings that change decisions have one default (`DecisionRules.default`): a processor
/// configured with nothing, the handlers built with nothing and ingest's idempotency window all
/// decide with it, and a configured value reaches the handlers unchanged.
final class DecisionRulesTests: XCTestCase {
    func testTheConfigurationAndTheHandlersStartFromTheSameRules() throws {
        XCTAssertEqual(ProcessorConfiguration().decisionRules, .default)
        XCTAssertEqual(try ProcessorConfiguration.fromEnvironment([:]).decisionRules, .default)
        XCTAssertEqual(RegistrationHandler(verifier: TokenFormatVerifier()).maxDevicesPerUser, DecisionRules.default.maxDevicesPerUser)
        XCTAssertEqual(NotificationHandler().idempotencyWindow, DecisionRules.default.idempotencyWindow)
        // Ingest answers a repeated Idempotency-Key over the window the processor decides with.
        XCTAssertEqual(SharedSettings().idempotencyWindow, DecisionRules.default.idempotencyWindow)
        XCTAssertTrue(DecisionRules.defaultVerifier is TokenFormatVerifier)
    }

    func testConfiguredRulesAreTheOnesHandedOn() throws {
        let configuration = try ProcessorConfiguration.fromEnvironment([
            "PUSHLINE_MAX_DEVICES_PER_USER": "7",
            "PUSHLINE_TRACKING_PARK_TTL_MS": "60000",
            "PUSHLINE_IDEMPOTENCY_WINDOW_HOURS": "2",
        ])
        let rules = DecisionRules(maxDevicesPerUser: 7, trackingParkTtlMs: 60_000, idempotencyWindowHours: 2)
        XCTAssertEqual(configuration.decisionRules, rules)
        XCTAssertEqual(rules.trackingParkTime, .seconds(60))
        XCTAssertEqual(rules.idempotencyWindow, .seconds(7200))
        XCTAssertNotEqual(rules, .default)
    }
}
