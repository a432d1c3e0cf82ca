import Contracts
import Foundation
import Hummingbird
import HummingbirdTesting
import XCTest

/// Every free-form field has one documented limit (`FieldLimits`): a value of exactly the limit
/// is accepted and written, one byte more is a 400 naming the field and writes nothing. A request
/// whose command could never fit one Kafka record is a 413, never a 503.
final class FieldLimitsTests: XCTestCase {
    /// One field of one route: the request with `value` in that field, its success status and
    /// the field a refusal names.
    private struct Case {
        var name: String
        var limit: Int
        var field: String
        var success: HTTPResponse.Status
        var request: @Sendable (any TestClientProtocol, String) async throws -> TestResponse
    }

    private static func text(_ bytes: Int) -> String { String(repeating: "u", count: bytes) }

    private static let cases: [Case] = [
        Case(name: "registration UserId", limit: FieldLimits.userIdBytes, field: "UserId", success: .accepted) { client, value in
            try await client.post(Fixture.devices(), object: Fixture.registration(user: value))
        },
        Case(name: "registration batch UserId", limit: FieldLimits.userIdBytes, field: "[1].UserId", success: .accepted) { client, value in
            try await client.post(Fixture.devices() + "/batch", object: [Fixture.registration(), Fixture.registration(user: value)])
        },
        Case(name: "registration ApiToken", limit: FieldLimits.apiTokenBytes, field: "ApiToken", success: .accepted) { client, value in
            try await client.post(Fixture.devices(), object: Fixture.registration(token: value))
        },
        Case(name: "registration TimeZone", limit: FieldLimits.timeZoneBytes, field: "TimeZone", success: .accepted) { client, value in
            try await client.post(Fixture.devices(), object: Fixture.registration(timeZone: value))
        },
        Case(name: "registration cleanup UserId", limit: FieldLimits.userIdBytes, field: "UserId", success: .accepted) { client, value in
            try await client.post(Fixture.devices() + "/cleanup", object: Fixture.cleanup(user: value))
        },
        Case(name: "registration cleanup DeviceToken", limit: FieldLimits.deviceTokenBytes, field: "DeviceToken", success: .accepted) { client, value in
            try await client.post(Fixture.devices() + "/cleanup", object: Fixture.cleanup(device: value))
        },
        Case(name: "send userId", limit: FieldLimits.userIdBytes, field: "userId", success: .accepted) { client, value in
            try await client.bearer(.post, Fixture.notifications(), json: try Fixture.json(["userId": value, "title": "t"]))
        },
        Case(name: "send userIds", limit: FieldLimits.userIdBytes, field: "userIds[1]", success: .accepted) { client, value in
            try await client.bearer(.post, Fixture.notifications(), json: try Fixture.json(["userIds": ["a", value], "title": "t"]))
        },
        Case(name: "send businessId", limit: FieldLimits.shortTextBytes, field: "businessId", success: .accepted) { client, value in
            try await client.bearer(.post, Fixture.notifications(), json: try Fixture.json(["userId": "u", "title": "t", "businessId": value]))
        },
        Case(name: "send ticketId", limit: FieldLimits.shortTextBytes, field: "ticketId", success: .accepted) { client, value in
            try await client.bearer(.post, Fixture.notifications(),
                                    json: try Fixture.json(["userId": "u", "title": "t", "kind": "ticket", "ticketId": value]))
        },
        Case(name: "ack bid", limit: FieldLimits.shortTextBytes, field: "bid", success: .created) { client, value in
            try await client.bearer(.put, Fixture.bw("acks"), json: try Fixture.json([
                "nid": "0a1868e6-04c9-4d3b-8125-2f9597f68e78", "did": Fixture.apnsToken, "bid": value,
            ]))
        },
        Case(name: "KF5 userToken", limit: FieldLimits.userIdBytes, field: "userToken", success: .created) { client, value in
            try await client.bearer(.post, Fixture.kf5Tokens(), json: try Fixture.json(["userToken": value, "deviceToken": Fixture.apnsToken]))
        },
        Case(name: "tracking broadlogId", limit: FieldLimits.broadlogIdBytes, field: "broadlogId", success: .accepted) { client, value in
            try await client.bearer(.post, Fixture.tracking(), json: try Fixture.json([
                "deliveryId": "0a1868e6-04c9-4d3b-8125-2f9597f68e78", "broadlogId": value, "action": "7",
            ]))
        },
        Case(name: "admin app name", limit: FieldLimits.shortTextBytes, field: "name", success: .created) { client, value in
            try await client.admin(.post, "/admin/v1/apps", json: try Fixture.json(["name": value]))
        },
    ]

    func testEveryLimitAcceptsItsLengthAndRefusesOneByteMoreNamingTheField() async throws {
        for item in Self.cases {
            let harness = await Harness.withClientApps()
            // An API token of the longest length, live, so that the request at the limit is written.
            _ = await harness.seedApp(rawToken: Self.text(FieldLimits.apiTokenBytes))
            let accepted = try await harness.test { client in try await item.request(client, Self.text(item.limit)) }
            XCTAssertEqual(accepted.status, item.success, "\(item.name) at its limit: \(String(buffer: accepted.body))")
            let published = await harness.publisher.calls.count
            XCTAssertEqual(published, 1, "\(item.name) at its limit is written")

            let refused = try await harness.test { client in try await item.request(client, Self.text(item.limit + 1)) }
            try assertProblem(refused, .badRequest, field: item.field)
            let after = await harness.publisher.calls.count
            XCTAssertEqual(after, 1, "\(item.name) past its limit writes nothing")
        }
    }

    func testCallbackHeadersAreBoundedAndMayNotFrameOrRouteTheRequest() async throws {
        let harness = Harness()
        await harness.seedClientApps()
        func register(_ headers: [String: String]) async throws -> TestResponse {
            try await harness.test { client in
                try await client.post(Fixture.devices(), object: Fixture.registration(), headers: [
                    .xMsCallbackURL: Fixture.callbackURL, .xMsCallbackURLHeaders: try Fixture.json(headers),
                ])
            }
        }
        for name in ["Host", "connection", "Transfer-Encoding", "TE", "Upgrade", "Expect", "Content-Length", "Proxy-Authorization"] {
            try assertProblem(try await register([name: "x"]), .badRequest, field: "x-ms-callback-url-headers")
        }
        try assertProblem(try await register(["X-Key": String(repeating: "v", count: FieldLimits.callbackHeaderValueBytes + 1)]),
                          .badRequest, field: "x-ms-callback-url-headers")
        let many = Dictionary(uniqueKeysWithValues: (0...FieldLimits.callbackHeaderCount).map { ("X-H\($0)", "v") })
        try assertProblem(try await register(many), .badRequest, field: "x-ms-callback-url-headers")
        await assertNothingPublished(harness.publisher)
        let fine = try await register(["X-Key": String(repeating: "v", count: FieldLimits.callbackHeaderValueBytes)])
        XCTAssertEqual(fine.status, .accepted)

        let patch = try await harness.test { client in
            try await client.admin(.patch, "/admin/v1/apps/\(Fixture.appId)", json: try Fixture.json(["callbackHeaders": ["Host": "evil.example"]]))
        }
        try assertProblem(patch, .badRequest, field: "callbackHeaders")
    }

    func testARequestWhoseCommandCannotFitOneRecordIs413() async throws {
        // A device token far past the 4096-byte limit is the registration API's asynchronous
        // DeviceTokenTooLong, but one that makes the command larger than a record is refused now.
        let harness = Harness()
        await harness.seedClientApps()
        let huge = String(repeating: "a", count: FieldLimits.commandBytes)
        let response = try await harness.test { client in
            try await client.post(Fixture.devices(), object: Fixture.registration(apns: huge), headers: [:])
        }
        XCTAssertEqual(response.status, .contentTooLarge, String(buffer: response.body))
        await assertNothingPublished(harness.publisher)
    }
}
