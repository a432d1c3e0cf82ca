import Contracts
import Foundation
import Hummingbird
import HummingbirdTesting
import Projections
import XCTest

/// Sends to an audience (docs/API.md#audiences): `to.topic`, `to.all` and `to.audience` become
/// one `NotificationRequested` whose target is the expression's canonical text; a bad expression
/// is a `400 audience_invalid` with its position, and writes nothing; `…/audiences/count` counts
/// the projected devices an expression selects.
final class AudienceSendTests: XCTestCase {
    private func send(_ json: String, harness: Harness) async throws -> TestResponse {
        try await harness.test { client in try await client.bearer(.post, Fixture.notifications(), json: json) }
    }

    func testATopicEveryDeviceAndAnExpressionAreOneSendToTheExpressionsCanonicalText() async throws {
        let cases = [
            (#"{"to": {"topic": "news"}, "body": "hi"}"#, "topic:news"),
            (#"{"to": {"all": true}, "body": "hi"}"#, "all"),
            (#"{"to": {"audience": "TAG:vip && (Locale:pt_br || !platform:Android) AND version>=5.02"}, "body": "hi"}"#,
             "tag:vip and (locale:pt-BR or not platform:android) and version >= 5.2"),
        ]
        for (json, audience) in cases {
            let harness = await Harness.withClientApps()
            let response = try await send(json, harness: harness)
            XCTAssertEqual(response.status, .accepted, String(buffer: response.body))
            let command = try await harness.onlyPublished(NotificationRequested.self)
            XCTAssertEqual(command.target, NotificationTarget(audience: audience), json)
            let encoded = await harness.publisher.commands
            XCTAssertEqual(encoded.count, 1, "one command, which each part of the app applies to the devices it holds")
        }
    }

    func testABadAudienceIsA400PointingAtItsPositionAndOtherMisusesNameTheirField() async throws {
        let harness = await Harness.withClientApps()
        let audiences: [(String, Int)] = [
            ("tag:vip and", 11), ("tag:bad!name", 7), ("((tag:a)", 8), ("platform:blackberry", 9), ("version >= x", 11), ("", 0),
            (String(repeating: "(", count: 17) + "all" + String(repeating: ")", count: 17), 16),
        ]
        try await harness.test { client in
            for (audience, position) in audiences {
                let json = try Fixture.json(["to": ["audience": audience], "body": "hi"])
                let response = try await client.bearer(.post, Fixture.notifications(), json: json)
                try assertProblem(response, .badRequest, field: "to.audience", code: .audienceInvalid)
                XCTAssertEqual(try decodeBody(Problem.self, response).position, position, audience)
            }
            let misuses: [(String, String)] = [
                (#"{"to": {"topic": "bad topic"}, "body": "hi"}"#, "to.topic"),
                (#"{"to": {"all": false}, "body": "hi"}"#, "to.all"),
                (#"{"to": {"all": true, "topic": "news"}, "body": "hi"}"#, "to"),
                (#"{"to": {"all": true}, "body": "hi", "managed": true}"#, "managed"),
                (#"{"to": {"topic": "news"}, "body": "hi", "kind": "ticket", "ticketId": "1"}"#, "kind"),
                (#"{"to": {"segment": "x"}, "body": "hi"}"#, "to.segment"),
            ]
            for (json, field) in misuses {
                try assertProblem(try await client.bearer(.post, Fixture.notifications(), json: json), .badRequest, field: field)
            }
        }
        await assertNothingPublished(harness.publisher)
    }

    func testTheCountIsTheProjectedDevicesTheExpressionSelects() async throws {
        let harness = await Harness.withClientApps()
        func device(_ n: Int, _ app: UUID = Fixture.appId, tags: DeviceLabels = [], locale: String? = nil, version: String? = nil) -> DeviceRow {
            DeviceRow(appId: app, deviceToken: "t\(n)", userId: "u\(n)", platform: n % 2 == 0 ? .ios : .android, version: 1,
                      updatedAt: Date(), locale: locale, appVersion: version, tags: tags)
        }
        for row in [device(1, tags: ["vip"], locale: "pt-BR", version: "5.10"), device(2, tags: ["vip"], locale: "pt"),
                    device(3, locale: "es", version: "5.9"), device(4), device(5, Fixture.otherAppId, tags: ["vip"])] {
            await harness.store.seed(device: row)
        }
        let expected = [("all", 4), ("tag:vip", 2), ("locale:pt", 2), ("version > 5.9", 1), ("not tag:vip", 2), ("topic:news", 0),
                        ("platform:ios and not locale:pt", 1)]
        try await harness.test { client in
            for (audience, devices) in expected {
                let response = try await client.bearer(.post, "/v1/apps/\(Fixture.appId)/audiences/count",
                                                       json: try Fixture.json(["audience": audience]))
                XCTAssertEqual(response.status, .ok, String(buffer: response.body))
                XCTAssertEqual(try decodeBody(AudiencesAPI.Count.self, response), AudiencesAPI.Count(audience: audience, devices: devices))
            }
            try assertProblem(try await client.bearer(.post, "/v1/apps/\(Fixture.appId)/audiences/count", json: #"{"audience": "tag:"}"#),
                              .badRequest, field: "audience", code: .audienceInvalid)
            try assertProblem(try await client.bearer(.post, "/v1/apps/\(Fixture.appId)/audiences/count", json: #"{"audiences": "all"}"#),
                              .badRequest, field: "audiences", code: .fieldUnknown)
        }
    }
}

/// Localized content (docs/API.md#localized-content): the text per locale travels with the send,
/// its keys canonical; a key that is not a locale, an empty variant, an unknown member or a
/// variant whose payload cannot fit is a 400 naming it.
final class LocalizedSendTests: XCTestCase {
    func testTheTextPerLocaleTravelsWithItsKeysCanonical() async throws {
        let harness = await Harness.withClientApps()
        let response = try await harness.test { client in
            try await client.bearer(.post, Fixture.notifications(), json: """
                {"to": {"all": true}, "title": "Goal", "localized": {"pt_br": {"title": "Gol"}, "PT": {"title": "Golo", "body": "1-0"}}}
                """)
        }
        XCTAssertEqual(response.status, .accepted, String(buffer: response.body))
        let command = try await harness.onlyPublished(NotificationRequested.self)
        XCTAssertEqual(command.content.localized, ["pt-BR": LocalizedText(title: "Gol"), "pt": LocalizedText(title: "Golo", body: "1-0")])
    }

    func testABadVariantIsA400NamingItAndWritesNothing() async throws {
        let harness = await Harness.withClientApps()
        let long = String(repeating: "x", count: 4_000)
        let cases: [(String, String, ProblemCode)] = [
            (#"{"userId": "u", "title": "t", "localized": {"default": {"title": "d"}}}"#, "localized.default", .fieldInvalid),
            (#"{"userId": "u", "title": "t", "localized": {"pt": {}}}"#, "localized.pt", .fieldMissing),
            (#"{"userId": "u", "title": "t", "localized": {"pt": {"titel": "x"}}}"#, "localized.pt.titel", .fieldUnknown),
            (#"{"userId": "u", "title": "t", "localized": {"pt-BR": {"body": "\#(long)"}}}"#, "localized.pt-BR", .fieldInvalid),
            (#"{"userId": "u", "title": "t", "localized": {"pt-BR": {"title": "a"}, "pt_br": {"title": "b"}}}"#, "localized.pt_br", .fieldInvalid),
            (#"{"userId": "u", "title": "t", "localized": {}}"#, "localized", .fieldInvalid),
        ]
        try await harness.test { client in
            for (json, field, code) in cases {
                try assertProblem(try await client.bearer(.post, Fixture.notifications(), json: json), .badRequest, field: field, code: code)
            }
        }
        await assertNothingPublished(harness.publisher)
    }
}
