import Contracts
import Foundation
import Logging
import Projections
import SQLiteProjections
import TestSupport
import XCTest

/// The store is a function of the log: a rebuild and a processor catching up on a fresh store
/// decide every command as the live processor did, whatever order they read the topics in.
final class ExactReplayTests: XCTestCase {
    typealias API = DeviceRegistrationAPI

    private var stack: PushlineStack!

    override func tearDown() async throws {
        await stack?.stop()
    }

    /// Registers `device` for `user` with `token`, tracked, and waits for its decided status.
    private func register(_ app: AdminAPI.AppCreatedAnswer, user: String, device: String, token: String) async throws -> API.Status {
        let answer = try await HTTPClientHelpers.post(stack.registrationURL(org: app.orgId, "devices"), json: API.Registration(
            MobileAppId: app.mobileAppId.uuidString, UserId: user, ApiToken: token, ApnsDeviceToken: device),
            headers: [API.trackRegistrationHeader: "true"])
        XCTAssertEqual(answer.status, 202, answer.text)
        let id = try answer.decode(API.RegistrationAccepted.self).RegistrationRequestId
        return try await stack.decidedStatuses(org: app.orgId, app: app.mobileAppId, token: token, ids: [id])[0].Status
    }

    private func devices(in store: any ProjectionStore) async throws -> [String] {
        try await store.dump().split(separator: "\n").filter { $0.hasPrefix("devices") }.map(String.init)
    }

    /// The history the issue found rebuilt wrongly: a registration made with a token revoked
    /// later, and a send followed by a registration of its target user. Rebuilt topic by topic,
    /// the first device was lost (judged against the revoked token) and the send reached the later
    /// device; in event order the rebuilt store is the live one.
    func testARebuildDecidesARevokedTokensRegistrationAndASendAsTheyWereDecidedLive() async throws {
        stack = try await PushlineStack.start()
        let app = try await stack.createApp()
        let appURL = "\(stack.ingestURL)/admin/v1/apps/\(app.mobileAppId)"
        let issued = try await HTTPClientHelpers.request(.POST, "\(appURL)/tokens", body: Data(#"{"scopes":["client","server"]}"#.utf8), headers: stack.adminHeaders)
        XCTAssertEqual(issued.status, 201, issued.text)
        let t2 = try issued.decode(AdminAPI.TokenIssuedAnswer.self).apiToken

        let a1 = Tokens.apns(1), a2 = Tokens.apns(2), a3 = Tokens.apns(3)
        let first = try await register(app, user: "u1", device: a1, token: app.apiToken)
        XCTAssertEqual(first, .Success)
        let revoked = try await HTTPClientHelpers.request(.DELETE, "\(appURL)/tokens/\(app.tokenId)", headers: stack.adminHeaders)
        XCTAssertEqual(revoked.status, 202, revoked.text)
        try await eventually("revocation projected") {
            let view = try await HTTPClientHelpers.get(appURL, headers: self.stack.adminHeaders).decode(AdminAPI.AppView.self)
            return view.tokens.contains { $0.tokenId == app.tokenId && $0.revoked }
        }
        let second = try await register(app, user: "u2", device: a2, token: t2)
        XCTAssertEqual(second, .Success)
        let sent = try await stack.call(.POST, "/v1/apps/\(app.mobileAppId)/notifications",
                                        json: ["userIds": ["u1", "u2"], "title": "hello"], token: t2)
        XCTAssertEqual(sent.status, 202, sent.text)
        let delivery = try sent.decode(NotificationAPI.SendAccepted.self).deliveryId
        try await eventually("the send applied") {
            try await self.stack.sqlite("SELECT sent FROM deliveries WHERE delivery_id = '\(delivery)'") == ["2"]
        }
        let third = try await register(app, user: "u1", device: a3, token: t2)
        XCTAssertEqual(third, .Success)

        let live = try await stack.openStore()
        let liveDevices = try await devices(in: live)
        XCTAssertEqual(liveDevices.count, 3, "a1, a2, a3: \(liveDevices)")
        let path = stack.directory.appendingPathComponent("rebuilt.sqlite").path
        let output = try await stack.rebuild(store: "sqlite:\(path)", arguments: [])
        let rebuilt = try SQLiteProjectionStore(path: path, logger: Logger(label: "test"))
        let rebuiltDevices = try await devices(in: rebuilt)
        XCTAssertEqual(rebuiltDevices, liveDevices, "the device registered with the token revoked later is kept")
        let rebuiltSent = try await rebuilt.deliveryStats(app: app.mobileAppId, deliveryId: UUID(uuidString: delivery)!)?.delivery.sent
        XCTAssertEqual(rebuiltSent, 2, "the send reaches a1 and a2, not a3 registered after it")
        let (liveDump, rebuiltDump) = (try await live.dump(), try await rebuilt.dump())
        ScaleOutTests.assertSameDump(rebuiltDump, liveDump, "rebuilt vs live\n\(output)")
        await live.close()
        await rebuilt.close()
    }

    /// A processor started on an empty store over a log of apps created and then many
    /// registrations applies every registration: none is judged before its app's creation, which
    /// sits on another topic and may well be read after them.
    func testAProcessorCatchingUpOnAFreshStoreAppliesEveryRegistrationOfAnAppCreatedBeforeThem() async throws {
        stack = try await PushlineStack.start()
        var apps: [AdminAPI.AppCreatedAnswer] = []
        for n in 0..<3 { apps.append(try await stack.createApp(name: "app \(n)")) }
        for app in apps { _ = try await stack.registerDevices(600, app: app) }
        let live = try await stack.openStore()
        let liveDump = try await live.dump()
        await live.close()

        let path = stack.directory.appendingPathComponent("caught-up.sqlite").path
        let late = stack.makeProcessor(store: "sqlite:\(path)", environment: [
            "PUSHLINE_GROUP_ID": "late-\(UUID().uuidString)", "PUSHLINE_ACCEPT_EXISTING_LOG": "true",
            "PUSHLINE_PROCESSOR_PORT": "\(Int.random(in: 20_000..<30_000))",
        ])
        try late.start()
        do {
            try await eventually("the late processor applied 1,800 devices", timeout: .seconds(120)) {
                let count = try? await ProcessRunner.run("sqlite3", ["-cmd", ".timeout 10000", path, "SELECT COUNT(*) FROM devices"])
                return count?.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines) == "1800"
            }
        } catch {
            _ = try? await late.stop()
            throw error
        }
        _ = try? await late.stop()
        let store = try SQLiteProjectionStore(path: path, logger: Logger(label: "test"))
        let caughtUp = try await store.dump()
        await store.close()
        ScaleOutTests.assertSameDump(caughtUp, liveDump, "caught up on a fresh store vs live")
    }
}
