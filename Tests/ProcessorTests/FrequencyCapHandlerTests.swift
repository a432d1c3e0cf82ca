import Contracts
import Foundation
import OutboundRendering
import Projections
import WireCodec
import XCTest
@testable import Processor
@testable import Handlers

/// Frequency caps and users' own quiet hours, decided in memory: a user gets a send on all their
/// devices or on none, counted once per send; a send over a cap is counted `capped`; a send
/// applied again finds itself counted; a user's quiet hours replace the app's.
final class FrequencyCapHandlerTests: XCTestCase {
    let appId = UUID()
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)
    let handler = NotificationHandler()

    /// u0 has two devices, u1 one, all in UTC.
    private func state(caps: String? = "*:3/86400,marketing:2/86400", quietHours: String? = nil) -> BatchState {
        var snapshot = StateSnapshot()
        snapshot.apps[AppPart(appId)] = AppRow(appId: appId, orgId: UUID(), name: "a", createdAt: t0, quietHours: quietHours,
                                               frequencyCaps: caps)
        for (token, user) in [("t0a", "u0"), ("t0b", "u0"), ("t1", "u1")] {
            let device = DeviceRow(appId: appId, deviceToken: token, userId: user, platform: .ios, version: 1, updatedAt: t0)
            snapshot.devices[device.key] = device
        }
        return BatchState(snapshot)
    }

    private func send(_ users: [String], category: String? = nil, exempt: Bool? = nil, id: UUID = UUID(),
                      priority: NotificationPriority? = nil) -> NotificationRequested {
        NotificationRequested(deliveryId: id, mobileAppId: appId, target: NotificationTarget(userIds: users),
                              content: NotificationContent(title: "T", priority: priority), capCategory: category, capExempt: exempt)
    }

    private func apply(_ c: NotificationRequested, at seconds: Double, _ s: inout BatchState) -> (sent: Set<String>, capped: Int) {
        let before = s.outbound.count
        _ = handler.apply(c, CommandContext(at: t0.addingTimeInterval(seconds)), to: &s)
        return (Set(s.outbound[before...].map(\.deviceToken)), s.delivery(c.deliveryId, app: appId, part: 0)?.capped ?? -1)
    }

    func testACategoryCapAndAnOverallCapStopAUsersPushesOnEveryDeviceOnceReached() {
        var s = state()
        XCTAssertEqual(apply(send(["u0"], category: "marketing"), at: 0, &s).sent, ["t0a", "t0b"], "one push for the user, on both devices")
        XCTAssertEqual(apply(send(["u0"], category: "marketing"), at: 60, &s).sent, ["t0a", "t0b"])
        let third = apply(send(["u0", "u1"], category: "marketing"), at: 120, &s)
        XCTAssertEqual(third.sent, ["t1"], "u0 had 2 marketing pushes in a day; u1 none")
        XCTAssertEqual(third.capped, 2, "both of u0's devices")
        XCTAssertEqual(apply(send(["u0"]), at: 180, &s).sent, ["t0a", "t0b"], "a push of no category: the overall cap (3) still allows it")
        XCTAssertEqual(apply(send(["u0"], category: "news"), at: 240, &s).capped, 2, "every push counts for the overall cap")
        XCTAssertEqual(apply(send(["u0"], exempt: true), at: 300, &s).sent, ["t0a", "t0b"], "an exempt send goes, and is not counted")
        XCTAssertEqual(apply(send(["u0"], category: "marketing"), at: 86_400 + 1, &s).sent, ["t0a", "t0b"],
                       "a day after the first, it left the window")
        let row = s.settings(of: UserKey(appId: appId, userId: "u0"), part: 0)
        XCTAssertEqual(CappedPushes(row?.capped).entries.count, 3, "pushes older than the longest window are forgotten")
    }

    /// A send to an audience is counted once for the app part, with the users it reached, and
    /// never on their rows; the users it reached are capped by it, the others are not.
    func testASendToAnAudienceIsCountedOnceWithTheUsersItReachedAndCapsOnlyThem() throws {
        var s = state(caps: "*:2/3600")
        s.upsert(DeviceRow(appId: appId, deviceToken: "t2", userId: "u2", platform: .ios, version: 1, updatedAt: t0, tags: ["vip"]))
        var vip = send([], id: UUID())
        vip.target = NotificationTarget(audience: "tag:vip")
        var all = send([], id: UUID())
        all.target = NotificationTarget(audience: "all")
        XCTAssertEqual(apply(vip, at: 0, &s).sent, ["t2"])
        XCTAssertEqual(apply(all, at: 60, &s).sent, ["t0a", "t0b", "t1", "t2"])
        for user in ["u0", "u1", "u2"] {
            XCTAssertNil(s.settings(of: UserKey(appId: appId, userId: user), part: 0), "no user's row: \(user)")
        }
        let app = try XCTUnwrap(s.app(appId, part: 0))
        XCTAssertEqual(CappedPushes(app.countedSends).entries.count, 2, "two counted sends on the app")
        XCTAssertEqual(app.countedUsers, 0)
        let counted = s.mutations.compactMap { mutation -> CountedSendRow? in
            if case .putCountedSend(let row) = mutation { return row } else { return nil }
        }
        XCTAssertEqual(counted.map(\.users), [[UserDigest.of("u2")], ["u0", "u1", "u2"].map(UserDigest.of).sorted()],
                       "each with the users it reached, sorted")
        XCTAssertEqual(counted.map(\.delivery), [vip, all].map { String($0.deliveryId.uuidString.lowercased().filter { $0 != "-" }.prefix(16)) },
                       "named by the first 16 hex digits of their delivery ids")
        let third = apply(send(["u0", "u1", "u2"]), at: 120, &s)
        XCTAssertEqual(third.sent, ["t0a", "t0b", "t1"], "u2 got both sends to an audience; u0 and u1 one")
        XCTAssertEqual(third.capped, 1)
        XCTAssertEqual(s.app(appId, part: 0)?.countedUsers, 2, "u0 and u1 counted on their own rows")
        var again = send([], id: UUID())
        again.target = NotificationTarget(audience: "all")
        let fourth = apply(again, at: 180, &s)
        XCTAssertEqual(fourth.sent, [], "every user has two pushes in the hour")
        XCTAssertEqual(fourth.capped, 4)
        // An hour after the first, it is forgotten, and so is its row.
        var later = send([], id: UUID())
        later.target = NotificationTarget(audience: "tag:vip")
        XCTAssertEqual(apply(later, at: 3_600 + 1, &s).sent, ["t2"], "u2's first push left the window")
        let forgotten = s.mutations.compactMap { mutation -> CountedSendKey? in
            if case .deleteCountedSend(let key) = mutation { return key } else { return nil }
        }
        XCTAssertEqual(forgotten.map(\.delivery), [counted[0].delivery])
    }

    func testASendAppliedAgainFindsItselfCountedAndDecidesAsItDid() {
        var s = state(caps: "*:1/3600")
        let id = UUID()
        XCTAssertEqual(apply(send(["u0"], id: id), at: 0, &s).sent, ["t0a", "t0b"])
        // The same send applied again to the state its first application left (a crash before
        // the offset's commit): its own count does not stop it.
        let counted = try! XCTUnwrap(s.settings(of: UserKey(appId: appId, userId: "u0"), part: 0))
        var again = state(caps: "*:1/3600")
        again.record(counted)
        XCTAssertEqual(apply(send(["u0"], id: id), at: 0, &again).sent, ["t0a", "t0b"])
        XCTAssertEqual(again.settings(of: UserKey(appId: appId, userId: "u0"), part: 0), counted, "and counts nothing more")
        XCTAssertEqual(apply(send(["u0"]), at: 10, &again).capped, 2, "another send is over the cap")
    }

    func testAUsersOwnQuietHoursReplaceTheAppsAndACriticalPushIgnoresThem() throws {
        var s = state(caps: nil, quietHours: "22:00-08:00")
        let settings = UserSettingsHandler()
        XCTAssertEqual(settings.apply(UserSettingsChanged(mobileAppId: appId, userId: "u0", quietHours: "12:00-13:00"),
                                      CommandContext(at: t0), to: &s), .applied)
        XCTAssertEqual(s.app(appId, part: 0)?.quietUsers, 1)
        // 2027-01-15T12:30Z: inside u0's own hours, outside the app's (u1's).
        let noon = try Date("2027-01-15T12:30:00Z", strategy: .iso8601).timeIntervalSince(t0)
        let c = send(["u0", "u1"])
        XCTAssertEqual(apply(c, at: noon, &s).sent, ["t1"])
        XCTAssertEqual(s.delivery(c.deliveryId, app: appId, part: 0)?.waves, [try Date("2027-01-15T13:00:00Z", strategy: .iso8601)])
        XCTAssertEqual(apply(send(["u0", "u1"], priority: .critical), at: noon, &s).sent, ["t0a", "t0b", "t1"])
        // Removed: the app's apply again, and the count follows.
        XCTAssertEqual(settings.apply(UserSettingsChanged(mobileAppId: appId, userId: "u0", quietHours: ""), CommandContext(at: t0), to: &s),
                       .applied)
        XCTAssertEqual(s.app(appId, part: 0)?.quietUsers, 0)
        XCTAssertNil(s.settings(of: UserKey(appId: appId, userId: "u0"), part: 0)?.quietHours)
        XCTAssertEqual(apply(send(["u0"]), at: noon, &s).sent, ["t0a", "t0b"])
    }
}
