import Contracts
import Foundation
import Logging
import Projections
import SQLiteProjections
import TestSupport
import WireCodec
import XCTest

/// Scheduled sends through the real stack (docs/API.md#scheduled-sends): a send goes out only
/// after its time, from the firing the processor appends to the log; it is listed and read while
/// it waits; a cancel before it wins and is answered once applied; a rebuild from the commands
/// makes the same store and publishes nothing.
final class ScheduledSendFlowTests: XCTestCase {
    private var stack: PushlineStack!

    override func tearDown() async throws {
        await stack?.stop()
    }

    private func path(_ app: AdminAPI.AppCreatedAnswer, _ rest: String = "") -> String {
        "/v1/apps/\(app.mobileAppId)/notifications\(rest)"
    }

    private func stats(_ delivery: UUID, _ app: AdminAPI.AppCreatedAnswer) async throws -> TrackingAPI.DeliveryStats? {
        let answer = try await stack.call(.GET, "/v1/apps/\(app.mobileAppId)/deliveries/\(delivery.lowercasedString)", token: app.apiToken)
        return answer.status == 200 ? try answer.wire(TrackingAPI.DeliveryStats.self) : nil
    }

    func testAScheduledSendGoesOutAfterItsTimeACancelWinsBeforeItAndARebuildRepeatsIt() async throws {
        stack = try await PushlineStack.start()
        let app = try await stack.createApp()
        try await stack.registerKF5([("u1", Tokens.apns(1), "IOS"), ("u1", Tokens.fcm(1), "ANDROID")], app: app)
        try await stack.waitForDevices(2, app: app.mobileAppId)

        // A send three seconds ahead: accepted with its time, waiting, listed.
        let sendAt = Date().addingTimeInterval(3)
        let accepted = try await stack.call(.POST, path(app), json: ["userIds": ["u1"], "title": "later", "sendAt": RFC3339.string(from: sendAt)],
                                            token: app.apiToken)
        XCTAssertEqual(accepted.status, 202, accepted.text)
        let answer = try accepted.wire(NotificationAPI.SendAccepted.self)
        let delivery = try XCTUnwrap(UUID(uuidString: answer.deliveryId))
        XCTAssertEqual(answer.sendAt.map(RFC3339.milliseconds), RFC3339.milliseconds(sendAt))
        try await eventually("the send kept") { try await self.stats(delivery, app)?.schedule == .waiting }
        let listed = try await stack.call(.GET, path(app), token: app.apiToken).wire(NotificationAPI.ScheduledList.self)
        XCTAssertEqual(listed.notifications.map(\.deliveryId), [delivery.lowercasedString])
        let before = try await stack.outboundRecords().filter { $0.record.deliveryId == delivery }
        if Date() < sendAt { XCTAssertEqual(before.count, 0, "nothing goes before its time") }

        // Another, a minute ahead, cancelled: answered once applied, and again the same.
        let second = try await stack.call(.POST, path(app), json: ["userIds": ["u1"], "title": "never",
                                                                   "sendAt": RFC3339.string(from: Date().addingTimeInterval(60))], token: app.apiToken)
        let cancelled = try XCTUnwrap(UUID(uuidString: try second.wire(NotificationAPI.SendAccepted.self).deliveryId))
        for _ in 0..<2 {
            let answer = try await stack.call(.DELETE, path(app, "/\(cancelled.lowercasedString)"), token: app.apiToken)
            XCTAssertEqual(answer.status, 200, answer.text)
            XCTAssertEqual(try answer.wire(NotificationAPI.Cancelled.self).schedule, .cancelled)
        }
        let unknown = try await stack.call(.DELETE, path(app, "/\(UUID().lowercasedString)"), token: app.apiToken)
        XCTAssertEqual(unknown.status, 404, unknown.text)

        // The first goes out after its time, to both devices, once.
        let records = try await stack.waitForOutbound(2).filter { $0.record.deliveryId == delivery }
        XCTAssertEqual(Set(records.map(\.record.deviceToken)), [Tokens.apns(1), Tokens.fcm(1)])
        try await eventually("the send fired") { try await self.stats(delivery, app)?.schedule == .fired }
        let firedStats = try await stats(delivery, app)
        let fired = try XCTUnwrap(firedStats)
        XCTAssertEqual(fired.sent, 2)
        XCTAssertEqual(fired.sendAt.map(RFC3339.milliseconds), RFC3339.milliseconds(sendAt))
        let late = try await stack.call(.DELETE, path(app, "/\(delivery.lowercasedString)"), token: app.apiToken)
        XCTAssertEqual(late.status, 409, late.text)
        XCTAssertTrue(late.text.contains("schedule_not_waiting"), late.text)
        let cancelledList = try await stack.call(.GET, path(app, "?schedule=cancelled"), token: app.apiToken)
            .wire(NotificationAPI.ScheduledList.self)
        XCTAssertEqual(cancelledList.notifications.map(\.deliveryId), [cancelled.lowercasedString])
        let waiting = try await stack.call(.GET, path(app), token: app.apiToken).wire(NotificationAPI.ScheduledList.self)
        XCTAssertEqual(waiting.notifications, [])
        let outbound = try await stack.outboundRecords()
        XCTAssertEqual(outbound.filter { $0.record.deliveryId == delivery }.count, 2, "fired once")
        XCTAssertEqual(outbound.filter { $0.record.deliveryId == cancelled }.count, 0)

        // Replayed from the commands (the firing among them): the same store, nothing published.
        let live = try await stack.openStore()
        let path = stack.directory.appendingPathComponent("rebuilt.sqlite").path
        let output = try await stack.rebuild(store: "sqlite:\(path)", arguments: ["--from", "commands"])
        let rebuilt = try SQLiteProjectionStore(path: path, logger: Logger(label: "test"))
        let (liveDump, rebuiltDump) = (try await live.dump(), try await rebuilt.dump())
        ScaleOutTests.assertSameDump(rebuiltDump, liveDump, "rebuilt vs live\n\(output)")
        let after = try await stack.outboundRecords()
        XCTAssertEqual(after.count, outbound.count, "a rebuild sends nothing")
        await live.close()
        await rebuilt.close()
    }

    func testASendAtThatCannotBeReadOrIsTooFarAheadIsRefused() async throws {
        stack = try await PushlineStack.start()
        let app = try await stack.createApp()
        for (value, message) in [("tomorrow", "RFC 3339"), (RFC3339.string(from: Date().addingTimeInterval(31 * 86_400)), "30 days")] {
            let answer = try await stack.call(.POST, path(app), json: ["userIds": ["u1"], "title": "x", "sendAt": value], token: app.apiToken)
            XCTAssertEqual(answer.status, 400, answer.text)
            XCTAssertTrue(answer.text.contains("sendAt") && answer.text.contains(message), answer.text)
        }
        let bad = try await stack.call(.GET, path(app, "?schedule=someday"), token: app.apiToken)
        XCTAssertEqual(bad.status, 400, bad.text)
    }
}

private extension HTTPClientHelpers.Answer {
    /// The body read as the services write it (RFC 3339 times).
    func wire<T: Decodable>(_: T.Type) throws -> T { try WireJSON.decoder().decode(T.self, from: body) }
}
