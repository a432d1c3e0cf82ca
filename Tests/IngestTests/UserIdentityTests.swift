import Contracts
import Foundation
import Hummingbird
import HummingbirdTesting
@testable import Ingest
import Projections
import TestSupport
import XCTest

/// Verified user identity at ingest (docs/API.md#verified-user-identity): where the app requires
/// it, every route that binds a device to a user, cleans up a user's devices or reads a pending
/// list needs the user assertion of that user, refuses without it (403 naming the field, nothing
/// written), and marks what it checked; the admin routes make the secret (shown once, sealed)
/// and turn verification on and off.
final class UserIdentityTests: XCTestCase {
    static let secret = "identity-secret-1"
    /// `UserIdentity.assertion` of these users under `secret`, computed with Python's hmac.
    static let userOne = "08ccab596ee6a0825fb3c3b28d39c6333ad0dad43138a3ff2e1518cc47929b5d"
    static let userTwo = "a278544f183fd2c31d3936a8f6d4311a09a6917323c79e3f358cc8b236b00a93"
    static let bwUser = "c96acfbce8072dd57d6dd420ff814693655fa3cb12dfa0813314576534cc66fa"

    let secretsKey = TestPushKeys.secretsKey()

    /// The client apps, `Fixture.appId` with the identity secret and `required` as given.
    private func harness(required: Bool, secret: Bool = true) async throws -> Harness {
        var harness = Harness()
        let keyring = try SecretsKeyring(current: secretsKey)
        harness.configuration.secrets = keyring
        await harness.seedClientApps()
        await harness.store.seed(app: AppRow(
            appId: Fixture.appId, orgId: Fixture.orgId, name: "app", createdAt: Date(), identityRequired: required,
            identitySecret: secret ? keyring.seal(Data(Self.secret.utf8), context: UserIdentity.sealContext(app: Fixture.appId)) : nil))
        return harness
    }

    private static func registration(user: String = "user-1", assertion: String?) -> [String: Any] {
        var body = Fixture.registration(user: user)
        if let assertion { body["UserAssertion"] = assertion }
        return body
    }

    // MARK: the registration API

    func testWithIdentityOnARegistrationWithoutOrWithAnotherUsersAssertionIs403AndWritesNothing() async throws {
        let harness = try await harness(required: true)
        try await harness.test { client in
            try assertProblem(try await client.post(Fixture.devices(), object: Self.registration(assertion: nil)), .forbidden, field: "UserAssertion",
                              code: .userAssertionRequired)
            // The attacker's own user's assertion does not bind the device to the victim.
            try assertProblem(try await client.post(Fixture.devices(), object: Self.registration(user: "user-1", assertion: Self.userTwo)),
                              .forbidden, field: "UserAssertion", code: .userAssertionInvalid)
            let batch = [Self.registration(assertion: Self.userOne), Self.registration(user: "user-2", assertion: nil)]
            try assertProblem(try await client.post(Fixture.devices() + "/batch", object: batch), .forbidden, field: "[1].UserAssertion")
        }
        await assertNothingPublished(harness.publisher)
    }

    func testWithIdentityOnTheAssertionInTheBodyOrHeaderBindsTheDeviceAsVerified() async throws {
        let harness = try await harness(required: true)
        try await harness.test { client in
            try await expect(client.post(Fixture.devices(), object: Self.registration(assertion: Self.userOne)), .accepted)
            try await expect(client.post(Fixture.devices(), object: Self.registration(assertion: nil),
                                         headers: [.pushlineUserAssertion: Self.userOne.uppercased()]), .accepted)
            let batch = [Self.registration(assertion: Self.userOne), Self.registration(user: "user-2", assertion: Self.userTwo)]
            try await expect(client.post(Fixture.devices() + "/batch", object: batch), .accepted)
        }
        let commands = try await harness.published(DeviceRegistrationRequested.self)
        XCTAssertEqual(commands.map(\.userId), ["user-1", "user-1", "user-1", "user-2"])
        XCTAssertEqual(commands.map(\.identityVerified), [true, true, true, true])
    }

    func testAForgedApiTokenStillGetsTheSeeds202AndNothingIsWritten() async throws {
        let harness = try await harness(required: true)
        let response = try await harness.test { client in
            try await client.post(Fixture.devices(), object: Fixture.registration(token: "forged"))
        }
        XCTAssertEqual(response.status, .accepted)
        await assertNothingPublished(harness.publisher)
    }

    func testWithIdentityOnACleanupNeedsTheUsersAssertion() async throws {
        let harness = try await harness(required: true)
        try await harness.test { client in
            let base = Fixture.base()
            try assertProblem(try await client.post(base + "/devices/cleanup", object: Fixture.cleanup()), .forbidden, field: "UserAssertion")
            try assertProblem(try await client.post(base + "/devices/cleanup/batch", object: [Fixture.cleanup(user: "user-2")]),
                              .forbidden, field: "[0].UserAssertion")
            var cleanup = Fixture.cleanup()
            cleanup["UserAssertion"] = Self.userOne
            try await expect(client.post(base + "/devices/cleanup", object: cleanup), .accepted)
        }
        let command = try await harness.onlyPublished(DeviceCleanupRequested.self)
        XCTAssertEqual(command.identityVerified, true)
    }

    func testWithIdentityOffABindingWithoutAnAssertionIsWrittenUnverifiedAndCounted() async throws {
        let harness = try await harness(required: false)
        let series = "pushline_ingest_unverified_user_bindings_total"
        try await harness.test { client in
            let before = try await TokenScopeTests.metric(series, client)
            try await expect(client.post(Fixture.devices(), object: Self.registration(assertion: nil)), .accepted)
            try await expect(client.bearer(.put, Fixture.bw("devices"), json: try Fixture.bwDevice()), .created)
            try await expect(client.post(Fixture.devices(), object: Self.registration(assertion: Self.userOne)), .accepted)
            let after = try await TokenScopeTests.metric(series, client)
            XCTAssertEqual(after - before, 2, "the two registrations without an assertion")
            // An app with a secret checks an assertion it is given even while off, so signing can be tried first.
            try assertProblem(try await client.post(Fixture.devices(), object: Self.registration(assertion: Self.userTwo)),
                              .forbidden, field: "UserAssertion")
        }
        let commands = try await harness.published(DeviceRegistrationRequested.self)
        XCTAssertEqual(commands.map(\.identityVerified), [nil, nil, true])
    }

    // MARK: BW and KF5

    func testWithIdentityOnTheBWRoutesNeedTheAssertionOfThePhoneUser() async throws {
        let harness = try await harness(required: true)
        try await harness.test { client in
            try assertProblem(try await client.bearer(.put, Fixture.bw("devices"), json: try Fixture.bwDevice()),
                              .forbidden, field: "X-Pushline-User-Assertion")
            try assertProblem(try await client.bearer(.delete, Fixture.bw("devices"), json: try Fixture.bwDevice()),
                              .forbidden, field: "X-Pushline-User-Assertion")
            for method in [HTTPRequest.Method.put, .delete] {
                let response = try await client.execute(uri: Fixture.bw("devices"), method: method, headers: [
                    .authorization: "Bearer \(Fixture.rawToken)", .contentType: "application/json", .pushlineUserAssertion: Self.bwUser,
                ], body: ByteBuffer(string: try Fixture.bwDevice()))
                XCTAssertEqual(response.status, method == .put ? .created : .ok, String(buffer: response.body))
            }
        }
        let commands = await harness.publisher.commands
        XCTAssertEqual(commands.count, 2)
        guard commands.count == 2 else { return }
        XCTAssertEqual(try payload(DeviceRegistrationRequested.self, of: commands[0]).identityVerified, true)
        XCTAssertEqual(try payload(DeviceCleanupRequested.self, of: commands[1]).identityVerified, true)
    }

    func testWithIdentityOnTheKF5RoutesNeedTheAssertionOfTheUserToken() async throws {
        let harness = try await harness(required: true)
        let body = #"{"userToken": "user-1", "deviceToken": "\#(Fixture.apnsToken)"}"#
        try await harness.test { client in
            try assertProblem(try await client.bearer(.post, Fixture.kf5Tokens(), json: body), .forbidden, field: "X-Pushline-User-Assertion")
            try assertProblem(try await client.bearer(.delete, Fixture.kf5Tokens(), json: body), .forbidden, field: "X-Pushline-User-Assertion")
            let response = try await client.execute(uri: Fixture.kf5Tokens(), method: .post, headers: [
                .authorization: "Bearer \(Fixture.rawToken)", .contentType: "application/json", .pushlineUserAssertion: Self.userOne,
            ], body: ByteBuffer(string: body))
            XCTAssertEqual(response.status, .created)
        }
        let saved = try await harness.onlyPublished(DeviceRegistrationRequested.self)
        XCTAssertEqual(saved.identityVerified, true)
    }

    func testWithIdentityOnAPendingListIsReadOnlyByTheDevicesOwnUser() async throws {
        let harness = try await harness(required: true)
        await harness.store.seed(device: DeviceRow(appId: Fixture.appId, deviceToken: Fixture.apnsToken, userId: "user-1", platform: .ios,
                                                   version: 1, updatedAt: Date()))
        await harness.store.seed(pending: PendingNotificationRow(appId: Fixture.appId, deviceToken: Fixture.apnsToken, notificationId: "n1",
                                                                 deliveryId: UUID(), sentAt: Date(timeIntervalSince1970: 1), text: "hi",
                                                                 businessId: nil))
        let path = Fixture.bw("devices/\(Fixture.apnsToken)/notifications")
        @Sendable func read(_ client: any TestClientProtocol, user: String?, assertion: String?) async throws -> TestResponse {
            var headers: HTTPFields = [.authorization: "Bearer \(Fixture.rawToken)"]
            if let user { headers[.pushlineUserId] = user }
            if let assertion { headers[.pushlineUserAssertion] = assertion }
            return try await client.execute(uri: path, method: .get, headers: headers)
        }
        try await harness.test { client in
            try assertProblem(try await read(client, user: nil, assertion: nil), .forbidden, field: "X-Pushline-User-Id")
            try assertProblem(try await read(client, user: "user-1", assertion: nil), .forbidden, field: "X-Pushline-User-Assertion")
            try assertProblem(try await read(client, user: "user-1", assertion: Self.userTwo), .forbidden, field: "X-Pushline-User-Assertion")
            // Another user, with their own valid assertion, sees no list for a device that is not theirs.
            let other = try await read(client, user: "user-2", assertion: Self.userTwo)
            XCTAssertEqual(other.status, .ok)
            XCTAssertEqual(try decodeBody(BWDeviceAPI.PendingList.self, other).ns, [])
            let own = try await read(client, user: "user-1", assertion: Self.userOne)
            XCTAssertEqual(try decodeBody(BWDeviceAPI.PendingList.self, own).ns, [["n1", "1000", "hi"]])
        }
    }

    // MARK: the admin routes

    func testANewSecretIsShownOnceSealedInTheCommandAndOpensToWhatWasShown() async throws {
        let harness = try await harness(required: false, secret: false)
        let response = try await harness.test { client in
            try await client.admin(.post, "/admin/v1/apps/\(Fixture.appId)/identity-secret")
        }
        XCTAssertEqual(response.status, .created, String(buffer: response.body))
        XCTAssertEqual(response.headers[.cacheControl], "no-store")
        let answer = try decodeBody(AdminAPI.IdentitySecretAnswer.self, response)
        let command = try await harness.onlyPublished(UserIdentityChanged.self)
        XCTAssertNil(command.required)
        let sealed = try XCTUnwrap(command.secret)
        let opened = try SecretsKeyring(current: secretsKey).open(sealed, context: UserIdentity.sealContext(app: Fixture.appId))
        XCTAssertEqual(String(decoding: opened, as: UTF8.self), answer.identitySecret)
        let published = await harness.publisher.commands
        let written = String(decoding: published[0].value, as: UTF8.self)
        XCTAssertFalse(written.contains(answer.identitySecret), "the secret never enters Kafka in clear")
        XCTAssertEqual(answer.userIdentity.secretSealedWith, sealed.keyId)
        XCTAssertFalse(answer.userIdentity.required)
    }

    func testRequiringAssertionsNeedsASecretAndWithoutTheSecretsKeyNoSecretIsMade() async throws {
        let without = try await harness(required: false, secret: false)
        try await without.test { client in
            try assertProblem(try await client.admin(.put, "/admin/v1/apps/\(Fixture.appId)/identity", json: #"{"required": true}"#),
                              .conflict, field: "required")
            try assertProblem(try await client.admin(.put, "/admin/v1/apps/\(Fixture.appId)/identity", json: #"{}"#),
                              .badRequest, field: "required")
        }
        await assertNothingPublished(without.publisher)

        var noKey = try await harness(required: false, secret: false)
        noKey.configuration.secrets = nil
        let refused = try await noKey.test { client in try await client.admin(.post, "/admin/v1/apps/\(Fixture.appId)/identity-secret") }
        XCTAssertEqual(refused.status, .serviceUnavailable)
        await assertNothingPublished(noKey.publisher)

        let with = try await harness(required: false)
        let response = try await with.test { client in
            try await client.admin(.put, "/admin/v1/apps/\(Fixture.appId)/identity", json: #"{"required": true}"#)
        }
        XCTAssertEqual(response.status, .accepted)
        XCTAssertEqual(try decodeBody(AdminAPI.UserIdentityView.self, response).note, AdminAPI.UserIdentityView.onNote)
        let change = try await with.onlyPublished(UserIdentityChanged.self)
        XCTAssertEqual(change.required, true)
    }

    func testTheAppViewAndTheCreateAnswerSayWhileIdentityIsOffWhatThatMeans() async throws {
        let harness = try await harness(required: false, secret: false)
        try await harness.test { client in
            let view = try decodeBody(AdminAPI.AppView.self, try await client.admin(.get, "/admin/v1/apps/\(Fixture.appId)"))
            XCTAssertFalse(view.userIdentity.required)
            XCTAssertFalse(view.userIdentity.secretSet)
            XCTAssertTrue(view.userIdentity.note.contains("any holder of the client token"), view.userIdentity.note)
            let created = try await client.admin(.post, "/admin/v1/apps", json: #"{"name": "new"}"#)
            XCTAssertEqual(created.status, .created)
            XCTAssertEqual(try decodeBody(AdminAPI.AppCreatedAnswer.self, created).userIdentity.note, AdminAPI.UserIdentityView.offNote)
        }
    }

    // MARK: a device's own change of its properties

    func testWithIdentityOnADevicesOwnChangeNeedsItsUsersAssertionAndTheBackendsBatchDoesNot() async throws {
        let identified = try await harness(required: true)
        let change = #"{"userId": "user-1", "tags": {"add": ["vip"]}}"#
        try await identified.test { client in
            try assertProblem(try await client.bearer(.post, Fixture.deviceChanges(), json: change), .forbidden,
                              field: UserIdentity.assertionHeader, code: .userAssertionRequired)
            for (assertion, status) in [(Self.userTwo, HTTPResponse.Status.forbidden), (Self.userOne, .accepted)] {
                let headers: HTTPFields = [.authorization: "Bearer \(Fixture.rawToken)", .contentType: "application/json",
                                           .pushlineUserAssertion: assertion]
                let answer = try await client.execute(uri: Fixture.deviceChanges(), method: .post, headers: headers,
                                                      body: ByteBuffer(string: change))
                XCTAssertEqual(answer.status, status, String(buffer: answer.body))
            }
            let batch = try await client.bearer(.post, Fixture.deviceChanges() + "/batch", json: #"{"changes": [\#(change)]}"#)
            XCTAssertEqual(batch.status, .accepted, String(buffer: batch.body))
        }
        let commands = try await identified.published(DeviceChangeRequested.self)
        XCTAssertEqual(commands.map(\DeviceChangeRequested.identityVerified), [true, nil])
        XCTAssertEqual(commands.map(\DeviceChangeRequested.fromClient), [true, nil], "only the device's own change is judged for its user's assertion")
    }
}

/// Asserts the status of an answer (XCTAssertEqual cannot await).
private func expect(_ response: TestResponse, _ status: HTTPResponse.Status, file: StaticString = #filePath, line: UInt = #line) {
    XCTAssertEqual(response.status, status, String(buffer: response.body), file: file, line: line)
}

extension HTTPFields.Element.Name {
    static let pushlineUserAssertion = Self("X-Pushline-User-Assertion")!
    static let pushlineUserId = Self("X-Pushline-User-Id")!
}
