import Contracts
import Foundation
import NIOHTTP1
import TestSupport
import XCTest

/// An admin change answered 2xx is applied: every route of every ingest instance behaves as if
/// it were, at once (docs/API.md#admin-changes-are-applied-when-answered). Real broker, both kinds
/// (memory, and durable as `make run` starts it), two ingest instances on one store, no sleeps
/// between a change and its use.
final class ReadYourWritesTests: XCTestCase {
    typealias API = DeviceRegistrationAPI
    private var stack: PushlineStack?
    private var second: ServiceProcess?

    override func tearDown() async throws {
        _ = try? await second?.stop()
        await stack?.stop()
    }

    /// The stack (the durable one with the partitions `make run` gives it), and a second ingest
    /// instance on the same broker and store.
    private func start(durable: Bool) async throws -> (PushlineStack, String) {
        var environment = ["PUSHLINE_SECRETS_KEY": TestPushKeys.secretsKey()]
        if durable { environment["PUSHLINE_PARTITIONS"] = try PushlineStack.oneMachineSetting("PUSHLINE_PARTITIONS") }
        let stack = try await PushlineStack.start(processorEnvironment: environment.filter { $0.key == "PUSHLINE_PARTITIONS" },
                                                  ingestEnvironment: environment, durableBroker: durable)
        self.stack = stack
        let port = TestBroker.freePort()
        let second = stack.makeIngest(port: port)
        self.second = second
        try second.start()
        try await second.waitHealthy("http://127.0.0.1:\(port)/health")
        return (stack, "http://127.0.0.1:\(port)")
    }

    func testAHundredAppsRegisterDevicesRightAfterTheyAreCreatedOnTheMemoryBroker() async throws {
        try await hundredApps(durable: false)
    }

    func testAHundredAppsRegisterDevicesRightAfterTheyAreCreatedOnTheDurableBroker() async throws {
        try await hundredApps(durable: true)
    }

    /// Each app is created on one instance and, with no wait, given a tracked registration on the
    /// other: every registration is written (none counted as forged) and reaches `Success`. Every
    /// tenth app also gets a batch of two registrations and then a send to both users, whose
    /// outbound records reach both devices.
    private func hundredApps(durable: Bool) async throws {
        let (stack, otherIngest) = try await start(durable: durable)
        let apps = 100
        let results = try await withThrowingTaskGroup(of: (AdminAPI.AppCreatedAnswer, UUID, UUID?).self) { group in
            var results: [(AdminAPI.AppCreatedAnswer, UUID, UUID?)] = []
            for n in 0..<apps {
                if n >= 8 { results.append(try await group.next()!) }  // eight creations in the air at a time
                group.addTask {
                    let created = try await HTTPClientHelpers.post("\(stack.ingestURL)/admin/v1/apps",
                                                                   json: AdminAPI.CreateApp(orgId: nil, name: "app \(n)"),
                                                                   headers: stack.adminHeaders)
                    guard created.status == 201 else { throw TestFailure("create app answered \(created.status): \(created.text)") }
                    let app = try created.decode(AdminAPI.AppCreatedAnswer.self)
                    let appId = app.mobileAppId.uuidString
                    let url = "\(otherIngest)/api/v1.0/orgs/\(app.orgId)/pushdeviceregistration/devices"
                    let answer = try await HTTPClientHelpers.post(url, json: API.Registration(
                        MobileAppId: appId, UserId: "first", ApiToken: app.apiToken, ApnsDeviceToken: Tokens.apns(n)),
                        headers: [API.trackRegistrationHeader: "true"])
                    guard answer.status == 202 else { throw TestFailure("registration answered \(answer.status): \(answer.text)") }
                    let requestId = try answer.decode(API.RegistrationAccepted.self).RegistrationRequestId
                    guard n % 10 == 0 else { return (app, requestId, nil) }
                    let batch = try await HTTPClientHelpers.post(url + "/batch", json: [
                        API.Registration(MobileAppId: appId, UserId: "a", ApiToken: app.apiToken, ApnsDeviceToken: Tokens.apns(n, salt: 1)),
                        API.Registration(MobileAppId: appId, UserId: "b", ApiToken: app.apiToken, FcmDeviceToken: Tokens.fcm(n, salt: 1)),
                    ])
                    guard batch.status == 202 else { throw TestFailure("batch answered \(batch.status): \(batch.text)") }
                    let delivery = try await stack.send(["userIds": ["a", "b"], "text": "right away"], app: app)
                    return (app, requestId, delivery)
                }
            }
            for try await result in group { results.append(result) }
            return results
        }
        XCTAssertEqual(results.count, apps)
        for (app, requestId, _) in results {
            let statuses = try await stack.decidedStatuses(org: app.orgId, app: app.mobileAppId, token: app.apiToken, ids: [requestId])
            XCTAssertEqual(statuses.map(\.Status), [.Success], "app \(app.mobileAppId)")
        }
        // None of those registrations was taken for forged, on either instance.
        for url in [stack.ingestURL, otherIngest] {
            let metrics = try await HTTPClientHelpers.get("\(url)/metrics").text
            let forged = metrics.split(separator: "\n").first { $0.hasPrefix("pushline_ingest_forged_commands_total") }
            XCTAssertTrue(forged == nil || forged!.hasSuffix(" 0"), "\(url): \(forged ?? "")")
        }
        // The sends that followed the batches reached both of their devices.
        let deliveries = results.compactMap(\.2)
        XCTAssertEqual(deliveries.count, apps / 10)
        var reached: [UUID: Int] = [:]
        do {
            try await eventually("every send's outbound records", timeout: .seconds(60)) {
                let records = try await stack.outboundRecords().map(\.record)
                reached = Dictionary(uniqueKeysWithValues: deliveries.map { id in (id, records.filter { $0.deliveryId == id }.count) })
                return reached.values.allSatisfy { $0 == 2 }
            }
        } catch {
            XCTFail("devices reached per send: \(reached.values.sorted()); \(stack.logs().suffix(3000))")
        }
    }

    /// Credentials, settings and tokens: each change shows on the other instance as soon as it is
    /// answered, and a revoked token is refused there at once.
    func testEveryAdminChangeShowsOnEveryInstanceAsSoonAsItIsAnswered() async throws {
        let (stack, otherIngest) = try await start(durable: false)
        let admin = stack.adminHeaders
        let created = try await HTTPClientHelpers.post("\(stack.ingestURL)/admin/v1/apps", json: AdminAPI.CreateApp(orgId: nil, name: "rw"),
                                                       headers: admin)
        XCTAssertEqual(created.status, 201)
        let app = try created.decode(AdminAPI.AppCreatedAnswer.self)
        let appURL = "/admin/v1/apps/\(app.mobileAppId)"

        // Push credentials: GET right after PUT, on the other instance.
        let keys = TestPushKeys()
        let apns = try JSONSerialization.data(withJSONObject: [
            "teamId": "ABCDE12345", "keyId": "KEY1234567", "bundleId": "com.example.rw", "privateKey": keys.apnsPEM, "environment": "sandbox",
        ])
        let put = try await HTTPClientHelpers.request(.PUT, "\(stack.ingestURL)\(appURL)/credentials/apns", body: apns, headers: admin)
        XCTAssertEqual(put.status, 202, put.text)
        let shown = try await HTTPClientHelpers.get("\(otherIngest)\(appURL)/credentials/apns", headers: admin)
        XCTAssertEqual(shown.status, 200, shown.text)
        XCTAssertEqual(try shown.decode(AdminAPI.APNsCredentialsView.self).bundleId, "com.example.rw")

        // Settings: the other instance shows the new callback URL.
        let patch = try await HTTPClientHelpers.request(.PATCH, "\(stack.ingestURL)\(appURL)",
                                                        body: Data(#"{"callbackUrl": "https://rw.example.com/cb"}"#.utf8), headers: admin)
        XCTAssertEqual(patch.status, 202, patch.text)
        let view = try await HTTPClientHelpers.get("\(otherIngest)\(appURL)", headers: admin).decode(AdminAPI.AppView.self)
        XCTAssertEqual(view.callbackUrl, "https://rw.example.com/cb")

        // A new token works on the other instance at once; the first one, revoked, is refused there at once,
        // although that instance admitted it a moment before (and may have cached it).
        let sendBody: [String: Any] = ["userId": "nobody", "text": "t"]
        let before = try await call(otherIngest, .POST, "/v1/apps/\(app.mobileAppId)/notifications", json: sendBody, token: app.apiToken)
        XCTAssertEqual(before.status, 202, before.text)
        let issued = try await HTTPClientHelpers.post("\(stack.ingestURL)\(appURL)/tokens", json: AdminAPI.IssueToken(scopes: [.server]), headers: admin)
        XCTAssertEqual(issued.status, 201, issued.text)
        let newToken = try issued.decode(AdminAPI.TokenIssuedAnswer.self)
        let withNew = try await call(otherIngest, .POST, "/v1/apps/\(app.mobileAppId)/notifications", json: sendBody, token: newToken.apiToken)
        XCTAssertEqual(withNew.status, 202, withNew.text)
        let revoke = try await HTTPClientHelpers.request(.DELETE, "\(stack.ingestURL)\(appURL)/tokens/\(app.tokenId)", headers: admin)
        XCTAssertEqual(revoke.status, 202, revoke.text)
        let after = try await call(otherIngest, .POST, "/v1/apps/\(app.mobileAppId)/notifications", json: sendBody, token: app.apiToken)
        XCTAssertEqual(after.status, 401, after.text)
        // The registration gate of the other instance does not write for the revoked token either.
        let forgedBefore = try await forgedCount(otherIngest)
        let registration = try await HTTPClientHelpers.post(
            "\(otherIngest)/api/v1.0/orgs/\(app.orgId)/pushdeviceregistration/devices",
            json: API.Registration(MobileAppId: app.mobileAppId.uuidString, UserId: "u", ApiToken: app.apiToken, ApnsDeviceToken: Tokens.apns(1)))
        XCTAssertEqual(registration.status, 202)
        let forgedAfter = try await forgedCount(otherIngest)
        XCTAssertEqual(forgedAfter, forgedBefore + 1)
    }

    /// Requiring user assertions, and a new identity secret, are changes of access: the other
    /// instance, which admitted a binding without an assertion (or with the old secret's) a moment
    /// before and may have the app cached, refuses it as soon as the change is answered.
    func testRequiringUserAssertionsIsEnforcedOnEveryInstanceAsSoonAsItIsAnswered() async throws {
        let (stack, otherIngest) = try await start(durable: false)
        let admin = stack.adminHeaders
        let app = try await stack.createApp()
        let appURL = "\(stack.ingestURL)/admin/v1/apps/\(app.mobileAppId)"
        let made = try await HTTPClientHelpers.request(.POST, "\(appURL)/identity-secret", headers: admin)
        XCTAssertEqual(made.status, 201, made.text)
        let oldSecret = try made.decode(AdminAPI.IdentitySecretAnswer.self).identitySecret
        let kf5 = "/kf5/v1/apps/\(app.mobileAppId)/tokens"
        func save(assertion: String?) async throws -> HTTPClientHelpers.Answer {
            try await HTTPClientHelpers.request(.POST, "\(otherIngest)\(kf5)", body: try JSONSerialization.data(withJSONObject: [
                "userToken": "u-1", "deviceToken": Tokens.apns(1)]), headers: [
                "Authorization": "Bearer \(app.clientToken)", UserIdentity.assertionHeader: assertion,
            ].compactMapValues { $0 })
        }

        let unverified = try await save(assertion: nil)
        XCTAssertEqual(unverified.status, 201, unverified.text)
        let required = try await HTTPClientHelpers.request(.PUT, "\(appURL)/identity", body: Data(#"{"required": true}"#.utf8), headers: admin)
        XCTAssertEqual(required.status, 202, required.text)
        let refused = try await save(assertion: nil)
        XCTAssertEqual(refused.status, 403, refused.text)
        let withOld = try await save(assertion: UserIdentity.assertion(userId: "u-1", secret: oldSecret))
        XCTAssertEqual(withOld.status, 201, withOld.text)

        let remade = try await HTTPClientHelpers.request(.POST, "\(appURL)/identity-secret", headers: admin)
        XCTAssertEqual(remade.status, 201, remade.text)
        let newSecret = try remade.decode(AdminAPI.IdentitySecretAnswer.self).identitySecret
        let oldRefused = try await save(assertion: UserIdentity.assertion(userId: "u-1", secret: oldSecret))
        XCTAssertEqual(oldRefused.status, 403, oldRefused.text)
        let withNew = try await save(assertion: UserIdentity.assertion(userId: "u-1", secret: newSecret))
        XCTAssertEqual(withNew.status, 201, withNew.text)
    }

    private func call(_ base: String, _ method: HTTPMethod, _ path: String, json: Any, token: String) async throws -> HTTPClientHelpers.Answer {
        try await HTTPClientHelpers.request(method, "\(base)\(path)", body: try JSONSerialization.data(withJSONObject: json),
                                            headers: ["Authorization": "Bearer \(token)"])
    }

    private func forgedCount(_ base: String) async throws -> Int {
        let metrics = try await HTTPClientHelpers.get("\(base)/metrics").text
        let line = metrics.split(separator: "\n").first { $0.hasPrefix("pushline_ingest_forged_commands_total") }
        return line.flatMap { Double($0.split(separator: " ").last!) }.map { Int($0) } ?? 0
    }
}
