import Contracts
import Foundation
import Hummingbird
import HummingbirdTesting
import Projections
import WireCodec
import XCTest

/// `POST /v1/apps/{id}/tracking` and `GET /v1/apps/{id}/deliveries/{deliveryId}`
/// (docs/API.md#engagement-tracking): the tracking SDK's event shapes, one command per delivery,
/// every invalid event a 400 naming it.
final class TrackingTests: XCTestCase {
    private static let d1 = UUID(uuidString: "0A1868E6-04C9-4D3B-8125-2F9597F68E78")!
    private static let d2 = UUID(uuidString: "5d0c7a3e-9b61-4c2f-a8e4-3f1b2c9d8e70")!
    private var d1: UUID { Self.d1 }
    private var d2: UUID { Self.d2 }

    private func track(_ json: String, harness: Harness) async throws -> TestResponse {
        try await harness.test { client in try await client.bearer(.post, Fixture.tracking(), json: json) }
    }

    func testOneEventWithTheSeedsStringActionIsOneCommandKeyedByDelivery() async throws {
        let harness = Harness()
        await harness.seedClientApps()
        // Upper-case, as a client may echo it; the command carries the id itself.
        let response = try await track(#"{"deliveryId": "0A1868E6-04C9-4D3B-8125-2F9597F68E78", "broadlogId": "3-00112233aabbccdd", "action": "7"}"#,
                                       harness: harness)
        XCTAssertEqual(response.status, .accepted, String(buffer: response.body))
        XCTAssertEqual(try decodeBody(TrackingAPI.Accepted.self, response), TrackingAPI.Accepted(accepted: 1))
        let command = try await harness.onlyPublished(TrackingReported.self)
        XCTAssertEqual(command, TrackingReported(mobileAppId: Fixture.appId, deliveryId: d1,
                                                 events: [TrackingEvent(broadlogId: "3-00112233aabbccdd", action: .impression)]))
        let encoded = await harness.publisher.commands
        XCTAssertEqual(encoded.map(\.topic), ["pushline.commands.tracking"])
        XCTAssertEqual(encoded.map(\.key), [Fixture.appKey])
        XCTAssertEqual(encoded.map(\.type), ["tracking.reported"])
    }

    func testABatchIsGroupedByDeliveryInRequestOrderWithStringAndIntegerActions() async throws {
        let harness = Harness()
        await harness.seedClientApps()
        let json = """
            [{"deliveryId": "\(d1)", "broadlogId": "0-a", "action": "7"},
             {"deliveryId": "\(d2)", "broadlogId": "1-b", "action": 2},
             {"deliveryId": "\(d1)", "broadlogId": "0-a", "action": 1},
             {"deliveryId": "\(d1)", "broadlogId": "0-a", "action": "1"}]
            """
        let response = try await track(json, harness: harness)
        XCTAssertEqual(try decodeBody(TrackingAPI.Accepted.self, response), TrackingAPI.Accepted(accepted: 4))
        let commands = try await harness.published(TrackingReported.self)
        XCTAssertEqual(commands, [
            TrackingReported(mobileAppId: Fixture.appId, deliveryId: d1, events: [
                TrackingEvent(broadlogId: "0-a", action: .impression), TrackingEvent(broadlogId: "0-a", action: .open),
                TrackingEvent(broadlogId: "0-a", action: .open),
            ]),
            TrackingReported(mobileAppId: Fixture.appId, deliveryId: d2, events: [TrackingEvent(broadlogId: "1-b", action: .click)]),
        ], "duplicates travel as sent: the processor counts them as repeats")
        let calls = await harness.publisher.calls
        XCTAssertEqual(calls.count, 1, "one request, one publish call")
    }

    func testAThousandEventsAreOneRequestAndOneMoreIsRefused() async throws {
        let harness = Harness()
        await harness.seedClientApps()
        func batch(_ n: Int) -> String {
            "[" + (0..<n).map { #"{"deliveryId": "\#(d1)", "broadlogId": "\#($0)-x", "action": 7}"# }.joined(separator: ",") + "]"
        }
        let accepted = try await track(batch(1000), harness: harness)
        XCTAssertEqual(try decodeBody(TrackingAPI.Accepted.self, accepted).accepted, 1000)
        let command = try await harness.onlyPublished(TrackingReported.self)
        XCTAssertEqual(command.events.count, 1000)
        XCTAssertEqual(command.events.last?.broadlogId, "999-x")

        let refused = Harness()
        await refused.seedClientApps()
        try assertProblem(try await track(batch(1001), harness: refused), .badRequest, field: "body")
        try assertProblem(try await track("[]", harness: refused), .badRequest, field: "body")
        await assertNothingPublished(refused.publisher)
    }

    func testAnyInvalidEventRefusesTheWholeRequestNamingIt() async throws {
        let good = #"{"deliveryId": "\#(d1)", "broadlogId": "0-a", "action": "7"}"#
        let cases: [(String, String)] = [
            (#"{"broadlogId": "0-a", "action": "7"}"#, "[1].deliveryId"),
            (#"{"deliveryId": "", "broadlogId": "0-a", "action": "7"}"#, "[1].deliveryId"),
            (#"{"deliveryId": "not-a-uuid", "broadlogId": "0-a", "action": "7"}"#, "[1].deliveryId"),
            (#"{"deliveryId": "\#(d1)", "action": "7"}"#, "[1].broadlogId"),
            (#"{"deliveryId": "\#(d1)", "broadlogId": "", "action": "7"}"#, "[1].broadlogId"),
            (#"{"deliveryId": "\#(d1)", "broadlogId": 17, "action": "7"}"#, "[1].broadlogId"),
            (#"{"deliveryId": "\#(d1)", "broadlogId": "\#(String(repeating: "9", count: 129))", "action": "7"}"#, "[1].broadlogId"),
            (#"{"deliveryId": "\#(d1)", "broadlogId": "0-a"}"#, "[1].action"),
            (#"{"deliveryId": "\#(d1)", "broadlogId": "0-a", "action": "3"}"#, "[1].action"),
            (#"{"deliveryId": "\#(d1)", "broadlogId": "0-a", "action": 3}"#, "[1].action"),
            (#"{"deliveryId": "\#(d1)", "broadlogId": "0-a", "action": "07"}"#, "[1].action"),
            (#"{"deliveryId": "\#(d1)", "broadlogId": "0-a", "action": "open"}"#, "[1].action"),
            (#"{"deliveryId": "\#(d1)", "broadlogId": "0-a", "action": true}"#, "[1].action"),
            (#"{"deliveryId": "\#(d1)", "broadlogId": "0-a", "action": 7.5}"#, "[1].action"),
            (#"{"deliveryId": "\#(d1)", "broadlogId": "0-a", "action": null}"#, "[1].action"),
            (#""event""#, "[1]"),
        ]
        let harness = Harness()
        await harness.seedClientApps()
        for (bad, field) in cases {
            let response = try await track("[\(good), \(bad), \(good)]", harness: harness)
            try assertProblem(response, .badRequest, field: field)
            // The same event alone names the field without an index.
            if field != "[1]" {
                try assertProblem(try await track(bad, harness: harness), .badRequest, field: String(field.dropFirst(4)))
            }
        }
        await assertNothingPublished(harness.publisher)
    }

    func testStatsOfADeliveryWithCountsAndRates() async throws {
        let harness = Harness()
        await harness.seedClientApps()
        let delivery = DeliveryRow(appId: Fixture.appId, deliveryId: d1, kind: .alert, managed: false, tracking: true, sent: 8,
                                   createdAt: Date(), delivered: 5, failed: 1, unregistered: 1)
        await harness.store.seed(stats: DeliveryStatsRow(delivery: delivery, impressions: 4, clicks: 3, opens: 2, repeatsIgnored: 5))
        let response = try await harness.test { client in
            try await client.bearer(.get, Fixture.delivery("0A1868E6-04C9-4D3B-8125-2F9597F68E78"))
        }
        XCTAssertEqual(response.status, .ok)
        XCTAssertEqual(response.headers[.contentType], "application/json")
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(String(buffer: response.body).utf8)) as? [String: Any])
        XCTAssertEqual(Set(object.keys), ["deliveryId", "sent", "impressions", "clicks", "opens", "repeatsIgnored",
                                          "clickThroughRate", "openRate", "delivered", "failed", "unregistered", "expired",
                                          "duplicates", "conflicts", "held", "dropped", "cancelled", "capped"])
        XCTAssertEqual(try decodeBody(TrackingAPI.DeliveryStats.self, response), TrackingAPI.DeliveryStats(
            deliveryId: d1, sent: 8, impressions: 4, clicks: 3, opens: 2, repeatsIgnored: 5, delivered: 5, failed: 1, unregistered: 1))
        XCTAssertEqual(object["deliveryId"] as? String, "0a1868e6-04c9-4d3b-8125-2f9597f68e78")
        XCTAssertEqual(object["clickThroughRate"] as? Double, 0.75)
        XCTAssertEqual(object["openRate"] as? Double, 0.25)
    }

    func testRatesAreZeroWithoutADenominator() {
        let stats = TrackingAPI.DeliveryStats(deliveryId: d1, sent: 0, impressions: 0, clicks: 2, opens: 0, repeatsIgnored: 0)
        XCTAssertEqual(stats.clickThroughRate, 0)
        XCTAssertEqual(stats.openRate, 0)
        let clicksWithoutImpressions = TrackingAPI.DeliveryStats(deliveryId: d1, sent: 4, impressions: 1, clicks: 2, opens: 1,
                                                                 repeatsIgnored: 0)
        XCTAssertEqual(clicksWithoutImpressions.clickThroughRate, 2, "iOS impressions are unreliable: > 1 is possible")
    }

    func testStatsAre404ForUnknownAndOtherAppsDeliveriesAnd400ForABadId() async throws {
        let harness = Harness()
        await harness.seedClientApps()
        let other = DeliveryRow(appId: Fixture.otherAppId, deliveryId: d2, kind: .alert, managed: false, tracking: true, sent: 1,
                                createdAt: Date())
        await harness.store.seed(stats: DeliveryStatsRow(delivery: other))
        let (d1, d2) = (Self.d1, Self.d2)
        try await harness.test { client in
            try assertProblem(try await client.bearer(.get, Fixture.delivery(d1.uuidString)), .notFound, field: "deliveryId")
            try assertProblem(try await client.bearer(.get, Fixture.delivery(d2.uuidString)), .notFound, field: "deliveryId")
            let own = try await client.bearer(.get, Fixture.delivery(d2.uuidString, app: Fixture.otherAppId.uuidString),
                                              token: Fixture.otherRawToken)
            XCTAssertEqual(own.status, .ok, "the other app sees its own delivery")
            try assertProblem(try await client.bearer(.get, Fixture.delivery("nope")), .badRequest, field: "deliveryId")
            let anonymous = try await client.bearer(.get, Fixture.delivery(d1.uuidString), token: nil)
            XCTAssertEqual(anonymous.status, .unauthorized)
            let foreign = try await client.bearer(.get, Fixture.delivery(d2.uuidString, app: Fixture.otherAppId.uuidString))
            XCTAssertEqual(foreign.status, .unauthorized, "another app's token")
        }
    }

    func testOutcomesArePagedInDeliveryOrderAndFilteredByOutcome() async throws {
        let harness = Harness()
        await harness.seedClientApps()
        let (d1, d2) = (Self.d1, Self.d2)
        let delivery = DeliveryRow(appId: Fixture.appId, deliveryId: d1, kind: .alert, managed: false, tracking: true, sent: 5,
                                   createdAt: Date(), delivered: 3, unregistered: 2)
        await harness.store.seed(stats: DeliveryStatsRow(delivery: delivery))
        let at = Date(timeIntervalSince1970: 1_800_000_000.5)
        for index in [4, 0, 2, 1, 3] {
            let dead = index % 2 == 1
            await harness.store.seed(outcome: DeliveryOutcomeRow(appId: Fixture.appId, deliveryId: d1, messageIndex: index,
                                                                 deviceToken: "token-\(index)", outcome: dead ? .unregistered : .delivered,
                                                                 reason: dead ? "Unregistered" : nil, reportedAt: at))
        }
        @Sendable func page(_ response: TestResponse) throws -> TrackingAPI.OutcomeList {
            XCTAssertEqual(response.status, .ok)
            return try WireJSON.decoder().decode(TrackingAPI.OutcomeList.self, from: Data(response.body.readableBytesView))
        }
        try await harness.test { client in
            let base = Fixture.delivery(d1.uuidString) + "/outcomes"
            let first = try page(try await client.bearer(.get, base + "?limit=2"))
            XCTAssertEqual(first.outcomes.map(\.index), [0, 1])
            XCTAssertEqual(first.outcomes[1], TrackingAPI.Outcome(index: 1, deviceToken: "token-1", outcome: .unregistered,
                                                                  reason: "Unregistered", reportedAt: at))
            XCTAssertEqual(first.next, 1)
            let rest = try page(try await client.bearer(.get, base + "?limit=2&after=1"))
            XCTAssertEqual(rest.outcomes.map(\.index), [2, 3])
            let last = try page(try await client.bearer(.get, base + "?limit=2&after=3"))
            XCTAssertEqual(last.outcomes.map(\.index), [4])
            XCTAssertNil(last.next)
            let beyond = try page(try await client.bearer(.get, base + "?after=4"))
            XCTAssertEqual(beyond, TrackingAPI.OutcomeList(outcomes: [], next: nil), "an empty page of a known delivery")
            let dead = try page(try await client.bearer(.get, base + "?outcome=unregistered"))
            XCTAssertEqual(dead.outcomes.map(\.deviceToken), ["token-1", "token-3"])
            for (query, field) in [("limit=0", "limit"), ("limit=1001", "limit"), ("after=-1", "after"), ("after=x", "after"),
                                   ("outcome=bounced", "outcome")] {
                try assertProblem(try await client.bearer(.get, base + "?" + query), .badRequest, field: field)
            }
            try assertProblem(try await client.bearer(.get, Fixture.delivery(d2.uuidString) + "/outcomes"), .notFound, field: "deliveryId")
        }
    }

    func testStatsReadFailureIs503() async throws {
        let harness = Harness()
        await harness.seedClientApps()
        let d1 = Self.d1
        try await harness.test { client in
            // Authenticate once so the token is cached, then break the store.
            _ = try await client.bearer(.get, Fixture.delivery(d1.uuidString))
            await harness.store.failEveryRead()
            let response = try await client.bearer(.get, Fixture.delivery(d1.uuidString))
            XCTAssertEqual(response.status, .serviceUnavailable)
            XCTAssertNotNil(response.headers[.retryAfter])
        }
    }
}
