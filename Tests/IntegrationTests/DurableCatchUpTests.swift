import Contracts
import Foundation
import TestSupport
import XCTest

/// The default stack keeps up: on the durable local broker, as `make run` starts it, a burst of
/// 100,000 registrations through ingest — as an app backend sends them, in concurrent batches of
/// 100, so the broker stores many small objects — is applied by the processor by itself, with
/// its default fetch settings. (With `fetch.wait.max.ms` 50 the processor received nothing from
/// such a log, ever; docs/BENCHMARKS.md has the figures.)
final class DurableCatchUpTests: XCTestCase {
    private var stack: PushlineStack?

    override func tearDown() async throws {
        await stack?.stop()
    }

    func testABurstOfAHundredThousandRegistrationsIsAppliedOnTheDurableBroker() async throws {
        let stack = try await PushlineStack.start(durableBroker: true)
        self.stack = stack
        let app = try await stack.createApp()
        let total = 100_000, perRequest = 100, concurrency = 16
        let url = stack.registrationURL(org: app.orgId, "devices/batch")
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<concurrency {
                group.addTask {
                    for request in stride(from: worker, to: total / perRequest, by: concurrency) {
                        let batch = (request * perRequest..<(request + 1) * perRequest).map { n in
                            DeviceRegistrationAPI.Registration(MobileAppId: app.mobileAppId.uuidString, UserId: "u-\(n)",
                                                               ApiToken: app.apiToken, ApnsDeviceToken: Tokens.apns(n))
                        }
                        let answer = try await HTTPClientHelpers.post(url, json: batch)
                        guard answer.status == 202 else { throw TestFailure("batch answered \(answer.status): \(answer.text)\n\(stack.logs())") }
                    }
                }
            }
            try await group.waitForAll()
        }
        // A bound so that the test ends, not a timing claim: the rate is measured by scripts/bench-catchup.
        try await stack.waitForDevices(total, app: app.mobileAppId, timeout: .seconds(900))
        let health = try await HTTPClientHelpers.get("\(stack.processorURL)/health")
        XCTAssertEqual(health.status, 200, health.text)
    }
}
