import Contracts
import Foundation
import Hummingbird
import HummingbirdTesting
import Ingest
import XCTest

/// The registration API's write routes answer a forged request as that API does (202, nothing
/// learnt), but write nothing for a command whose API token is not a live token of its app, count
/// it, and spend the per-app rate limit of the apps whose commands they do write.
final class ForgedTrafficTests: XCTestCase {
    private static let forgedLine = "pushline_ingest_forged_commands_total"

    private static func forgedCount(_ client: any TestClientProtocol) async throws -> Double {
        OpsTests.value(of: Self.forgedLine, in: String(buffer: try await client.execute(uri: "/metrics", method: .get).body))
    }

    func testACommandWithATokenThatIsNotLiveIs202AndNotWritten() async throws {
        let harness = await Harness.withClientApps()
        let revokedId = await harness.seedApp(rawToken: "revoked-token")
        await harness.store.revoke(tokenId: revokedId)
        let (before, after) = try await harness.test { client in
            let before = try await Self.forgedCount(client)
            for registration in [Fixture.registration(token: "made-up-token"), Fixture.registration(token: "revoked-token"),
                                 Fixture.registration(app: UUID(), token: Fixture.rawToken),
                                 Fixture.registration(token: Fixture.otherRawToken)] {
                let response = try await client.post(Fixture.devices(), object: registration, headers: [.xMsTrackRegistration: "true"])
                XCTAssertEqual(response.status, .accepted, "the registration API's answer, whatever the token")
                XCTAssertNoThrow(try decodeBody(DeviceRegistrationAPI.RegistrationAccepted.self, response))
            }
            let cleanup = try await client.post(Fixture.devices() + "/cleanup", object: Fixture.cleanup(token: "made-up-token"))
            XCTAssertEqual(cleanup.status, .accepted)
            return (before, try await Self.forgedCount(client))
        }
        await assertNothingPublished(harness.publisher)
        XCTAssertEqual(after - before, 5)
    }

    func testABatchWritesOnlyItsCommandsWithALiveTokenAndAnswersEveryId() async throws {
        let harness = await Harness.withClientApps()
        let batch = [Fixture.registration(user: "a"), Fixture.registration(user: "forged", token: "made-up-token"),
                     Fixture.registration(user: "b")]
        let json = try Fixture.json(batch)
        let response = try await harness.test { client in
            try await client.post(Fixture.devices() + "/batch", json: json, headers: [.xMsTrackRegistration: "true"])
        }
        XCTAssertEqual(response.status, .accepted)
        let ids = try decodeBody([DeviceRegistrationAPI.RegistrationAccepted].self, response)
        XCTAssertEqual(ids.count, 3, "a forged element gets its id like any other (it stays Pending)")
        let written = try await harness.published(DeviceRegistrationRequested.self)
        XCTAssertEqual(written.map(\.userId), ["a", "b"])
        XCTAssertEqual(written.map(\.registrationRequestId), [ids[0].RegistrationRequestId, ids[2].RegistrationRequestId])
    }

    func testWhenTheStoreCannotBeReadTheCommandIsWrittenForTheProcessorToJudge() async throws {
        let harness = await Harness.withClientApps()
        await harness.store.failEveryRead()
        let response = try await harness.test { client in try await client.post(Fixture.devices(), object: Fixture.registration()) }
        XCTAssertEqual(response.status, .accepted)
        let written = try await harness.published(DeviceRegistrationRequested.self)
        XCTAssertEqual(written.count, 1)
    }

    func testThePerAppLimitCoversTheSeedRoutesAndForgedRequestsDoNotSpendIt() async throws {
        var harness = await Harness.withClientApps()
        harness.configuration.appRateLimit = RateLimit(perSecond: 1, burst: 2)
        let statuses = try await harness.test { client in
            var statuses: [HTTPResponse.Status] = []
            // Forged requests naming the app spend nothing of its budget.
            for _ in 0..<5 {
                statuses.append(try await client.post(Fixture.devices(), object: Fixture.registration(token: "made-up-token")).status)
            }
            statuses.append(try await client.post(Fixture.devices(), object: Fixture.registration()).status)
            statuses.append(try await client.post(Fixture.devices() + "/cleanup", object: Fixture.cleanup()).status)
            let limited = try await client.post(Fixture.devices() + "/batch", object: [Fixture.registration()])
            statuses.append(limited.status)
            XCTAssertNotNil(limited.headers[.retryAfter])
            // Another app has a budget of its own.
            statuses.append(try await client.post(Fixture.devices(), object: Fixture.registration(app: Fixture.otherAppId,
                                                                                                  token: Fixture.otherRawToken)).status)
            return statuses
        }
        XCTAssertEqual(statuses, Array(repeating: .accepted, count: 7) + [.tooManyRequests, .accepted])
        let calls = await harness.publisher.calls.count
        XCTAssertEqual(calls, 3)
    }
}
