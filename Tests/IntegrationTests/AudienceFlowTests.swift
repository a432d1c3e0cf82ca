import Contracts
import Foundation
import TestSupport
import XCTest

/// Device properties and audiences end to end (docs/API.md#audiences): real broker, ingest and
/// processor. Devices registered with properties, changed by the backend, then sends to a topic,
/// to every device and to an expression, each written right after the `202` of what it depends
/// on: each reaches exactly the devices the log says it does, and the count route agrees.
final class AudienceFlowTests: XCTestCase {
    private var stack: PushlineStack!

    override func tearDown() async throws {
        await stack?.stop()
    }

    func testSendsToATopicAllAndAnExpressionReachTheDevicesTheLogSelectsAtTheirPlace() async throws {
        stack = try await PushlineStack.start()
        let app = try await stack.createApp()
        // Six devices: u-0…u-5, with locales, versions, tags and topics.
        let properties: [(locale: String, version: String, tags: [String], topics: [String])] = [
            ("pt-BR", "5.10", ["vip"], ["news"]), ("pt-PT", "5.9", [], ["news"]), ("es", "6", ["vip"], []),
            ("en-US", "4", [], []), ("pt", "5", ["vip", "beta"], ["news", "deals"]), ("fr", "5.0.1", [], []),
        ]
        let tokens = (0..<properties.count).map { Tokens.apns($0) }
        let registrations = properties.enumerated().map { n, p in
            DeviceRegistrationAPI.Registration(MobileAppId: app.mobileAppId.uuidString, UserId: "u-\(n)", ApiToken: app.apiToken,
                                               ApnsDeviceToken: tokens[n], Locale: p.locale, AppVersion: p.version, Tags: p.tags,
                                               Topics: p.topics)
        }
        let registered = try await HTTPClientHelpers.post(stack.registrationURL(org: app.orgId, "devices/batch"), json: registrations)
        XCTAssertEqual(registered.status, 202, registered.text)
        // Right after: u-3 subscribes to news and gets vip; u-0 loses vip (the backend's batch).
        let changed = try await stack.call(.POST, "/v1/apps/\(app.mobileAppId)/devices/changes/batch", json: ["changes": [
            ["userId": "u-3", "topics": ["subscribe": ["news"]], "tags": ["add": ["vip"]]],
            ["deviceToken": tokens[0], "tags": ["remove": ["vip"]]],
        ]], token: app.apiToken)
        XCTAssertEqual(changed.status, 202, changed.text)
        // Right after the changes' 202: the sends see them.
        let sends: [(to: [String: Any], expected: [Int])] = [
            (["topic": "news"], [0, 1, 3, 4]),
            (["all": true], [0, 1, 2, 3, 4, 5]),
            (["audience": "tag:vip and locale:pt"], [4]),
            (["audience": "version >= 5.9 or (locale:es and not topic:news)"], [0, 1, 2]),
            (["audience": "tag:nobody-has-it"], []),
        ]
        var deliveries: [(UUID, [Int])] = []
        for send in sends {
            deliveries.append((try await stack.send(["to": send.to, "title": "hello"], app: app), send.expected))
        }
        let total = sends.map(\.expected.count).reduce(0, +)
        let records = try await stack.waitForOutbound(total).map(\.record)
        for (delivery, expected) in deliveries {
            let reached = records.filter { $0.deliveryId == delivery }.map(\.deviceToken).sorted()
            XCTAssertEqual(reached, expected.map { tokens[$0] }.sorted(), "delivery \(delivery)")
            try await eventually("the statistics of \(delivery)") {
                try await self.stack.stats(delivery, app: app)?.sent == expected.count
            }
        }
        let count = try await stack.call(.POST, "/v1/apps/\(app.mobileAppId)/audiences/count", json: ["audience": "topic:news or tag:vip"],
                                         token: app.apiToken)
        XCTAssertEqual(count.status, 200, count.text)
        XCTAssertEqual(try count.decode(AudiencesAPI.Count.self), AudiencesAPI.Count(audience: "topic:news or tag:vip", devices: 5))
        let rows = try await stack.sqlite("SELECT tags || '|' || topics FROM devices WHERE device_token = '\(tokens[3])'")
        XCTAssertEqual(rows, ["vip|news"])
    }
}
