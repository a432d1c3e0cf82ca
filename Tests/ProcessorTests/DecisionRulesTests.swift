import Foundation
import Contracts
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
        XCTAssertEqual(RegistrationHandler(verifier: TokenFormatVerifier()).maxUsersPerPart, DecisionRules.default.maxUsersPerApp)
        XCTAssertEqual(AckHandler().maxBadgeUpdatesPerMinute, DecisionRules.default.maxBadgeUpdatesPerMinute)
        XCTAssertEqual(Retention(), Retention(registrationStatuses: .seconds(7 * 86_400), acks: .seconds(30 * 86_400)))
        // Ingest answers a repeated Idempotency-Key over the window the processor decides with.
        XCTAssertEqual(SharedSettings().idempotencyWindow, DecisionRules.default.idempotencyWindow)
        XCTAssertTrue(DecisionRules.defaultVerifier is TokenFormatVerifier)
    }

    func testConfiguredRulesAreTheOnesHandedOn() throws {
        let configuration = try ProcessorConfiguration.fromEnvironment([
            "PUSHLINE_MAX_DEVICES_PER_USER": "7",
            "PUSHLINE_TRACKING_PARK_TTL_MS": "60000",
            "PUSHLINE_IDEMPOTENCY_WINDOW_HOURS": "2",
            "PUSHLINE_MAX_USERS_PER_APP": "1000",
            "PUSHLINE_REGISTRATION_STATUS_TTL_MS": "3600000",
            "PUSHLINE_ACK_TTL_MS": "7200000",
            "PUSHLINE_MAX_BADGE_UPDATES_PER_MINUTE": "3",
        ])
        let rules = DecisionRules(maxDevicesPerUser: 7, maxUsersPerApp: 1000, trackingParkTtlMs: 60_000, registrationStatusTtlMs: 3_600_000,
                                  ackTtlMs: 7_200_000, maxBadgeUpdatesPerMinute: 3, idempotencyWindowHours: 2)
        XCTAssertEqual(configuration.decisionRules, rules)
        XCTAssertEqual(rules.trackingParkTime, .seconds(60))
        XCTAssertEqual(rules.idempotencyWindow, .seconds(7200))
        XCTAssertEqual(rules.registrationStatusTime, .seconds(3600))
        XCTAssertEqual(rules.ackTime, .seconds(7200))
        XCTAssertEqual(DecisionRules(maxUsersPerApp: 1000, appParts: AppParts(3)).maxUsersPerPart, 334, "a part keeps its share, rounded up")
        XCTAssertNotEqual(rules, .default)
    }
}
