import Contracts
import Foundation
import Hummingbird
import HummingbirdTesting
import Ingest
import Logging
import Projections
import XCTest

/// The BW device service (docs/API.md#bw-device-service) under `/bwmi/v1/apps/{mobileAppId}`.
final class BWDeviceTests: XCTestCase {
    private let appKey = Fixture.appKey

    // MARK: PUT /devices

    func testRegisteringAnIOSDevicePublishesARegistrationFor201() async throws {
        let harness = Harness()
        await harness.seedClientApps()
        let response = try await harness.test { client in
            try await client.bearer(.put, Fixture.bw("devices"), json: try Fixture.bwDevice())
        }
        assertEmpty(response, .created)
        let command = try await harness.onlyPublished(DeviceRegistrationRequested.self)
        XCTAssertEqual(command, DeviceRegistrationRequested(
            registrationRequestId: command.registrationRequestId, orgId: Fixture.orgId, mobileAppId: Fixture.appId,
            userId: "tel:+19883999901", platform: .ios, deviceToken: Fixture.apnsToken, apiTokenHash: Fixture.rawTokenHash,
            trackStatus: false, callback: nil))
        let encoded = await harness.publisher.commands
        XCTAssertEqual(encoded.map(\.topic), ["pushline.commands.registration"])
        XCTAssertEqual(encoded.map(\.key), [appKey])
        XCTAssertNil(String(decoding: encoded[0].value, as: UTF8.self).range(of: Fixture.rawToken))
    }

    func testRegisteringAnAndroidDeviceWithOnlyAnEmailAndALowerCaseType() async throws {
        let harness = Harness()
        await harness.seedClientApps()
        let json = try Fixture.bwDevice(deviceId: Fixture.fcmToken, type: "android", phone: nil, email: "  Abc@Yahoo.COM ")
        let response = try await harness.test { client in try await client.bearer(.put, Fixture.bw("devices"), json: json) }
        assertEmpty(response, .created)
        let command = try await harness.onlyPublished(DeviceRegistrationRequested.self)
        XCTAssertEqual(command.userId, "mailto:abc@yahoo.com")
        XCTAssertEqual(command.platform, .android)
        XCTAssertEqual(command.deviceToken, Fixture.fcmToken)
    }

    func testTheSamePersonFromTwoDevicesIsOneUser() async throws {
        let harness = Harness()
        await harness.seedClientApps()
        try await harness.test { client in
            assertEmpty(try await client.bearer(.put, Fixture.bw("devices"), json: try Fixture.bwDevice(phone: "+1 (988) 399-9901", email: nil)), .created)
            assertEmpty(try await client.bearer(.put, Fixture.bw("devices"),
                                                json: try Fixture.bwDevice(deviceId: Fixture.fcmToken, type: "ANDROID",
                                                                           phone: "001-988-399-9901", email: "other@example.com")), .created)
        }
        let commands = try await harness.published(DeviceRegistrationRequested.self)
        XCTAssertEqual(commands.map(\.userId), ["tel:+19883999901", "tel:+19883999901"])
        XCTAssertEqual(commands.map(\.platform), [.ios, .android])
    }

    func testInvalidRegistrationsAre400NamingTheField() async throws {
        let harness = Harness()
        await harness.seedClientApps()
        let cases: [(json: String, field: String)] = [
            (try Fixture.bwDevice(deviceId: nil), "deviceId"),
            (try Fixture.bwDevice(deviceId: ""), "deviceId"),
            (try Fixture.bwDevice(type: nil), "type"),
            (try Fixture.bwDevice(type: "IOS|ANDROID"), "type"),
            (try Fixture.bwDevice(type: "WINDOWS"), "type"),
            // Format checks: an FCM token is no APNs token, an odd-length hex string neither.
            (try Fixture.bwDevice(deviceId: Fixture.fcmToken, type: "IOS"), "deviceId"),
            (try Fixture.bwDevice(deviceId: Fixture.apnsToken + "a", type: "IOS"), "deviceId"),
            (try Fixture.bwDevice(deviceId: Fixture.apnsToken, type: "ANDROID"), "deviceId"),
            (try Fixture.bwDevice(deviceId: String(repeating: "a", count: 4097), type: "ANDROID"), "deviceId"),
            (try Fixture.bwDevice(phone: nil, email: nil), "user"),
            (try Fixture.bwDevice(phone: "", email: " "), "user"),
            (#"{"deviceId": "\#(Fixture.apnsToken)", "type": "IOS"}"#, "user"),
            (#"{"deviceId": "\#(Fixture.apnsToken)", "type": "IOS", "user": "abc"}"#, "user"),
            (try Fixture.bwDevice(phone: "19883999901"), "user.phone"),
            (try Fixture.bwDevice(phone: "+1 988 CALL ME"), "user.phone"),
            (try Fixture.bwDevice(phone: nil, email: "not-an-email"), "user.email"),
            (#"{"deviceId": "\#(Fixture.apnsToken)", "type": "IOS", "user": {"phone": 1}}"#, "user.phone"),
            (#"{"deviceId": 5, "type": "IOS", "user": {"phone": "+19883999901"}}"#, "deviceId"),
        ]
        try await harness.test { client in
            for (json, field) in cases {
                try assertProblem(try await client.bearer(.put, Fixture.bw("devices"), json: json), .badRequest, field: field)
            }
        }
        await assertNothingPublished(harness.publisher)
    }

    func testAnInvalidDeviceIdIsExplained() async throws {
        let harness = Harness()
        await harness.seedClientApps()
        let (ios, android) = try await harness.test { client in
            (try await client.bearer(.put, Fixture.bw("devices"), json: try Fixture.bwDevice(deviceId: "abc", type: "IOS")),
             try await client.bearer(.put, Fixture.bw("devices"), json: try Fixture.bwDevice(deviceId: "abc", type: "ANDROID")))
        }
        XCTAssertEqual(try decodeBody(Problem.self, ios).error, "deviceId is not a valid APNs device token (64…200 hex characters)")
        XCTAssertTrue(try decodeBody(Problem.self, android).error.hasPrefix("deviceId is not a valid FCM registration token"))
    }

    // MARK: DELETE /devices

    func testDeregisteringPublishesACleanupFor200AndIgnoresType() async throws {
        let harness = Harness()
        await harness.seedClientApps()
        let bodies = [try Fixture.bwDevice(type: "IOS|ANDROID"), try Fixture.bwDevice(type: nil), try Fixture.bwDevice(type: "IOS")]
        try await harness.test { client in
            for json in bodies {
                assertEmpty(try await client.bearer(.delete, Fixture.bw("devices"), json: json), .ok)
            }
        }
        let commands = try await harness.published(DeviceCleanupRequested.self)
        let expected = DeviceCleanupRequested(orgId: Fixture.orgId, mobileAppId: Fixture.appId, userId: "tel:+19883999901",
                                              deviceToken: Fixture.apnsToken, apiTokenHash: Fixture.rawTokenHash)
        XCTAssertEqual(commands, [expected, expected, expected])
        let keys = await harness.publisher.commands.map(\.key)
        XCTAssertEqual(keys, [appKey, appKey, appKey])
    }

    func testInvalidDeregistrationsAre400() async throws {
        let harness = Harness()
        await harness.seedClientApps()
        let cases: [(json: String?, field: String)] = [
            (try Fixture.bwDevice(deviceId: nil), "deviceId"),
            (try Fixture.bwDevice(deviceId: String(repeating: "a", count: 4097)), "deviceId"),
            (try Fixture.bwDevice(phone: nil, email: nil), "user"),
            (try Fixture.bwDevice(phone: "12"), "user.phone"),
            (nil, "body"),
        ]
        try await harness.test { client in
            for (json, field) in cases {
                try assertProblem(try await client.bearer(.delete, Fixture.bw("devices"), json: json), .badRequest, field: field)
            }
        }
        await assertNothingPublished(harness.publisher)
    }

    /// Hummingbird hands a DELETE its body like any other request: checked through a real HTTP
    /// server too, not only the in-process router client.
    func testADeleteWithAJSONBodyWorksOverHTTP() async throws {
        let harness = Harness()
        await harness.seedClientApps()
        var configuration = harness.configuration
        configuration.port = 0
        let app = buildApplication(configuration: configuration, publisher: harness.publisher, store: harness.store,
                                   metrics: TestMetrics.registry, logger: Logger(label: "pushline-ingest-test"))
        let json = try Fixture.bwDevice()
        let response = try await app.test(.live) { client in
            try await client.bearer(.delete, Fixture.bw("devices"), json: json)
        }
        assertEmpty(response, .ok)
        let command = try await harness.onlyPublished(DeviceCleanupRequested.self)
        XCTAssertEqual(command.userId, "tel:+19883999901")
    }

    // MARK: PUT /acks

    func testAnAckPublishesNotificationAcknowledgedFor201() async throws {
        let harness = Harness()
        await harness.seedClientApps()
        let json = #"{"nid": "0A1868E6-04C9-4D3B-8125-2F9597F68E78", "did": "\#(Fixture.apnsToken)", "bid": "USER_TRANSACTION"}"#
        let response = try await harness.test { client in try await client.bearer(.put, Fixture.bw("acks"), json: json) }
        assertEmpty(response, .created)
        let command = try await harness.onlyPublished(NotificationAcknowledged.self)
        XCTAssertEqual(command, NotificationAcknowledged(mobileAppId: Fixture.appId, notificationId: "0a1868e6-04c9-4d3b-8125-2f9597f68e78",
                                                         deviceToken: Fixture.apnsToken, businessId: "USER_TRANSACTION"))
        let encoded = await harness.publisher.commands
        XCTAssertEqual(encoded.map(\.topic), ["pushline.commands.notification"])
        XCTAssertEqual(encoded.map(\.key), [Fixture.appKey])
    }

    func testAnAckWithoutBid() async throws {
        let harness = Harness()
        await harness.seedClientApps()
        let json = #"{"nid": "0a1868e6-04c9-4d3b-8125-2f9597f68e78", "did": "device-1"}"#
        let response = try await harness.test { client in try await client.bearer(.put, Fixture.bw("acks"), json: json) }
        assertEmpty(response, .created)
        let command = try await harness.onlyPublished(NotificationAcknowledged.self)
        XCTAssertNil(command.businessId)
        XCTAssertEqual(command.deviceToken, "device-1")
    }

    func testInvalidAcksAre400() async throws {
        let harness = Harness()
        await harness.seedClientApps()
        let nid = "0a1868e6-04c9-4d3b-8125-2f9597f68e78"
        let cases: [(json: String, field: String)] = [
            (#"{"did": "d"}"#, "nid"),
            (#"{"nid": "", "did": "d"}"#, "nid"),
            (#"{"nid": "notification-1", "did": "d"}"#, "nid"),
            (#"{"nid": "\#(nid)"}"#, "did"),
            (#"{"nid": "\#(nid)", "did": ""}"#, "did"),
            (#"{"nid": "\#(nid)", "did": "\#(String(repeating: "a", count: 4097))"}"#, "did"),
            (#"{"nid": "\#(nid)", "did": "d", "bid": 3}"#, "bid"),
        ]
        try await harness.test { client in
            for (json, field) in cases {
                try assertProblem(try await client.bearer(.put, Fixture.bw("acks"), json: json), .badRequest, field: field)
            }
        }
        await assertNothingPublished(harness.publisher)
    }

    // MARK: GET /devices/{deviceToken}/notifications

    func testPendingNotificationsAreListedOldestFirstWithOptionalBid() async throws {
        let harness = Harness()
        await harness.seedClientApps()
        let device = Fixture.apnsToken
        func row(_ nid: String, _ millis: Int64, _ text: String, _ bid: String?, token: String = device,
                 app: UUID = Fixture.appId) -> PendingNotificationRow {
            PendingNotificationRow(appId: app, deviceToken: token, notificationId: nid, deliveryId: UUID(),
                                   sentAt: Date(timeIntervalSince1970: Double(millis) / 1000), text: text, businessId: bid)
        }
        // Seeded out of order; two share a sentAt (then ordered by nid). Other devices and apps are not listed.
        for pending in [
            row("9d5e1138-3b2e-4f88-8185-46d6e38fa21b", 1_365_753_983_879, "20% discount", "OFFERS"),
            row("b8ba7a54-92dc-4978-b125-53bfe57daa6c", 1_365_753_980_483, "Boarding announced at Terminal 1, Gate B67", "GATE_CHANGE"),
            row("fd97b8b3-4aa3-47f3-8023-606e3c548d4d", 1_365_753_981_820, "Flight canceled", nil),
            row("0187a77f-b757-4b84-8768-c1ac2ddad133", 1_365_753_981_820, "Same instant", nil),
            row("11111111-1111-4111-8111-111111111111", 1, "other device", nil, token: Fixture.fcmToken),
            row("22222222-2222-4222-8222-222222222222", 1, "other app", nil, app: Fixture.otherAppId),
        ] {
            await harness.store.seed(pending: pending)
        }
        let response = try await harness.test { client in
            try await client.bearer(.get, Fixture.bw("devices/\(device)/notifications"))
        }
        XCTAssertEqual(response.status, .ok)
        XCTAssertEqual(response.headers[.contentType], "application/json")
        XCTAssertEqual(try decodeBody(BWDeviceAPI.PendingList.self, response).ns, [
            ["b8ba7a54-92dc-4978-b125-53bfe57daa6c", "1365753980483", "Boarding announced at Terminal 1, Gate B67", "GATE_CHANGE"],
            ["0187a77f-b757-4b84-8768-c1ac2ddad133", "1365753981820", "Same instant"],
            ["fd97b8b3-4aa3-47f3-8023-606e3c548d4d", "1365753981820", "Flight canceled"],
            ["9d5e1138-3b2e-4f88-8185-46d6e38fa21b", "1365753983879", "20% discount", "OFFERS"],
        ])
        await assertNothingPublished(harness.publisher)
    }

    func testAnUnknownDeviceHasNoPendingNotifications() async throws {
        let harness = Harness()
        await harness.seedClientApps()
        let response = try await harness.test { client in
            try await client.bearer(.get, Fixture.bw("devices/unknown-device/notifications"))
        }
        XCTAssertEqual(response.status, .ok)
        XCTAssertEqual(String(buffer: response.body), #"{"ns":[]}"#)
    }

    func testPendingNotificationsOfAPercentEncodedToken() async throws {
        let harness = Harness()
        await harness.seedClientApps()
        await harness.store.seed(pending: PendingNotificationRow(
            appId: Fixture.appId, deviceToken: "fcm:abc", notificationId: "n1", deliveryId: UUID(),
            sentAt: Date(timeIntervalSince1970: 2), text: "t", businessId: nil))
        let response = try await harness.test { client in
            try await client.bearer(.get, Fixture.bw("devices/fcm%3Aabc/notifications"))
        }
        XCTAssertEqual(try decodeBody(BWDeviceAPI.PendingList.self, response).ns, [["n1", "2000", "t"]])
    }
}
