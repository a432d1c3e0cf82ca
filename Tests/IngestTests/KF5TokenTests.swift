import Contracts
import Foundation
import Hummingbird
import HummingbirdTesting
import XCTest

/// The KF5 SDK's `saveToken`/`deleteToken` (docs/API.md#kf5-sdk-token-api): `POST`/`DELETE
/// /kf5/v1/apps/{mobileAppId}/tokens`.
final class KF5TokenTests: XCTestCase {
    private static func body(user: String? = "123", token: String? = Fixture.apnsToken, type: String? = nil) throws -> String {
        var body: [String: Any] = [:]
        if let user { body["userToken"] = user }
        if let token { body["deviceToken"] = token }
        if let type { body["type"] = type }
        return try Fixture.json(body)
    }

    func testSavingATokenPublishesARegistrationFor201() async throws {
        let harness = Harness()
        await harness.seedClientApps()
        let response = try await harness.test { client in
            try await client.bearer(.post, Fixture.kf5Tokens(), json: try Self.body())
        }
        assertEmpty(response, .created)
        let command = try await harness.onlyPublished(DeviceRegistrationRequested.self)
        XCTAssertEqual(command, DeviceRegistrationRequested(
            registrationRequestId: command.registrationRequestId, orgId: Fixture.orgId, mobileAppId: Fixture.appId, userId: "123",
            platform: .ios, deviceToken: Fixture.apnsToken, apiTokenHash: Fixture.rawTokenHash, trackStatus: false, callback: nil))
        let encoded = await harness.publisher.commands
        XCTAssertEqual(encoded.map(\.key), [Fixture.appKey])
        XCTAssertEqual(encoded.map(\.topic), ["pushline.commands.registration"])
    }

    func testThePlatformComesFromTypeOrElseFromTheTokensFormat() async throws {
        let harness = Harness()
        await harness.seedClientApps()
        let bodies = [
            try Self.body(token: Fixture.fcmToken),                    // no type, not APNs → Android
            try Self.body(token: Fixture.apnsToken, type: "ios"),
            try Self.body(token: Fixture.fcmToken, type: "Android"),
            try Self.body(token: Fixture.apnsToken, type: ""),         // empty type counts as absent
        ]
        try await harness.test { client in
            for json in bodies {
                assertEmpty(try await client.bearer(.post, Fixture.kf5Tokens(), json: json), .created)
            }
        }
        let commands = try await harness.published(DeviceRegistrationRequested.self)
        XCTAssertEqual(commands.map(\.platform), [.android, .ios, .android, .ios])
        XCTAssertEqual(commands.map(\.deviceToken), [Fixture.fcmToken, Fixture.apnsToken, Fixture.fcmToken, Fixture.apnsToken])
    }

    func testInvalidSavesAre400() async throws {
        let harness = Harness()
        await harness.seedClientApps()
        let cases: [(json: String, field: String)] = [
            (try Self.body(user: nil), "userToken"),
            (try Self.body(user: ""), "userToken"),
            (#"{"userToken": 123, "deviceToken": "\#(Fixture.apnsToken)"}"#, "userToken"),
            (try Self.body(token: nil), "deviceToken"),
            (try Self.body(token: "1234567890"), "deviceToken"),          // the SDK documentation's placeholder: neither format
            (try Self.body(token: Fixture.apnsToken, type: "ANDROID"), "deviceToken"),
            (try Self.body(token: Fixture.fcmToken, type: "IOS"), "deviceToken"),
            (try Self.body(token: String(repeating: "a", count: 4097)), "deviceToken"),
            (try Self.body(type: "WEB"), "type"),
        ]
        try await harness.test { client in
            for (json, field) in cases {
                try assertProblem(try await client.bearer(.post, Fixture.kf5Tokens(), json: json), .badRequest, field: field)
            }
        }
        await assertNothingPublished(harness.publisher)
    }

    func testDeletingATokenPublishesACleanupFor200() async throws {
        let harness = Harness()
        await harness.seedClientApps()
        let response = try await harness.test { client in
            try await client.bearer(.delete, Fixture.kf5Tokens(), json: try Self.body(token: "any-token-format", type: "whatever"))
        }
        assertEmpty(response, .ok)
        let command = try await harness.onlyPublished(DeviceCleanupRequested.self)
        XCTAssertEqual(command, DeviceCleanupRequested(orgId: Fixture.orgId, mobileAppId: Fixture.appId, userId: "123",
                                                       deviceToken: "any-token-format", apiTokenHash: Fixture.rawTokenHash))
        let keys = await harness.publisher.commands.map(\.key)
        XCTAssertEqual(keys, [Fixture.appKey])
    }

    func testInvalidDeletesAre400() async throws {
        let harness = Harness()
        await harness.seedClientApps()
        let cases: [(json: String, field: String)] = [
            (try Self.body(user: nil), "userToken"),
            (try Self.body(token: nil), "deviceToken"),
            (try Self.body(token: ""), "deviceToken"),
            (try Self.body(token: String(repeating: "a", count: 4097)), "deviceToken"),
            ("[]", "body"),
        ]
        try await harness.test { client in
            for (json, field) in cases {
                try assertProblem(try await client.bearer(.delete, Fixture.kf5Tokens(), json: json), .badRequest, field: field)
            }
        }
        await assertNothingPublished(harness.publisher)
    }
}
