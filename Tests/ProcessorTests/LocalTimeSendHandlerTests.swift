import Contracts
import Foundation
import OutboundRendering
import Projections
import WireCodec
import XCTest
@testable import Processor
@testable import Handlers

/// Local-time sends and quiet hours, decided in memory: each device's push is sent, held until
/// its own time, dropped or expired; each wave of held pushes goes once, to the devices as they
/// are then; a cancel drops what is still held.
final class LocalTimeSendHandlerTests: XCTestCase {
    let appId = UUID()
    /// Devices in Tokyo (+9), Lisbon (+0 in December), the app's zone (São Paulo, −3) and New
    /// York (−5): 09:00 on 1 December is 00:00, 09:00, 12:00 and 14:00 UTC.
    let zones: [String?] = ["Asia/Tokyo", "Europe/Lisbon", nil, "America/New_York"]
    let handler = NotificationHandler()

    func utc(_ text: String) -> Date { try! Date(text, strategy: .iso8601) }
    var tokens: [String] { zones.indices.map { "tok-\($0)" } }

    private func state(quietHours: String? = nil, appZone: String? = "America/Sao_Paulo") -> BatchState {
        var snapshot = StateSnapshot()
        snapshot.apps[AppPart(appId)] = AppRow(appId: appId, orgId: UUID(), name: "a", createdAt: utc("2026-11-01T00:00:00Z"),
                                               timeZone: appZone, quietHours: quietHours)
        for (n, zone) in zones.enumerated() {
            let device = DeviceRow(appId: appId, deviceToken: tokens[n], userId: "u\(n)", platform: n % 2 == 0 ? .ios : .android,
                                   version: 1, updatedAt: utc("2026-11-01T00:00:00Z"), timeZone: zone)
            snapshot.devices[device.key] = device
        }
        return BatchState(snapshot)
    }

    private func send(local: String? = "2026-12-01T09:00", quiet: QuietHoursMode? = nil, priority: NotificationPriority? = nil,
                      timeToLive: Int? = nil, managed: Bool = false) -> NotificationRequested {
        NotificationRequested(deliveryId: UUID(), mobileAppId: appId, target: NotificationTarget(userIds: zones.indices.map { "u\($0)" }),
                              content: NotificationContent(title: "T", body: "B", priority: priority, timeToLive: timeToLive),
                              managed: managed, sendAtLocal: local.map { LocalDateTime($0)!.description }, quietHours: quiet)
    }

    private func delivery(_ c: NotificationRequested, _ s: BatchState) -> DeliveryRow? { s.delivery(c.deliveryId, app: appId, part: 0) }

    /// The firing a processor appends for the delivery's next wave: the kept command, with it.
    private func wave(of c: NotificationRequested, _ s: BatchState) throws -> NotificationRequested {
        let row = try XCTUnwrap(delivery(c, s))
        XCTAssertEqual(row.schedule, .sending)
        var fired = try WireJSON.decoder().decode(NotificationRequested.self, from: Data(try XCTUnwrap(row.scheduledCommand).utf8))
        XCTAssertEqual(fired, c, "the kept command is the send as it came")
        fired.firing = true
        fired.wave = row.sendAt
        return fired
    }

    private func summary(_ r: DeliveryRow) -> String {
        "sent=\(r.sent) held=\(r.held) dropped=\(r.dropped) cancelled=\(r.cancelled) expired=\(r.expired) \(r.schedule?.rawValue ?? "none")"
    }

    private func sent(_ s: BatchState, from: Int = 0) -> [String] { s.outbound[from...].map(\.deviceToken) }

    func testEachDeviceGetsALocalTimeSendAtItsOwnHourOnceWaveByWave() throws {
        var s = state()
        let c = send()
        // Applied after Tokyo's and Lisbon's 09:00: those go at once, the others wait for theirs.
        XCTAssertEqual(handler.apply(c, CommandContext(at: utc("2026-12-01T10:00:00Z")), to: &s), .applied)
        XCTAssertEqual(Set(sent(s)), [tokens[0], tokens[1]])
        var row = try XCTUnwrap(delivery(c, s))
        XCTAssertEqual(row.waves, [utc("2026-12-01T12:00:00Z"), utc("2026-12-01T14:00:00Z")], "São Paulo (the app's zone), then New York")
        XCTAssertEqual(summary(row), "sent=2 held=2 dropped=0 cancelled=0 expired=0 sending")
        XCTAssertEqual(row.sendAt, utc("2026-12-01T12:00:00Z"))
        XCTAssertEqual(row.sendAtLocal, "2026-12-01T09:00:00")

        let first = try wave(of: c, s)
        XCTAssertEqual(handler.apply(first, CommandContext(at: utc("2026-12-01T12:00:00.300Z")), to: &s), .applied)
        XCTAssertEqual(sent(s, from: 2), [tokens[2]])
        XCTAssertEqual(handler.apply(first, CommandContext(at: utc("2026-12-01T12:00:05Z")), to: &s), .rejected("not-waiting"),
                       "a wave fired twice goes once")
        XCTAssertEqual(s.outbound.count, 3)
        row = try XCTUnwrap(delivery(c, s))
        XCTAssertEqual(summary(row), "sent=3 held=1 dropped=0 cancelled=0 expired=0 sending")
        XCTAssertEqual(row.waves, [utc("2026-12-01T14:00:00Z")])

        XCTAssertEqual(handler.apply(try wave(of: c, s), CommandContext(at: utc("2026-12-01T14:00:00.200Z")), to: &s), .applied)
        XCTAssertEqual(sent(s, from: 3), [tokens[3]])
        row = try XCTUnwrap(delivery(c, s))
        XCTAssertEqual(summary(row), "sent=4 held=0 dropped=0 cancelled=0 expired=0 fired")
        XCTAssertEqual(row.waves, [])
        XCTAssertNil(row.scheduledCommand)
        // Each push has its own message id: the waves number on from the pushes before them.
        let indexes = s.outbound.compactMap { message -> Int? in
            if case .template(_, let index) = message.body { index } else { nil }
        }
        XCTAssertEqual(indexes, [0, 1, 2, 3])
    }

    func testALocalTimeSendAcceptedBeforeItsTimeAnywhereWaitsForItsFirstFiring() throws {
        var s = state()
        var c = send()
        c.sendAt = LocalDateTime("2026-12-01T09:00")!.earliestInstant
        XCTAssertEqual(handler.apply(c, CommandContext(at: utc("2026-11-29T12:00:00Z")), to: &s), .applied)
        let waiting = try XCTUnwrap(delivery(c, s))
        XCTAssertEqual(waiting.schedule, .waiting)
        XCTAssertEqual(waiting.sendAt, utc("2026-11-30T19:00:00Z"))
        XCTAssertTrue(s.outbound.isEmpty)
        var fired = try WireJSON.decoder().decode(NotificationRequested.self, from: Data(try XCTUnwrap(waiting.scheduledCommand).utf8))
        fired.firing = true
        XCTAssertEqual(handler.apply(fired, CommandContext(at: utc("2026-11-30T19:00:00.250Z")), to: &s), .applied)
        XCTAssertTrue(s.outbound.isEmpty, "09:00 is still ahead in every zone of the devices")
        XCTAssertEqual(delivery(c, s)?.held, 4)
        XCTAssertEqual(delivery(c, s)?.schedule, .sending)
    }

    func testAWaveSkipsADeviceThatWentOrChangedHandsMeanwhile() throws {
        var s = state()
        let c = send()
        XCTAssertEqual(handler.apply(c, CommandContext(at: utc("2026-11-30T20:00:00Z")), to: &s), .applied)
        XCTAssertTrue(s.outbound.isEmpty, "every zone's 09:00 is still ahead")
        XCTAssertEqual(delivery(c, s)?.held, 4)
        s.delete(DeviceKey(appId: appId, deviceToken: tokens[0]))
        XCTAssertEqual(handler.apply(try wave(of: c, s), CommandContext(at: utc("2026-12-01T00:00:01Z")), to: &s), .applied)
        XCTAssertTrue(s.outbound.isEmpty, "Tokyo's device was removed")
        var moved = try XCTUnwrap(s.devices[DeviceKey(appId: appId, deviceToken: tokens[1])])
        moved.userId = "someone-else"
        s.upsert(moved)
        XCTAssertEqual(handler.apply(try wave(of: c, s), CommandContext(at: utc("2026-12-01T09:00:01Z")), to: &s), .applied)
        XCTAssertTrue(s.outbound.isEmpty, "Lisbon's device now belongs to another user")
        XCTAssertEqual(delivery(c, s)?.held, 2)
    }

    func testACancelDropsThePushesStillHeldAndLaterWavesSendNothing() throws {
        var s = state()
        let c = send()
        XCTAssertEqual(handler.apply(c, CommandContext(at: utc("2026-12-01T10:00:00Z")), to: &s), .applied)
        let pending = try wave(of: c, s)
        let cancel = NotificationCancelled(mobileAppId: appId, deliveryId: c.deliveryId)
        XCTAssertEqual(CancelHandler().apply(cancel, CommandContext(at: utc("2026-12-01T11:00:00Z")), to: &s), .applied)
        let row = try XCTUnwrap(delivery(c, s))
        XCTAssertEqual(summary(row), "sent=2 held=0 dropped=0 cancelled=2 expired=0 cancelled")
        XCTAssertEqual(row.waves, [])
        XCTAssertTrue(s.heldPushes(of: row.key).isEmpty)
        XCTAssertEqual(handler.apply(pending, CommandContext(at: utc("2026-12-01T12:00:00Z")), to: &s), .rejected("not-waiting"))
        XCTAssertEqual(s.outbound.count, 2)
    }

    func testQuietHoursHoldAPushUntilTheyEndInEachDevicesZoneOrDropIt() throws {
        // 22:00-08:00: at 23:30 UTC it is 08:30 in Tokyo, 23:30 in Lisbon, 20:30 in São Paulo
        // and 18:30 in New York: only Lisbon's device is in its quiet hours, until 08:00 there.
        let at = utc("2026-12-01T23:30:00Z")
        var s = state(quietHours: "22:00-08:00")
        let held = send(local: nil)
        XCTAssertEqual(handler.apply(held, CommandContext(at: at), to: &s), .applied)
        XCTAssertEqual(Set(sent(s)), [tokens[0], tokens[2], tokens[3]])
        var row = try XCTUnwrap(delivery(held, s))
        XCTAssertEqual(summary(row), "sent=3 held=1 dropped=0 cancelled=0 expired=0 sending")
        XCTAssertEqual(row.waves, [utc("2026-12-02T08:00:00Z")])
        XCTAssertEqual(handler.apply(try wave(of: held, s), CommandContext(at: utc("2026-12-02T08:00:00.100Z")), to: &s), .applied)
        XCTAssertEqual(sent(s, from: 3), [tokens[1]])
        row = try XCTUnwrap(delivery(held, s))
        XCTAssertEqual(summary(row), "sent=4 held=0 dropped=0 cancelled=0 expired=0 fired")

        var d = state(quietHours: "22:00-08:00")
        let dropped = send(local: nil, quiet: .drop)
        XCTAssertEqual(handler.apply(dropped, CommandContext(at: at), to: &d), .applied)
        XCTAssertEqual(d.outbound.count, 3)
        row = try XCTUnwrap(delivery(dropped, d))
        XCTAssertEqual(summary(row), "sent=3 held=0 dropped=1 cancelled=0 expired=0 none")

        var c = state(quietHours: "22:00-08:00")
        let critical = send(local: nil, quiet: .drop, priority: .critical)
        XCTAssertEqual(handler.apply(critical, CommandContext(at: at), to: &c), .applied)
        XCTAssertEqual(c.outbound.count, 4, "a critical push ignores quiet hours")
    }

    func testALocalTimeThatFallsInQuietHoursIsHeldAgainUntilTheyEnd() throws {
        // 23:00 local is in 22:00-08:00 everywhere: each wave holds its device until 08:00 there.
        var s = state(quietHours: "22:00-08:00")
        let c = send(local: "2026-12-01T23:00")
        XCTAssertEqual(handler.apply(c, CommandContext(at: utc("2026-11-30T12:00:00Z")), to: &s), .applied)
        XCTAssertEqual(delivery(c, s)?.waves.first, utc("2026-12-01T14:00:00Z"), "Tokyo's 23:00")
        XCTAssertEqual(handler.apply(try wave(of: c, s), CommandContext(at: utc("2026-12-01T14:00:00Z")), to: &s), .applied)
        XCTAssertTrue(s.outbound.isEmpty)
        let row = try XCTUnwrap(delivery(c, s))
        XCTAssertEqual(row.held, 4, "held again")
        XCTAssertTrue(row.waves.contains(utc("2026-12-01T23:00:00Z")), "until Tokyo's 08:00")
        XCTAssertEqual(s.heldPushes(of: row.key).first { $0.deviceToken == tokens[0] }?.dueAt, utc("2026-12-01T14:00:00Z"),
                       "still due at its local time: its time to live counts from there")
    }

    func testAPushQuietHoursHeldGoesWhenTheyEndWhateverRunsThen() throws {
        // Held in Lisbon at 23:30 until 08:00; by then the app's hours changed to 07:00-09:00.
        var s = state(quietHours: "22:00-08:00")
        let c = send(local: nil)
        XCTAssertEqual(handler.apply(c, CommandContext(at: utc("2026-12-01T23:30:00Z")), to: &s), .applied)
        var app = try XCTUnwrap(s.app(appId, part: 0))
        app.quietHours = "07:00-09:00"
        s.upsert(app)
        XCTAssertEqual(handler.apply(try wave(of: c, s), CommandContext(at: utc("2026-12-02T08:00:00Z")), to: &s), .applied)
        XCTAssertEqual(sent(s, from: 3), [tokens[1]])
        XCTAssertEqual(delivery(c, s)?.schedule, .fired)
    }

    func testAHeldPushPastItsTimeToLiveExpiresAndAManagedOneKeepsItsBadge() throws {
        var s = state(quietHours: "22:00-08:00")
        let c = send(local: nil, timeToLive: 3600, managed: true)
        XCTAssertEqual(handler.apply(c, CommandContext(at: utc("2026-12-01T23:30:00Z")), to: &s), .applied)
        let row = try XCTUnwrap(delivery(c, s))
        XCTAssertEqual(s.heldPushes(of: row.key).map(\.badge), [1], "made pending when held")
        // 08:00 in Lisbon is 8.5 hours later: past the hour it had.
        XCTAssertEqual(handler.apply(try wave(of: c, s), CommandContext(at: utc("2026-12-02T08:00:00Z")), to: &s), .applied)
        XCTAssertEqual(s.outbound.count, 3)
        let after = try XCTUnwrap(delivery(c, s))
        XCTAssertEqual(summary(after), "sent=3 held=0 dropped=0 cancelled=0 expired=1 fired")
    }

    func testLocalTimesInEveryZoneAreTheWallClockThere() throws {
        let local = try XCTUnwrap(LocalDateTime("2026-03-08T02:30"))
        // New York skips 02:00-03:00 that night: read with the offset before, it is 07:30 UTC (03:30 EDT).
        XCTAssertEqual(local.instant(in: TimeZone(identifier: "America/New_York")!), utc("2026-03-08T07:30:00Z"))
        XCTAssertEqual(LocalDateTime("2026-11-01T01:30")!.instant(in: TimeZone(identifier: "America/New_York")!),
                       utc("2026-11-01T05:30:00Z"), "a repeated hour: its first occurrence")
        XCTAssertEqual(LocalDateTime("2026-12-01T09:00")!.instant(in: TimeZone(identifier: "Asia/Kathmandu")!), utc("2026-12-01T03:15:00Z"))
        XCTAssertEqual(LocalDateTime("2026-12-01T09:00")!.earliestInstant, utc("2026-11-30T19:00:00Z"))
        for bad in ["2026-02-30T09:00", "2026-12-01 09:00", "2026-12-01T24:00", "2026-12-01T09:00Z", "2026-12-01T09:00:00.5", ""] {
            XCTAssertNil(LocalDateTime(bad), bad)
        }
        XCTAssertEqual(LocalDateTime("2028-02-29T23:59:59")?.description, "2028-02-29T23:59:59")
        let quiet = try XCTUnwrap(QuietHours("22:00-08:00"))
        let lisbon = TimeZone(identifier: "Europe/Lisbon")!
        XCTAssertEqual(quiet.end(of: utc("2026-12-01T23:30:00Z"), in: lisbon), utc("2026-12-02T08:00:00Z"))
        XCTAssertEqual(quiet.end(of: utc("2026-12-02T07:59:00Z"), in: lisbon), utc("2026-12-02T08:00:00Z"))
        XCTAssertNil(quiet.end(of: utc("2026-12-02T08:00:00Z"), in: lisbon))
        XCTAssertNil(quiet.end(of: utc("2026-12-01T21:59:59Z"), in: lisbon))
        XCTAssertEqual(QuietHours("13:00-14:30")?.end(of: utc("2026-12-01T13:10:00Z"), in: lisbon), utc("2026-12-01T14:30:00Z"))
        for bad in ["22:00-22:00", "22:00", "24:00-08:00", "2200-0800", "22:00-08:0", "-"] { XCTAssertNil(QuietHours(bad), bad) }
    }
}
