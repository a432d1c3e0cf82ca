import Contracts
import Foundation
import Hummingbird
import HummingbirdTesting
import XCTest

/// `POST …/devices` and `…/devices/batch` (docs/API.md#device-registration-api): commands published
/// and answers.
final class DeviceRegistrationTests: XCTestCase {
    func testApnsRegistrationPublishesIosCommandWithTokenHashAndAnswersEmpty202() async throws {
        let harness = await Harness.withClientApps()
        let response = try await harness.test { client in
            try await client.post(Fixture.devices(), object: Fixture.registration(apns: Fixture.apnsToken))
        }
        XCTAssertEqual(response.status, .accepted)
        XCTAssertEqual(response.body.readableBytes, 0)

        let calls = await harness.publisher.calls
        XCTAssertEqual(calls.count, 1)
        XCTAssertEqual(calls.first?.commands.count, 1)
        let encoded = try XCTUnwrap(calls.first?.commands.first)
        XCTAssertEqual(encoded.topic, "pushline.commands.registration")
        XCTAssertEqual(encoded.key, Fixture.appId.uuidString.lowercased(), "keyed by app")
        let command = try payload(DeviceRegistrationRequested.self, of: encoded)
        XCTAssertEqual(command.orgId, Fixture.orgId)
        XCTAssertEqual(command.mobileAppId, Fixture.appId)
        XCTAssertEqual(command.userId, "user-1")
        XCTAssertEqual(command.platform, .ios)
        XCTAssertEqual(command.deviceToken, Fixture.apnsToken)
        XCTAssertEqual(command.apiTokenHash, Fixture.rawTokenHash)
        XCTAssertFalse(command.trackStatus)
        XCTAssertNil(command.callback)
        XCTAssertNil(String(decoding: encoded.value, as: UTF8.self).range(of: Fixture.rawToken),
                     "the raw API token must never enter a command")
    }

    func testFcmRegistrationPublishesAndroidCommand() async throws {
        let harness = await Harness.withClientApps()
        let response = try await harness.test { client in
            try await client.post(Fixture.devices(), object: Fixture.registration(user: "user-2", apns: nil, fcm: Fixture.fcmToken))
        }
        XCTAssertEqual(response.status, .accepted)
        let command = try await harness.onlyPublished(DeviceRegistrationRequested.self)
        XCTAssertEqual(command.platform, .android)
        XCTAssertEqual(command.deviceToken, Fixture.fcmToken)
        XCTAssertEqual(command.userId, "user-2")
    }

    func testATimeZoneOfIANAFormTravelsWithTheCommandAndAnyOtherIsA400() async throws {
        let harness = await Harness.withClientApps()
        for zone in ["Europe/Lisbon", "America/Argentina/Buenos_Aires", "Etc/GMT+3", "UTC"] {
            let response = try await harness.test { client in
                try await client.post(Fixture.devices(), object: Fixture.registration(timeZone: zone))
            }
            XCTAssertEqual(response.status, .accepted, zone)
            let command = try await harness.published(DeviceRegistrationRequested.self).last
            XCTAssertEqual(command?.timeZone, zone)
        }
        _ = try await harness.test { client in try await client.post(Fixture.devices(), object: Fixture.registration(timeZone: "")) }
        let withoutZone = try await harness.published(DeviceRegistrationRequested.self).last
        XCTAssertNil(withoutZone?.timeZone, "an empty TimeZone counts as not sent")
        let before = await harness.publisher.calls.count
        for zone in ["/Europe", "Europe/", "Europe//Lisbon", "1Europe", "Europe/Lis bon", "Europe/Lisbão", "../etc/passwd", "Europe\\Lisbon"] {
            let refused = try await harness.test { client in
                try await client.post(Fixture.devices(), object: Fixture.registration(timeZone: zone))
            }
            try assertProblem(refused, .badRequest, field: "TimeZone")
        }
        let after = await harness.publisher.calls.count
        XCTAssertEqual(after, before, "a refused time zone writes nothing")
    }

    func testTrackedRegistrationAnswersTheRegistrationRequestIdOfItsCommand() async throws {
        let harness = await Harness.withClientApps()
        let response = try await harness.test { client in
            try await client.post(Fixture.devices(), object: Fixture.registration(),
                                  headers: [.xMsTrackRegistration: "True"])
        }
        XCTAssertEqual(response.status, .accepted)
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(response.body.readableBytesView)) as? [String: String])
        XCTAssertEqual(Array(object.keys), ["RegistrationRequestId"])
        let answeredId = try XCTUnwrap(object["RegistrationRequestId"].flatMap(UUID.init(uuidString:)))

        let command = try await harness.onlyPublished(DeviceRegistrationRequested.self)
        XCTAssertEqual(command.registrationRequestId, answeredId)
        XCTAssertTrue(command.trackStatus)
    }

    func testTrackHeaderOtherThanTrueIsUntracked() async throws {
        let harness = await Harness.withClientApps()
        let response = try await harness.test { client in
            try await client.post(Fixture.devices(), object: Fixture.registration(), headers: [.xMsTrackRegistration: "yes"])
        }
        XCTAssertEqual(response.status, .accepted)
        XCTAssertEqual(response.body.readableBytes, 0)
        let command = try await harness.onlyPublished(DeviceRegistrationRequested.self)
        XCTAssertFalse(command.trackStatus)
    }

    func testCallbackHeadersBecomeASignedStatusCallback() async throws {
        let harness = await Harness.withClientApps()
        let response = try await harness.test { client in
            try await client.post(Fixture.devices(), object: Fixture.registration(), headers: [
                .xMsCallbackURL: Fixture.callbackURL,
                .xMsCallbackURLHeaders: #"{"Authorization": "Basic abc", "x-tenant": "t1"}"#,
            ])
        }
        XCTAssertEqual(response.status, .accepted)
        let command = try await harness.onlyPublished(DeviceRegistrationRequested.self)
        let callback = try XCTUnwrap(command.callback)
        XCTAssertEqual(callback.url, Fixture.callbackURL)
        XCTAssertEqual(callback.headers, ["Authorization": "Basic abc", "x-tenant": "t1"])
        XCTAssertEqual(callback.signature, Fixture.callbackSignature)
    }

    func testStatusCallbackURLAliasIsAcceptedAndHeadersDefaultToEmpty() async throws {
        let harness = await Harness.withClientApps()
        let response = try await harness.test { client in
            try await client.post(Fixture.devices(), object: Fixture.registration(),
                                  headers: [.xMsStatusCallbackURL: Fixture.callbackURL])
        }
        XCTAssertEqual(response.status, .accepted)
        let command = try await harness.onlyPublished(DeviceRegistrationRequested.self)
        XCTAssertEqual(command.callback, StatusCallback(url: Fixture.callbackURL, headers: [:], signature: Fixture.callbackSignature))
    }

    func testEmptyCallbackURLMeansNoCallback() async throws {
        let harness = await Harness.withClientApps()
        let response = try await harness.test { client in
            try await client.post(Fixture.devices(), object: Fixture.registration(), headers: [.xMsCallbackURL: ""])
        }
        XCTAssertEqual(response.status, .accepted)
        let command = try await harness.onlyPublished(DeviceRegistrationRequested.self)
        XCTAssertNil(command.callback)
    }

    func testDeviceTokenLongerThan4096BytesIsAcceptedForTheProcessorToJudge() async throws {
        let harness = await Harness.withClientApps()
        let longToken = String(repeating: "a", count: 5000)
        let response = try await harness.test { client in
            try await client.post(Fixture.devices(), object: Fixture.registration(apns: nil, fcm: longToken))
        }
        XCTAssertEqual(response.status, .accepted)
        let command = try await harness.onlyPublished(DeviceRegistrationRequested.self)
        XCTAssertEqual(command.deviceToken, longToken)
    }

    func testEachRegistrationGetsANewRequestId() async throws {
        let harness = await Harness.withClientApps()
        try await harness.test { client in
            for _ in 0..<2 {
                let response = try await client.post(Fixture.devices(), object: Fixture.registration())
                XCTAssertEqual(response.status, .accepted)
            }
        }
        let commands = try await harness.published(DeviceRegistrationRequested.self)
        XCTAssertEqual(commands.count, 2)
        XCTAssertNotEqual(commands[0].registrationRequestId, commands[1].registrationRequestId)
    }

    func testBatchPublishesEveryRegistrationInOneCallInRequestOrder() async throws {
        let harness = await Harness.withClientApps()
        let batch = [
            Fixture.registration(user: "u0", apns: Fixture.apnsToken),
            Fixture.registration(user: "u1", apns: nil, fcm: Fixture.fcmToken),
            Fixture.registration(app: Fixture.otherAppId, user: "u2", token: Fixture.otherRawToken, apns: "cd"),
        ]
        let json = try Fixture.json(batch)
        let response = try await harness.test { client in
            try await client.post(Fixture.devices() + "/batch", json: json)
        }
        XCTAssertEqual(response.status, .accepted)
        XCTAssertEqual(response.body.readableBytes, 0)

        let calls = await harness.publisher.calls
        XCTAssertEqual(calls.count, 1, "a batch is one publish call")
        let commands = try XCTUnwrap(calls.first).commands.map { try payload(DeviceRegistrationRequested.self, of: $0) }
        XCTAssertEqual(commands.map(\.userId), ["u0", "u1", "u2"])
        XCTAssertEqual(commands.map(\.platform), [.ios, .android, .ios])
        XCTAssertEqual(commands.map(\.deviceToken), [Fixture.apnsToken, Fixture.fcmToken, "cd"])
        XCTAssertEqual(commands.map(\.mobileAppId), [Fixture.appId, Fixture.appId, Fixture.otherAppId])
        XCTAssertEqual(commands[0].apiTokenHash, Fixture.rawTokenHash)
        XCTAssertEqual(commands[2].apiTokenHash, ApiTokens.hash(Fixture.otherRawToken))
        XCTAssertEqual(Set(commands.map(\.registrationRequestId)).count, 3)
        XCTAssertTrue(commands.allSatisfy { !$0.trackStatus && $0.callback == nil && $0.orgId == Fixture.orgId })
    }

    func testTrackedBatchAnswersRequestIdsInRequestOrder() async throws {
        let harness = await Harness.withClientApps()
        let batch = (0..<5).map { Fixture.registration(user: "user-\($0)") }
        let json = try Fixture.json(batch)
        let response = try await harness.test { client in
            try await client.post(Fixture.devices() + "/batch", json: json, headers: [.xMsTrackRegistration: "true"])
        }
        XCTAssertEqual(response.status, .accepted)
        let answer = try decodeBody([DeviceRegistrationAPI.RegistrationAccepted].self, response)
        let commands = try await harness.published(DeviceRegistrationRequested.self)
        XCTAssertEqual(commands.map(\.userId), (0..<5).map { "user-\($0)" })
        XCTAssertEqual(answer.map(\.RegistrationRequestId), commands.map(\.registrationRequestId))
        XCTAssertTrue(commands.allSatisfy(\.trackStatus))
    }

    func testBatchSignsEachCallbackWithItsOwnApiToken() async throws {
        let harness = await Harness.withClientApps()
        let batch = [Fixture.registration(token: Fixture.rawToken),
                     Fixture.registration(app: Fixture.otherAppId, token: Fixture.otherRawToken)]
        let json = try Fixture.json(batch)
        let response = try await harness.test { client in
            try await client.post(Fixture.devices() + "/batch", json: json, headers: [
                .xMsCallbackURL: Fixture.callbackURL, .xMsCallbackURLHeaders: #"{"x-a": "b"}"#,
            ])
        }
        XCTAssertEqual(response.status, .accepted)
        let commands = try await harness.published(DeviceRegistrationRequested.self)
        XCTAssertEqual(commands.map { $0.callback?.signature }, [Fixture.callbackSignature, Fixture.otherCallbackSignature])
        XCTAssertEqual(commands.map { $0.callback?.headers }, [["x-a": "b"], ["x-a": "b"]])
    }

    func testBatchOfExactly100IsAccepted() async throws {
        let harness = await Harness.withClientApps()
        let batch = (0..<100).map { Fixture.registration(user: "user-\($0)") }
        let json = try Fixture.json(batch)
        let response = try await harness.test { client in
            try await client.post(Fixture.devices() + "/batch", json: json)
        }
        XCTAssertEqual(response.status, .accepted)
        let calls = await harness.publisher.calls
        XCTAssertEqual(calls.map(\.commands.count), [100])
    }

    func testRequestIdIsTakenFromTheClientPassedToThePublisherAndEchoed() async throws {
        let harness = await Harness.withClientApps()
        let response = try await harness.test { client in
            try await client.post(Fixture.devices(), object: Fixture.registration(), headers: [.xRequestId: "req-42"])
        }
        XCTAssertEqual(response.headers[.xRequestId], "req-42")
        let calls = await harness.publisher.calls
        XCTAssertEqual(calls.map(\.requestId), ["req-42"])
    }

    func testRequestIdIsGeneratedWhenAbsent() async throws {
        let harness = await Harness.withClientApps()
        let response = try await harness.test { client in
            try await client.post(Fixture.devices(), object: Fixture.registration())
        }
        let echoed = try XCTUnwrap(response.headers[.xRequestId])
        XCTAssertNotNil(UUID(uuidString: echoed))
        let calls = await harness.publisher.calls
        XCTAssertEqual(calls.map(\.requestId), [echoed])
    }

    func testTopicPrefixComesFromTheConfiguration() async throws {
        var harness = await Harness.withClientApps()
        harness.configuration.shared.topics = Topics(prefix: "staging.")
        let response = try await harness.test { client in
            try await client.post(Fixture.devices(), object: Fixture.registration())
        }
        XCTAssertEqual(response.status, .accepted)
        let encoded = await harness.publisher.commands
        XCTAssertEqual(encoded.map(\.topic), ["staging.commands.registration"])
        _ = try await harness.onlyPublished(DeviceRegistrationRequested.self)
    }
}
