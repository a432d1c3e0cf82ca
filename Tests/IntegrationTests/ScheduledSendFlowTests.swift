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

    /// A local-time send reaches each device at its own zone's hour, wave by wave, and a cancel
    /// drops what is still held; quiet hours (a user's own) hold or drop a push and a critical one
    /// ignores them; a cap stops a user's second push. A rebuild makes the same store, sending nothing.
    func testLocalTimeQuietHoursAndCapsOnTheStackAndARebuildRepeatsThem() async throws {
        stack = try await PushlineStack.start()
        let app = try await stack.createApp()
        let patched = try await HTTPClientHelpers.request(.PATCH, "\(stack.ingestURL)/admin/v1/apps/\(app.mobileAppId)",
                                                          body: try JSONSerialization.data(withJSONObject: [
                                                              "timeZone": "UTC", "frequencyCaps": [["category": "promo", "limit": 1, "windowHours": 1]],
                                                          ]), headers: stack.adminHeaders)
        XCTAssertEqual(patched.status, 202, patched.text)
        // Devices in Tokyo, in UTC and in New York, and two users for quiet hours and caps.
        let zones: [(user: String, zone: String?)] = [("tokyo", "Asia/Tokyo"), ("utc", nil), ("ny", "America/New_York"),
                                                      ("quiet", "UTC"), ("capped", "UTC")]
        let registrations = zones.enumerated().map { n, d in
            DeviceRegistrationAPI.Registration(MobileAppId: app.mobileAppId.uuidString, UserId: d.user, ApiToken: app.apiToken,
                                               ApnsDeviceToken: Tokens.apns(n), TimeZone: d.zone)
        }
        let registered = try await HTTPClientHelpers.post(stack.registrationURL(org: app.orgId, "devices/batch"), json: registrations)
        XCTAssertEqual(registered.status, 202, registered.text)
        try await stack.waitForDevices(zones.count, app: app.mobileAppId)
        func outbound(_ delivery: UUID) async throws -> [String] {
            try await stack.outboundRecords().filter { $0.record.deliveryId == delivery }.map(\.record.deviceToken)
        }

        // 3 s from now on a UTC wall clock: past in Tokyo (sent at once), ahead in New York (held for hours).
        var utc = Calendar(identifier: .gregorian)
        utc.timeZone = TimeZone(identifier: "UTC")!
        let c = utc.dateComponents([.year, .month, .day, .hour, .minute, .second], from: Date().addingTimeInterval(3))
        let local = String(format: "%04d-%02d-%02dT%02d:%02d:%02d", c.year!, c.month!, c.day!, c.hour!, c.minute!, c.second!)
        let delivery = try await stack.send(["userIds": ["tokyo", "utc", "ny"], "title": "good morning", "sendAtLocal": local], app: app)
        try await eventually("Tokyo's at once") { try await outbound(delivery) == [Tokens.apns(0)] }
        try await eventually("UTC's at its time") { try await outbound(delivery).count == 2 }
        let sentSoFar = try await outbound(delivery)
        XCTAssertEqual(Set(sentSoFar), [Tokens.apns(0), Tokens.apns(1)])
        let waitingStats = try await stats(delivery, app)
        let waiting = try XCTUnwrap(waitingStats)
        XCTAssertEqual(waiting.schedule, .sending)
        XCTAssertEqual(waiting.sendAtLocal, local)
        XCTAssertEqual([waiting.sent, waiting.held], [2, 1])
        XCTAssertEqual(waiting.waves?.count, 1)
        let listed = try await stack.call(.GET, path(app, "?schedule=sending"), token: app.apiToken).wire(NotificationAPI.ScheduledList.self)
        XCTAssertEqual(listed.notifications.map(\.deliveryId), [delivery.lowercasedString])
        let cancel = try await stack.call(.DELETE, path(app, "/\(delivery.lowercasedString)"), token: app.apiToken)
        XCTAssertEqual(cancel.status, 200, cancel.text)
        let cancelledStats = try await stats(delivery, app)
        let cancelled = try XCTUnwrap(cancelledStats)
        XCTAssertEqual([cancelled.sent, cancelled.held, cancelled.cancelled], [2, 0, 1])
        XCTAssertEqual(cancelled.schedule, .cancelled)

        // The user's own quiet hours run now (two hours around it): held, dropped, or critical.
        let minutes = utc.component(.hour, from: Date()) * 60 + utc.component(.minute, from: Date())
        func clock(_ m: Int) -> String { String(format: "%02d:%02d", ((m % 1440) + 1440) % 1440 / 60, ((m % 1440) + 1440) % 1440 % 60) }
        let settings = try await stack.call(.PUT, "/v1/apps/\(app.mobileAppId)/users/quiet/settings",
                                            json: ["quietHours": "\(clock(minutes - 60))-\(clock(minutes + 60))"], token: app.apiToken)
        XCTAssertEqual(settings.status, 200, settings.text)
        let held = try await stack.send(["userIds": ["quiet"], "title": "shh"], app: app)
        let dropped = try await stack.send(["userIds": ["quiet"], "title": "shh", "quietHours": "drop"], app: app)
        let critical = try await stack.send(["userIds": ["quiet"], "title": "fire", "priority": "critical"], app: app)
        // A cap of one promo an hour: the second promo is capped, an exempt one goes.
        let promos = [try await stack.send(["userIds": ["capped"], "title": "1", "capCategory": "promo"], app: app),
                      try await stack.send(["userIds": ["capped"], "title": "2", "capCategory": "promo"], app: app),
                      try await stack.send(["userIds": ["capped"], "title": "3", "capCategory": "promo", "capExempt": true], app: app)]
        try await eventually("the critical push and the promos") {
            let counts = [try await outbound(critical).count, try await outbound(promos[0]).count, try await outbound(promos[2]).count]
            return counts == [1, 1, 1]
        }
        let (heldRead, droppedRead) = (try await stats(held, app), try await stats(dropped, app))
        let heldStats = try XCTUnwrap(heldRead), droppedStats = try XCTUnwrap(droppedRead)
        XCTAssertEqual([heldStats.sent, heldStats.held, droppedStats.sent, droppedStats.dropped], [0, 1, 0, 1])
        XCTAssertEqual(heldStats.schedule, .sending)
        let cappedStats = try await stats(promos[1], app)
        XCTAssertEqual(cappedStats?.capped, 1)
        let cappedOut = try await outbound(promos[1])
        XCTAssertEqual(cappedOut, [])

        // Replayed from the commands (the firings among them): the same store, nothing published.
        let outboundCount = try await stack.outboundRecords().count
        let live = try await stack.openStore()
        let path = stack.directory.appendingPathComponent("rebuilt-time.sqlite").path
        let output = try await stack.rebuild(store: "sqlite:\(path)", arguments: ["--from", "commands"])
        let rebuilt = try SQLiteProjectionStore(path: path, logger: Logger(label: "test"))
        let (liveDump, rebuiltDump) = (try await live.dump(), try await rebuilt.dump())
        ScaleOutTests.assertSameDump(rebuiltDump, liveDump, "rebuilt vs live\n\(output)")
        let afterCount = try await stack.outboundRecords().count
        XCTAssertEqual(afterCount, outboundCount, "a rebuild sends nothing")
        await live.close()
        await rebuilt.close()
    }

    func testALocalTimeSendIsListedWhileItWaitsAndAStreamedSendHoldsAQuietUsersPush() async throws {
        stack = try await PushlineStack.start()
        let app = try await stack.createApp()
        try await stack.registerKF5([("u1", Tokens.fcm(1), "ANDROID")], app: app)
        try await stack.waitForDevices(1, app: app.mobileAppId)
        var utc = Calendar(identifier: .gregorian)
        utc.timeZone = TimeZone(identifier: "UTC")!
        let day = utc.dateComponents([.year, .month, .day], from: Date().addingTimeInterval(2 * 86_400))
        let local = String(format: "%04d-%02d-%02dT09:00", day.year!, day.month!, day.day!)
        // Quiet hours from an hour ago to two hours ahead (UTC, the app's zone): the push is in
        // them at whatever time of day the test runs.
        let hour = utc.component(.hour, from: Date())
        let quiet = String(format: "%02d:00-%02d:00", (hour + 23) % 24, (hour + 2) % 24)
        let settings = try await stack.call(.PUT, "/v1/apps/\(app.mobileAppId)/users/u1/settings", json: ["quietHours": quiet],
                                            token: app.apiToken)
        XCTAssertEqual(settings.status, 200, settings.text)
        let answer = try await stack.call(.POST, path(app), json: ["to": ["all": true], "title": "Matchday", "sendAtLocal": local],
                                          token: app.apiToken)
        XCTAssertEqual(answer.status, 202, answer.text)
        let delivery = try answer.wire(NotificationAPI.SendAccepted.self).deliveryId
        try await eventually("listed while it waits") {
            let list = try await self.stack.call(.GET, self.path(app), token: app.apiToken)
            return list.text.contains(delivery)
        }
        // An audience send (its devices read in pages) to a user in quiet hours: held.
        let later = try await stack.call(.POST, path(app), json: ["to": ["all": true], "title": "Now",
                                                                  "sendAt": RFC3339.string(from: Date().addingTimeInterval(2))], token: app.apiToken)
        let streamed = try XCTUnwrap(UUID(uuidString: try later.wire(NotificationAPI.SendAccepted.self).deliveryId))
        try await eventually("held by the user's quiet hours") { try await self.stats(streamed, app)?.held == 1 }
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
