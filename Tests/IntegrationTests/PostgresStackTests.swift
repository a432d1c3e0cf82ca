import Contracts
import Foundation
import Projections
import PostgresProjections
import TestSupport
import XCTest

/// The stack with `PUSHLINE_STORE=postgres://…`: ingest and processor both on one PostgreSQL
/// database of the test process's server (started through scripts/postgres).
final class PostgresStackTests: XCTestCase {
    typealias API = DeviceRegistrationAPI
    private var stack: PushlineStack!
    private var database: String?

    override func setUp() async throws {
        let server = try await PostgresServer.shared()
        let database = "pushline_it_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(12)
        self.database = database
        stack = try await PushlineStack.start(store: try await server.createDatabase(database))
    }

    override func tearDown() async throws {
        await stack?.stop()
        if let database { try await PostgresServer.shared().dropDatabase(database) }
    }

    func testADeviceRegisteredThroughIngestIsDecidedAndReadBackWithBothServicesOnPostgreSQL() async throws {
        let app = try await stack.createApp(name: "on postgres")
        let org = app.orgId
        let accepted = try await HTTPClientHelpers.post(stack.registrationURL(org: org, "devices"), json: API.Registration(
            MobileAppId: app.mobileAppId.uuidString, UserId: "user-1", ApiToken: app.apiToken, ApnsDeviceToken: Tokens.apns(1)),
            headers: [API.trackRegistrationHeader: "true"])
        XCTAssertEqual(accepted.status, 202, accepted.text)
        let requestId = try accepted.decode(API.RegistrationAccepted.self).RegistrationRequestId

        // Decided by the processor, answered by ingest: both read and wrote PostgreSQL.
        let statuses = try await stack.decidedStatuses(org: org, app: app.mobileAppId, token: app.apiToken, ids: [requestId])
        XCTAssertEqual(statuses.map(\.Status), [.Success], stack.logs())

        let store = try await stack.openStore()
        XCTAssertTrue(store is PostgresProjectionStore)
        let devices = try await store.devices(app: app.mobileAppId, user: "user-1")
        XCTAssertEqual(devices.map(\.deviceToken), [Tokens.apns(1)])
        XCTAssertEqual(devices.first?.platform, .ios)
        let offsets = try await store.offsets(topics: [stack.topics.registration])
        XCTAssertFalse(offsets.isEmpty, "the processor stored its offsets in PostgreSQL")
    }

    /// The longest token the API allows (an FCM token of 4,096 bytes, more than a PostgreSQL
    /// B-tree entry holds) is registered, sent to and acknowledged as any other.
    func testTheLongestTokenIsRegisteredSentToAndAcknowledgedOnPostgreSQL() async throws {
        let app = try await stack.createApp(name: "long tokens")
        let token = String(repeating: "Ab9_:-", count: FieldLimits.deviceTokenBytes / 6) + "zz-:"
        XCTAssertEqual(token.utf8.count, FieldLimits.deviceTokenBytes)
        let accepted = try await HTTPClientHelpers.post(stack.registrationURL(org: app.orgId, "devices"), json: API.Registration(
            MobileAppId: app.mobileAppId.uuidString, UserId: "u-long", ApiToken: app.apiToken, FcmDeviceToken: token),
            headers: [API.trackRegistrationHeader: "true"])
        XCTAssertEqual(accepted.status, 202, accepted.text)
        let requestId = try accepted.decode(API.RegistrationAccepted.self).RegistrationRequestId
        let statuses = try await stack.decidedStatuses(org: app.orgId, app: app.mobileAppId, token: app.apiToken, ids: [requestId])
        XCTAssertEqual(statuses.map(\.Status), [.Success], stack.logs())

        let store = try await stack.openStore()
        let key = DeviceKey(appId: app.mobileAppId, deviceToken: token)
        let nid = try await stack.send(["userId": "u-long", "title": "t", "managed": true], app: app)
        try await eventually("the send is pending on the long token") {
            try await store.pendingNotifications(key).map(\.notificationId) == [nid.uuidString.lowercased()]
        }
        let ack = try await stack.call(.PUT, "/bwmi/v1/apps/\(app.mobileAppId)/acks", json: ["nid": nid.uuidString, "did": token],
                                       token: app.apiToken)
        XCTAssertEqual(ack.status, 201, ack.text)
        try await eventually("the ack cleared it") { try await store.pendingNotifications(key).isEmpty }
        let device = try await store.device(key)
        XCTAssertEqual(device?.platform, .android)
        XCTAssertEqual(device?.userId, "u-long")
    }
}
