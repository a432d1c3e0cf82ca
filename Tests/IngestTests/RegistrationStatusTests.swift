import Contracts
import Foundation
import Hummingbird
import HummingbirdTesting
import Ingest
import Projections
import XCTest

/// `POST …/devices/status/`: stored outcomes in request order; `Pending` for everything a
/// caller may not see or that is not stored.
final class RegistrationStatusTests: XCTestCase {
    let succeeded = UUID()
    let failed = UUID()
    let otherAppsRequest = UUID()

    /// An app with a token, two stored statuses, and a status stored for another app of the org.
    func seededHarness(revoked: Bool = false) async -> Harness {
        let harness = Harness()
        _ = await harness.seedApp(revoked: revoked)
        _ = await harness.seedApp(Fixture.otherAppId, rawToken: Fixture.otherRawToken)
        await harness.store.seed(status: RegistrationStatusRow(requestId: succeeded, appId: Fixture.appId, status: .Success,
                                                                failureReason: nil, decidedAt: Date()))
        await harness.store.seed(status: RegistrationStatusRow(requestId: failed, appId: Fixture.appId, status: .Failed,
                                                                failureReason: .DuplicateExists, decidedAt: Date()))
        await harness.store.seed(status: RegistrationStatusRow(requestId: otherAppsRequest, appId: Fixture.otherAppId,
                                                                status: .Success, failureReason: nil, decidedAt: Date()))
        return harness
    }

    func query(_ ids: [UUID], app: UUID = Fixture.appId, token: String = Fixture.rawToken) -> [String: Any] {
        ["RegistrationRequestIds": ids.map(\.uuidString), "MobileAppId": app.uuidString, "ApiToken": token]
    }

    func statuses(_ harness: Harness, _ body: [String: Any], org: UUID = Fixture.orgId,
                  path: String = "/devices/status/") async throws -> [[String: String]] {
        let json = try Fixture.json(body)
        let response = try await harness.test { client in
            try await client.post(Fixture.base(org) + path, json: json)
        }
        XCTAssertEqual(response.status, .ok)
        XCTAssertEqual(response.headers[.contentType], "application/json")
        return try XCTUnwrap(JSONSerialization.jsonObject(with: Data(response.body.readableBytesView)) as? [[String: String]])
    }

    func testStatusesAnswerInRequestOrderWithPendingForUnknownIds() async throws {
        let harness = await seededHarness()
        let answer = try await statuses(harness, query([failed, UUID(), succeeded]))
        XCTAssertEqual(answer, [
            ["Status": "Failed", "FailureReason": "DuplicateExists"],
            ["Status": "Pending"],
            ["Status": "Success"],
        ])
        await assertNothingPublished(harness.publisher)
    }

    func testStatusRouteWithoutTrailingSlashAnswersTheSame() async throws {
        let harness = await seededHarness()
        let answer = try await statuses(harness, query([succeeded, failed]), path: "/devices/status")
        XCTAssertEqual(answer, [["Status": "Success"], ["Status": "Failed", "FailureReason": "DuplicateExists"]])
    }

    func testLowerCaseIdsFindTheirStatuses() async throws {
        let harness = await seededHarness()
        let body: [String: Any] = ["RegistrationRequestIds": [succeeded.uuidString.lowercased()],
                                   "MobileAppId": Fixture.appId.uuidString.lowercased(), "ApiToken": Fixture.rawToken]
        let answer = try await statuses(harness, body)
        XCTAssertEqual(answer, [["Status": "Success"]])
    }

    func testWrongApiTokenAnswersPendingForEveryId() async throws {
        let harness = await seededHarness()
        let answer = try await statuses(harness, query([succeeded, failed], token: "forged-token"))
        XCTAssertEqual(answer, [["Status": "Pending"], ["Status": "Pending"]])
    }

    func testRevokedApiTokenAnswersPendingForEveryId() async throws {
        let harness = await seededHarness(revoked: true)
        let answer = try await statuses(harness, query([succeeded, failed]))
        XCTAssertEqual(answer, [["Status": "Pending"], ["Status": "Pending"]])
    }

    func testAnotherAppsTokenAnswersPending() async throws {
        let harness = await seededHarness()
        let answer = try await statuses(harness, query([succeeded], token: Fixture.otherRawToken))
        XCTAssertEqual(answer, [["Status": "Pending"]])
    }

    func testAnotherAppsRequestsArePendingEvenWithAValidToken() async throws {
        let harness = await seededHarness()
        let answer = try await statuses(harness, query([otherAppsRequest, succeeded]))
        XCTAssertEqual(answer, [["Status": "Pending"], ["Status": "Success"]])
    }

    func testAppOfAnotherOrgAnswersPending() async throws {
        let harness = await seededHarness()
        let answer = try await statuses(harness, query([succeeded]), org: UUID())
        XCTAssertEqual(answer, [["Status": "Pending"]])
    }

    func testUnknownAppAnswersPending() async throws {
        let harness = await seededHarness()
        let answer = try await statuses(harness, query([succeeded], app: UUID()))
        XCTAssertEqual(answer, [["Status": "Pending"]])
    }

    func testEmptyIdListAnswersEmptyArray() async throws {
        let harness = await seededHarness()
        let answer = try await statuses(harness, query([]))
        XCTAssertEqual(answer, [])
    }

    func testNonUUIDRequestIdIs400NamingIt() async throws {
        let harness = await seededHarness()
        let body: [String: Any] = ["RegistrationRequestIds": [succeeded.uuidString, "not-a-uuid"],
                                   "MobileAppId": Fixture.appId.uuidString, "ApiToken": Fixture.rawToken]
        let json = try Fixture.json(body)
        let response = try await harness.test { client in
            try await client.post(Fixture.base() + "/devices/status/", json: json)
        }
        try assertProblem(response, .badRequest, field: "RegistrationRequestIds[1]")
    }

    func testMissingFieldsAre400NamingThem() async throws {
        let harness = await seededHarness()
        let cases: [(body: String, field: String)] = try [
            (Fixture.json(["MobileAppId": Fixture.appId.uuidString, "ApiToken": "t"]), "RegistrationRequestIds"),
            (Fixture.json(["RegistrationRequestIds": [String](), "ApiToken": "t"]), "MobileAppId"),
            (Fixture.json(["RegistrationRequestIds": [String](), "MobileAppId": "app", "ApiToken": "t"]), "MobileAppId"),
            (Fixture.json(["RegistrationRequestIds": [String](), "MobileAppId": Fixture.appId.uuidString]), "ApiToken"),
            (Fixture.json(["RegistrationRequestIds": "x", "MobileAppId": Fixture.appId.uuidString, "ApiToken": "t"]), "RegistrationRequestIds"),
        ]
        try await harness.test { client in
            for (body, field) in cases {
                let response = try await client.post(Fixture.base() + "/devices/status", json: body)
                try assertProblem(response, .badRequest, field: field)
            }
        }
    }

    func testMoreIdsThanAllowedAre400AndNothingIsRead() async throws {
        let harness = await seededHarness()
        let ids = (0...DeviceRegistrationAPI.maxStatusIds).map { _ in UUID() }
        let json = try Fixture.json(query(ids))
        let response = try await harness.test { client in
            try await client.post(Fixture.base() + "/devices/status/", json: json)
        }
        try assertProblem(response, .badRequest, field: "RegistrationRequestIds")
        let reads = await harness.store.readCount
        XCTAssertEqual(reads, 0)
        let allowed = try await statuses(harness, query(Array(ids.prefix(DeviceRegistrationAPI.maxStatusIds))))
        XCTAssertEqual(allowed.count, DeviceRegistrationAPI.maxStatusIds)
    }

    func testEachIdSpendsOneRequestOfTheAppsClientLimitAndForgedQueriesSpendNone() async throws {
        var harness = await seededHarness()
        harness.configuration.appRateLimit = RateLimit(perSecond: 1, burst: 5)
        let forged = try Fixture.json(query([succeeded, failed, UUID(), UUID(), UUID()], token: "forged"))
        let three = try Fixture.json(query([succeeded, failed, UUID()]))
        let (forgedAnswers, first, second) = try await harness.test { client in
            var forgedAnswers: [HTTPResponse.Status] = []
            for _ in 0..<3 { forgedAnswers.append(try await client.post(Fixture.base() + "/devices/status", json: forged).status) }
            let first = try await client.post(Fixture.base() + "/devices/status", json: three)
            let second = try await client.post(Fixture.base() + "/devices/status", json: three)
            return (forgedAnswers, first, second)
        }
        XCTAssertEqual(forgedAnswers, [.ok, .ok, .ok], "forged queries are answered Pending and spend nothing")
        XCTAssertEqual(first.status, .ok)
        try assertProblem(second, .tooManyRequests, field: nil)
        XCTAssertNotNil(second.headers[.retryAfter])
    }

    func testStoreFailureIs503WithRetryAfter() async throws {
        let harness = await seededHarness()
        await harness.store.failEveryRead()
        let json = try Fixture.json(query([succeeded]))
        let response = try await harness.test { client in
            try await client.post(Fixture.base() + "/devices/status/", json: json)
        }
        try assertProblem(response, .serviceUnavailable, field: nil)
        XCTAssertEqual(response.headers[.retryAfter], "1")
    }
}
