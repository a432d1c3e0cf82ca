import Contracts
import Foundation
import Hummingbird
import HummingbirdTesting
import WireCodec
import XCTest

/// Ingest with every app split into parts (`PUSHLINE_APP_PARTS`, docs/ARCHITECTURE.md#one-app-in-parts):
/// a request's commands are written to the parts they concern, in its one publish call.
final class AppPartsIngestTests: XCTestCase {
    private func harness() async -> Harness {
        var harness = Harness()
        harness.configuration.shared.appParts = AppParts(2)
        await harness.seedClientApps()
        return harness
    }

    /// The parts of the commands published so far, by type.
    private func parts(_ harness: Harness) async throws -> [(type: String, part: Int)] {
        try await harness.publisher.commands.map { command in
            let envelope = try WireJSON.decoder().decode(Envelope<EmptyPayload>.self, from: command.value)
            XCTAssertEqual(envelope.appPart, command.part)
            return (command.type, command.part)
        }
    }

    func testASendGoesToEveryPartAndARegistrationToItsTokensPart() async throws {
        let harness = await harness()
        let token = String(repeating: "ab", count: 32)
        let registration = try await harness.test { client in
            try await client.bearer(.post, Fixture.kf5Tokens(), json: #"{"userToken": "u", "deviceToken": "\#(token)"}"#)
        }
        XCTAssertLessThan(registration.status.code, 300, String(buffer: registration.body))
        let send = try await harness.test { client in
            try await client.bearer(.post, Fixture.notifications(), json: #"{"userId": "u", "title": "t"}"#)
        }
        XCTAssertEqual(send.status, .accepted, String(buffer: send.body))
        let published = try await parts(harness)
        XCTAssertEqual(published.map(\.part), [AppParts(2).part(ofToken: token), 0, 1])
        XCTAssertEqual(published.map(\.type), ["registration.device-registration-requested", "notification.requested", "notification.requested"])
        let calls = await harness.publisher.calls
        XCTAssertEqual(calls.map(\.commands.count), [1, 2], "a request's records go in its one publish call")
    }

    func testATrackingReportIsSplitByItsEventsParts() async throws {
        let harness = await harness()
        let delivery = UUID()
        let json = """
            [{"deliveryId": "\(delivery)", "broadlogId": "\(AppParts.messageIndex(place: 2, part: 1))-0011223344556677", "action": 2},
             {"deliveryId": "\(delivery)", "broadlogId": "3-0011223344556677", "action": 1}]
            """
        let response = try await harness.test { client in try await client.bearer(.post, Fixture.tracking(), json: json) }
        XCTAssertEqual(response.status, .accepted, String(buffer: response.body))
        let published = try await parts(harness)
        XCTAssertEqual(published.map(\.part), [0, 1])
        let reports = try await harness.published(TrackingReported.self)
        XCTAssertEqual(reports.map { $0.events.map(\.broadlogId) }, [["3-0011223344556677"],
                                                                     ["\(AppParts.messageIndex(place: 2, part: 1))-0011223344556677"]])
    }
}

/// Any payload, for reading an envelope's own fields.
private struct EmptyPayload: Codable, Sendable {}
