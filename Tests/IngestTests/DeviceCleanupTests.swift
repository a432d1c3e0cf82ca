import Contracts
import Foundation
import Hummingbird
import HummingbirdTesting
import XCTest

/// `POST …/devices/cleanup` and `…/devices/cleanup/batch`.
final class DeviceCleanupTests: XCTestCase {
    func testCleanupWithDeviceTokenPublishesItAndAnswersEmpty202() async throws {
        let harness = await Harness.withClientApps()
        let response = try await harness.test { client in
            try await client.post(Fixture.devices() + "/cleanup", object: Fixture.cleanup(device: Fixture.apnsToken))
        }
        XCTAssertEqual(response.status, .accepted)
        XCTAssertEqual(response.body.readableBytes, 0)
        let command = try await harness.onlyPublished(DeviceCleanupRequested.self)
        XCTAssertEqual(command, DeviceCleanupRequested(orgId: Fixture.orgId, mobileAppId: Fixture.appId, userId: "user-1",
                                                       deviceToken: Fixture.apnsToken, apiTokenHash: Fixture.rawTokenHash))
        let encoded = await harness.publisher.commands
        XCTAssertEqual(encoded.map(\.key), [Fixture.appKey])
        XCTAssertNil(String(decoding: encoded[0].value, as: UTF8.self).range(of: Fixture.rawToken))
    }

    func testCleanupWithoutDeviceTokenRemovesAllOfTheUsersDevices() async throws {
        let harness = await Harness.withClientApps()
        let response = try await harness.test { client in
            try await client.post(Fixture.devices() + "/cleanup", object: Fixture.cleanup(device: nil))
        }
        XCTAssertEqual(response.status, .accepted)
        let command = try await harness.onlyPublished(DeviceCleanupRequested.self)
        XCTAssertNil(command.deviceToken)
        XCTAssertEqual(command.userId, "user-1")
    }

    func testCleanupBatchRouteAcceptsASingleObject() async throws {
        let harness = await Harness.withClientApps()
        let response = try await harness.test { client in
            try await client.post(Fixture.devices() + "/cleanup/batch", object: Fixture.cleanup(user: "solo", device: "tok"))
        }
        XCTAssertEqual(response.status, .accepted)
        let command = try await harness.onlyPublished(DeviceCleanupRequested.self)
        XCTAssertEqual(command.userId, "solo")
        XCTAssertEqual(command.deviceToken, "tok")
    }

    func testCleanupBatchPublishesEveryElementInOneCallInOrder() async throws {
        let harness = await Harness.withClientApps()
        let batch = [Fixture.cleanup(user: "a", device: "tok-a"), Fixture.cleanup(user: "b", device: nil),
                     Fixture.cleanup(app: Fixture.otherAppId, user: "c", token: Fixture.otherRawToken, device: "")]
        let json = "  \n" + (try Fixture.json(batch))
        let response = try await harness.test { client in
            try await client.post(Fixture.devices() + "/cleanup/batch", json: json)
        }
        XCTAssertEqual(response.status, .accepted)
        let calls = await harness.publisher.calls
        XCTAssertEqual(calls.map(\.commands.count), [3])
        let commands = try await harness.published(DeviceCleanupRequested.self)
        XCTAssertEqual(commands.map(\.userId), ["a", "b", "c"])
        XCTAssertEqual(commands.map(\.deviceToken), ["tok-a", nil, nil])
        XCTAssertEqual(commands.map(\.mobileAppId), [Fixture.appId, Fixture.appId, Fixture.otherAppId])
        XCTAssertEqual(commands.map(\.apiTokenHash), [Fixture.rawTokenHash, Fixture.rawTokenHash, ApiTokens.hash(Fixture.otherRawToken)])
    }

    func testCleanupBatchSizeMustBe1To100() async throws {
        let harness = await Harness.withClientApps()
        try await harness.test { client in
            let empty = try await client.post(Fixture.devices() + "/cleanup/batch", json: "[]")
            try assertProblem(empty, .badRequest, field: "body")
            let tooMany = (0...100).map { Fixture.cleanup(user: "u\($0)") }
            let big = try await client.post(Fixture.devices() + "/cleanup/batch", object: tooMany)
            try assertProblem(big, .badRequest, field: "body")
        }
        await assertNothingPublished(harness.publisher)
    }

    func testInvalidCleanupsAre400NamingTheField() async throws {
        let harness = await Harness.withClientApps()
        try await harness.test { client in
            let cases: [(path: String, body: Any, field: String)] = [
                ("/cleanup", Fixture.cleanup(app: nil), "MobileAppId"),
                ("/cleanup", Fixture.cleanup(token: ""), "ApiToken"),
                ("/cleanup", Fixture.cleanup(user: nil), "UserId"),
                ("/cleanup", [Fixture.cleanup()], "body"),
                ("/cleanup/batch", [Fixture.cleanup(), Fixture.cleanup(user: "")], "[1].UserId"),
                ("/cleanup/batch", [Fixture.cleanup(), "x"], "[1]"),
                ("/cleanup/batch", "x", "body"),
            ]
            for (path, body, field) in cases {
                let response = try await client.post(Fixture.devices() + path, object: body)
                try assertProblem(response, .badRequest, field: field)
            }
            var bad = Fixture.cleanup()
            bad["MobileAppId"] = "not-a-uuid"
            try assertProblem(try await client.post(Fixture.devices() + "/cleanup", object: bad), .badRequest, field: "MobileAppId")
        }
        await assertNothingPublished(harness.publisher)
    }
}
