import Contracts
import Foundation
import Hummingbird
import HummingbirdTesting
import XCTest

/// Device properties (docs/API.md#device-properties): given at registration in every dialect, and
/// changed through `POST /v1/apps/{id}/devices/changes` (client) and `…/changes/batch` (server).
/// Each change is one `DeviceChangeRequested` on the registration topic, its values in canonical
/// form; anything malformed is a 400 naming it, and writes nothing.
final class DeviceChangeTests: XCTestCase {
    private func post(_ path: String, _ json: String, harness: Harness) async throws -> TestResponse {
        try await harness.test { client in try await client.bearer(.post, path, json: json) }
    }

    func testADevicesOwnChangeIsOneCommandInCanonicalFormMarkedFromTheClient() async throws {
        let harness = await Harness.withClientApps()
        let response = try await post(Fixture.deviceChanges(), """
            {"userId": "u1", "deviceToken": "\(Fixture.apnsToken)", "locale": "pt_br", "timeZone": "America/Sao_Paulo",
             "appVersion": "05.2", "tags": {"add": ["vip", "team:benfica", "vip"], "remove": ["trial"]},
             "topics": {"subscribe": ["news"], "unsubscribe": []}}
            """, harness: harness)
        XCTAssertEqual(response.status, .accepted, String(buffer: response.body))
        XCTAssertEqual(try decodeBody(DevicesAPI.Accepted.self, response), DevicesAPI.Accepted(accepted: 1))
        let command = try await harness.onlyPublished(DeviceChangeRequested.self)
        XCTAssertEqual(command, DeviceChangeRequested(
            mobileAppId: Fixture.appId, deviceToken: Fixture.apnsToken, userId: "u1", locale: "pt-BR", timeZone: "America/Sao_Paulo",
            appVersion: "5.2", addTags: ["team:benfica", "vip"], removeTags: ["trial"], subscribe: ["news"], unsubscribe: nil,
            fromClient: true))
        let encoded = await harness.publisher.commands
        XCTAssertEqual(encoded.map(\.topic), ["pushline.commands.registration"])
        XCTAssertEqual(encoded.map(\.key), [Fixture.appKey])
        XCTAssertEqual(encoded.map(\.type), ["registration.device-change-requested"])
    }

    func testABatchFromTheBackendIsOneCommandPerChangeInOrder() async throws {
        let harness = await Harness.withClientApps()
        let response = try await post(Fixture.deviceChanges() + "/batch", """
            {"changes": [{"userId": "u1", "tags": {"add": ["vip"]}}, {"deviceToken": "tok-2", "topics": {"unsubscribe": ["news"]}},
                         {"userId": "u3", "deviceToken": "tok-3", "locale": "es"}]}
            """, harness: harness)
        XCTAssertEqual(response.status, .accepted, String(buffer: response.body))
        XCTAssertEqual(try decodeBody(DevicesAPI.Accepted.self, response), DevicesAPI.Accepted(accepted: 3))
        let commands = try await harness.published(DeviceChangeRequested.self)
        XCTAssertEqual(commands, [
            DeviceChangeRequested(mobileAppId: Fixture.appId, deviceToken: nil, userId: "u1", addTags: ["vip"]),
            DeviceChangeRequested(mobileAppId: Fixture.appId, deviceToken: "tok-2", userId: nil, unsubscribe: ["news"]),
            DeviceChangeRequested(mobileAppId: Fixture.appId, deviceToken: "tok-3", userId: "u3", locale: "es"),
        ])
        XCTAssertTrue(commands.allSatisfy { $0.fromClient == nil }, "the backend's changes are not the device's")
    }

    func testEveryMalformedChangeIsA400NamingItsFieldAndWritesNothing() async throws {
        let harness = await Harness.withClientApps()
        let tooMany = (0...DeviceTag.maxPerDevice).map { "\"t\($0)\"" }.joined(separator: ", ")
        let longName = String(repeating: "n", count: DeviceTag.maxBytes + 1)
        let single: [(String, String, ProblemCode)] = [
            (#"{"tags": {"add": ["vip"]}}"#, "userId", .fieldMissing),
            (#"{"userId": "u1"}"#, "body", .fieldInvalid),
            (#"{"userId": "u1", "tag": "vip"}"#, "tag", .fieldUnknown),
            (#"{"userId": "u1", "tags": {"ad": ["vip"]}}"#, "tags.ad", .fieldUnknown),
            (#"{"userId": "u1", "topics": {"subscribe": ["a"], "add": ["b"]}}"#, "topics.add", .fieldUnknown),
            (#"{"userId": "u1", "tags": {"add": ["ok", "not ok"]}}"#, "tags.add[1]", .fieldInvalid),
            (#"{"userId": "u1", "tags": {"add": ["\#(longName)"]}}"#, "tags.add[0]", .fieldInvalid),
            (#"{"userId": "u1", "tags": {"add": [\#(tooMany)]}}"#, "tags.add", .fieldInvalid),
            (#"{"userId": "u1", "tags": {"add": ["a"], "remove": ["a"]}}"#, "tags", .fieldInvalid),
            (#"{"userId": "u1", "topics": {"subscribe": ["a"], "unsubscribe": ["a"]}}"#, "topics", .fieldInvalid),
            (#"{"userId": "u1", "locale": "portuguese"}"#, "locale", .fieldInvalid),
            (#"{"userId": "u1", "appVersion": "5.x"}"#, "appVersion", .fieldInvalid),
            (#"{"userId": "u1", "appVersion": "1.2.3.4.5"}"#, "appVersion", .fieldInvalid),
            (#"{"userId": "u1", "timeZone": "../etc"}"#, "timeZone", .fieldInvalid),
            (#"{"userId": "", "locale": "pt"}"#, "userId", .fieldMissing),
            (#"{"userId": "u1", "tags": ["vip"]}"#, "tags", .fieldType),
        ]
        let batch: [(String, String, ProblemCode)] = [
            (#"{"changes": []}"#, "changes", .fieldInvalid),
            (#"{}"#, "changes", .fieldMissing),
            (#"{"changes": [{"userId": "u1", "locale": "pt"}], "dryRun": true}"#, "dryRun", .fieldUnknown),
            (#"{"changes": [{"userId": "u1", "locale": "pt"}, {"userId": "u2", "local": "pt"}]}"#, "changes[1].local", .fieldUnknown),
            (#"{"changes": [{"locale": "pt"}]}"#, "changes[0].deviceToken|userId", .fieldMissing),
            (#"{"changes": [{"userId": "u1", "tags": {"remove": ["x y"]}}]}"#, "changes[0].tags.remove[0]", .fieldInvalid),
            (#"{"changes": [{"userId": "u1", "locale": "pt"}, {"userId": "u2", "locale": "p"}]}"#, "changes[1].locale", .fieldInvalid),
        ]
        try await harness.test { client in
            for (json, field, code) in single {
                try assertProblem(try await client.bearer(.post, Fixture.deviceChanges(), json: json), .badRequest, field: field, code: code)
            }
            for (json, field, code) in batch {
                try assertProblem(try await client.bearer(.post, Fixture.deviceChanges() + "/batch", json: json), .badRequest,
                                  field: field, code: code)
            }
            let over = (0...DevicesAPI.maxChanges).map { _ in #"{"userId": "u", "locale": "pt"}"# }.joined(separator: ",")
            try assertProblem(try await client.bearer(.post, Fixture.deviceChanges() + "/batch", json: #"{"changes": [\#(over)]}"#),
                              .badRequest, field: "changes")
        }
        await assertNothingPublished(harness.publisher)
    }

    private static func registration(_ extra: [String: Any]) -> [String: Any] {
        Fixture.registration().merging(extra) { _, new in new }
    }

    func testTheRegistrationAPIGivesPropertiesInCanonicalFormAndNamesABadOneInItsBatch() async throws {
        let harness = await Harness.withClientApps()
        let response = try await harness.test { client in
            try await client.post(Fixture.devices(), object: Self.registration(
                ["Locale": "zh_hant_tw", "AppVersion": "10.0.01", "Tags": ["b", "a", "b"], "Topics": ["news"]]))
        }
        XCTAssertEqual(response.status, .accepted, String(buffer: response.body))
        let command = try await harness.onlyPublished(DeviceRegistrationRequested.self)
        XCTAssertEqual(command.locale, "zh-Hant-TW")
        XCTAssertEqual(command.appVersion, "10.0.1")
        XCTAssertEqual(command.tags, ["a", "b"])
        XCTAssertEqual(command.topics, ["news"])

        try await harness.test { client in
            try assertProblem(try await client.post(Fixture.devices() + "/batch", object: [Fixture.registration(),
                                                                                          Self.registration(["Tags": ["ok", "é"]])]),
                              .badRequest, field: "[1].Tags[1]")
            try assertProblem(try await client.post(Fixture.devices(), object: Self.registration(["Locale": "pt-BRA"])), .badRequest,
                              field: "Locale")
        }
        let published = await harness.publisher.commands.count
        XCTAssertEqual(published, 1, "a refused property writes nothing")
    }

    func testBWAndKF5RegistrationsCarryTheirOptionalProperties() async throws {
        let harness = await Harness.withClientApps()
        let bw = #"{"deviceId": "\#(Fixture.apnsToken)", "type": "IOS", "user": {"phone": "+19883999901"}, "locale": "en-us", "timeZone": "UTC", "appVersion": "3", "tags": ["beta"]}"#
        let kf5 = #"{"userToken": "123", "deviceToken": "\#(Fixture.apnsToken)", "locale": "es-419", "topics": ["deals"]}"#
        try await harness.test { client in
            assertEmpty(try await client.bearer(.put, Fixture.bw("devices"), json: bw), .created)
            assertEmpty(try await client.bearer(.post, Fixture.kf5Tokens(), json: kf5), .created)
            try assertProblem(try await client.bearer(.put, Fixture.bw("devices"), json: #"{"deviceId": "\#(Fixture.apnsToken)", "type": "IOS", "user": {"phone": "+19883999901"}, "appVersion": "v3"}"#),
                              .badRequest, field: "appVersion")
        }
        let commands = try await harness.published(DeviceRegistrationRequested.self)
        XCTAssertEqual(commands.map(\.locale), ["en-US", "es-419"])
        XCTAssertEqual(commands.map(\.timeZone), ["UTC", nil])
        XCTAssertEqual(commands.map(\.appVersion), ["3", nil])
        XCTAssertEqual(commands.map(\.tags), [["beta"], nil])
        XCTAssertEqual(commands.map(\.topics), [nil, ["deals"]])
    }
}
