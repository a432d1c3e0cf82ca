import Contracts
import Foundation
import TestSupport
import XCTest

/// With the broker gone, ingest never answers a false 2xx: it answers 503 + Retry-After once
/// the acknowledgement bound passes, and its health check says unavailable (SPEC §8.1).
final class BrokerOutageTests: XCTestCase {
    func testIngestAnswers503WithRetryAfterWhenTheBrokerIsDown() async throws {
        let stack = try await PushlineStack.start()
        do {
            let app = try await stack.createApp()
            let registration = DeviceRegistrationAPI.Registration(MobileAppId: app.mobileAppId.uuidString, UserId: "u",
                                                                  ApiToken: app.apiToken, ApnsDeviceToken: Tokens.apns(1))
            let url = stack.registrationURL(org: app.orgId, "devices")
            let before = try await HTTPClientHelpers.post(url, json: registration)
            XCTAssertEqual(before.status, 202)

            try await stack.processor.stop()
            try await stack.broker.stop()
            let during = try await HTTPClientHelpers.post(url, json: registration)
            XCTAssertEqual(during.status, 503, during.text)
            XCTAssertEqual(during.headers.first(name: "Retry-After"), "1")
            let health = try await HTTPClientHelpers.get("\(stack.ingestURL)/health")
            XCTAssertEqual(health.status, 503)
        } catch {
            await stack.stop()
            throw error
        }
        await stack.stop()
    }
}
