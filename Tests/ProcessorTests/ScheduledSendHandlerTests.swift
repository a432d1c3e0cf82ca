import Contracts
import Foundation
import OutboundRendering
import Projections
import WireCodec
import XCTest
@testable import Processor
@testable import Handlers

/// Scheduled sends, decided in memory: a send with a later time is kept, its firing sends it
/// once, a cancel before the firing wins, and a firing past the send's time to live sends nothing.
final class ScheduledSendHandlerTests: XCTestCase {
    let appId = UUID()
    let at = Date(timeIntervalSince1970: 1_800_000_000.123)
    let tokens = [String(repeating: "a1", count: 32), String(repeating: "b2", count: 32)]
    let handler = NotificationHandler()

    private func state() -> BatchState {
        var snapshot = StateSnapshot()
        snapshot.apps[AppPart(appId)] = AppRow(appId: appId, orgId: UUID(), name: "a", createdAt: at)
        for token in tokens {
            let device = DeviceRow(appId: appId, deviceToken: token, userId: "u1", platform: .ios, version: 1, updatedAt: at)
            snapshot.devices[device.key] = device
        }
        return BatchState(snapshot)
    }

    private func send(in seconds: Double, timeToLive: Int? = nil, key: String? = nil) -> NotificationRequested {
        NotificationRequested(deliveryId: UUID(), mobileAppId: appId, target: NotificationTarget(userIds: ["u1"]),
                              content: NotificationContent(title: "T", body: "B", timeToLive: timeToLive), idempotencyKey: key,
                              requestHash: key.map { _ in "hash" }, sendAt: at.addingTimeInterval(seconds))
    }

    private func delivery(_ c: NotificationRequested, _ s: BatchState) -> DeliveryRow? {
        s.delivery(c.deliveryId, app: appId, part: 0)
    }

    /// The firing a processor appends: the kept command, read back, marked as the firing.
    private func firing(of c: NotificationRequested, _ s: BatchState) throws -> NotificationRequested {
        let kept = try XCTUnwrap(delivery(c, s)?.scheduledCommand)
        var fired = try WireJSON.decoder().decode(NotificationRequested.self, from: Data(kept.utf8))
        XCTAssertEqual(fired, c, "the kept command is the send as it came")
        fired.firing = true
        return fired
    }

    func testALaterSendWaitsAndItsFiringSendsItOnce() throws {
        var s = state()
        let c = send(in: 3600)
        XCTAssertEqual(handler.apply(c, CommandContext(at: at), to: &s), .applied)
        XCTAssertTrue(s.outbound.isEmpty, "nothing goes before its time")
        let waiting = try XCTUnwrap(delivery(c, s))
        XCTAssertEqual(waiting.schedule, .waiting)
        XCTAssertEqual(waiting.sendAt, c.sendAt)
        XCTAssertEqual(waiting.sent, 0)

        let fireAt = at.addingTimeInterval(3600.4)
        let fired = try firing(of: c, s)
        XCTAssertEqual(handler.apply(fired, CommandContext(at: fireAt), to: &s), .applied)
        XCTAssertEqual(Set(s.outbound.map(\.deviceToken)), Set(tokens))
        let row = try XCTUnwrap(delivery(c, s))
        XCTAssertEqual(row.schedule, .fired)
        XCTAssertEqual(row.sent, 2)
        XCTAssertEqual(row.createdAt, at, "the delivery dates from the send")
        XCTAssertEqual(row.sendAt, c.sendAt)
        XCTAssertNil(row.scheduledCommand)

        // A second firing (two processors, or one appended again) and the send copied: nothing more.
        XCTAssertEqual(handler.apply(fired, CommandContext(at: fireAt.addingTimeInterval(1)), to: &s), .rejected("not-waiting"))
        XCTAssertEqual(handler.apply(c, CommandContext(at: fireAt.addingTimeInterval(2)), to: &s), .rejected("duplicate-delivery"))
        XCTAssertEqual(s.outbound.count, 2)
    }

    func testACancelBeforeTheFiringWinsAndAfterItChangesNothing() throws {
        var s = state()
        let c = send(in: 60)
        _ = handler.apply(c, CommandContext(at: at), to: &s)
        let fired = try firing(of: c, s)
        let cancel = NotificationCancelled(mobileAppId: appId, deliveryId: c.deliveryId)
        XCTAssertEqual(CancelHandler().apply(cancel, CommandContext(at: at.addingTimeInterval(10)), to: &s), .applied)
        XCTAssertEqual(delivery(c, s)?.schedule, .cancelled)
        XCTAssertNil(delivery(c, s)?.scheduledCommand)
        XCTAssertEqual(handler.apply(fired, CommandContext(at: at.addingTimeInterval(60)), to: &s), .rejected("not-waiting"))
        XCTAssertTrue(s.outbound.isEmpty)

        var other = state()
        let d = send(in: 60)
        _ = handler.apply(d, CommandContext(at: at), to: &other)
        XCTAssertEqual(handler.apply(try firing(of: d, other), CommandContext(at: at.addingTimeInterval(60)), to: &other), .applied)
        let late = NotificationCancelled(mobileAppId: appId, deliveryId: d.deliveryId)
        XCTAssertEqual(CancelHandler().apply(late, CommandContext(at: at.addingTimeInterval(61)), to: &other), .rejected("not-waiting"))
        XCTAssertEqual(delivery(d, other)?.schedule, .fired)
        XCTAssertEqual(CancelHandler().apply(NotificationCancelled(mobileAppId: appId, deliveryId: UUID()), CommandContext(at: at), to: &other),
                       .rejected("not-waiting"))
    }

    func testAFiringPastTheSendsTimeToLiveSendsNothing() throws {
        var s = state()
        let c = send(in: 60, timeToLive: 30)
        _ = handler.apply(c, CommandContext(at: at), to: &s)
        let fired = try firing(of: c, s)
        // The processors were down: the firing came 31 s after the send's time.
        XCTAssertEqual(handler.apply(fired, CommandContext(at: at.addingTimeInterval(91)), to: &s), .applied)
        XCTAssertTrue(s.outbound.isEmpty, "never sent late")
        XCTAssertEqual(delivery(c, s)?.schedule, .expired)
        XCTAssertNil(delivery(c, s)?.scheduledCommand)

        var onTime = state()
        let d = send(in: 60, timeToLive: 30)
        _ = handler.apply(d, CommandContext(at: at), to: &onTime)
        XCTAssertEqual(handler.apply(try firing(of: d, onTime), CommandContext(at: at.addingTimeInterval(90)), to: &onTime), .applied)
        XCTAssertEqual(onTime.outbound.count, 2, "within its time to live")
    }

    func testAFiringOfNothingWaitingAndASendWhoseTimeHasComeAreNotKept() {
        var s = state()
        var stray = send(in: 60)
        stray.firing = true
        XCTAssertEqual(handler.apply(stray, CommandContext(at: at.addingTimeInterval(60)), to: &s), .rejected("not-waiting"))
        XCTAssertNil(delivery(stray, s))
        // A time not after the send's own: sent as it is applied.
        let now = send(in: 0)
        XCTAssertEqual(handler.apply(now, CommandContext(at: at), to: &s), .applied)
        XCTAssertEqual(s.outbound.count, 2)
        XCTAssertNil(delivery(now, s)?.schedule)
    }

    func testARepeatOfAWaitingKeyedSendIsCountedAndTheFiringKeepsTheCount() throws {
        var s = state()
        let c = send(in: 60, key: "k")
        _ = handler.apply(c, CommandContext(at: at), to: &s)
        XCTAssertEqual(handler.apply(c, CommandContext(at: at.addingTimeInterval(1)), to: &s), .rejected("idempotent-repeat"))
        XCTAssertEqual(delivery(c, s)?.duplicates, 1)
        XCTAssertEqual(delivery(c, s)?.schedule, .waiting, "a repeat leaves it waiting")
        XCTAssertEqual(handler.apply(try firing(of: c, s), CommandContext(at: at.addingTimeInterval(60)), to: &s), .applied)
        XCTAssertEqual(delivery(c, s)?.duplicates, 1)
        XCTAssertEqual(delivery(c, s)?.schedule, .fired)
    }

    func testOnlyTheFiringOfAnAudienceSendIsReadInPages() {
        var c = send(in: 60)
        c.target = NotificationTarget(audience: "all")
        XCTAssertFalse(NotificationHandler.streams(c), "kept in its batch: nothing is read")
        c.firing = true
        XCTAssertTrue(NotificationHandler.streams(c))
    }
}
