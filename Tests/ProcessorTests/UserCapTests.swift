import Contracts
import Foundation
import Logging
import OutboundRendering
import Projections
import ProjectionStores
import WireCodec
import XCTest
@testable import Processor
@testable import Handlers

/// An app keeps at most `maxUsersPerApp` users (a user is kept while it has a device): a
/// registration that would add one more fails with `TooManyUsers`, and users who lose their last
/// device make room again. Through the real applier and SQLite, whatever the batches.
final class UserCapTests: ApplierTestCase {
    let appId = UUID(), org = UUID(), tokenHash = ApiTokens.hash("t")
    let rules = DecisionRules(maxUsersPerApp: 2)

    private func token(_ n: Int) -> String { String(format: "%064x", n) }

    private func register(_ n: Int, _ user: String, id: UUID = UUID()) -> DeviceRegistrationRequested {
        DeviceRegistrationRequested(registrationRequestId: id, orgId: org, mobileAppId: appId, userId: user, platform: .ios,
                                    deviceToken: token(n), apiTokenHash: tokenHash, trackStatus: true, callback: nil)
    }

    private func cleanup(_ user: String, _ n: Int? = nil) -> DeviceCleanupRequested {
        DeviceCleanupRequested(orgId: org, mobileAppId: appId, userId: user, deviceToken: n.map(token), apiTokenHash: tokenHash)
    }

    func testARegistrationOfOneUserTooManyFailsUntilAUserLeaves() async throws {
        let refused = UUID(), admitted = UUID(), moved = UUID()
        let commands: [any Command] = [
            AppCreated(orgId: org, mobileAppId: appId, name: "a", tokenId: UUID(), tokenHash: tokenHash),
            register(1, "u1"), register(2, "u2"),
            register(3, "u3", id: refused),
            register(4, "u1"),
            cleanup("u2"),
            register(3, "u3", id: admitted),
            // Device 1 moves to a third user while u1 keeps device 4: still one too many.
            register(1, "u5", id: moved),
        ]
        let records = try commands.enumerated().map { n, command in
            try record(command, partition: 0, offset: Int64(n), at: at.addingTimeInterval(Double(n)))
        }
        let (store, _) = try await apply([records], name: "cap.sqlite", rules: rules)
        let statuses = try await store.registrationStatuses(app: appId, requestIds: [refused, admitted, moved])
        XCTAssertEqual(statuses[refused]?.failureReason, .TooManyUsers, "a third user past a cap of two")
        XCTAssertEqual(statuses[admitted]?.status, .Success, "the user who left its last device made room")
        XCTAssertEqual(statuses[moved]?.failureReason, .TooManyUsers)
        let devices = try await store.devices(app: appId, user: "u1")
        XCTAssertEqual(devices.map(\.deviceToken), [token(1), token(4)], "a known user's further device is admitted at the cap")
        let users = try await store.app(appId)?.users
        XCTAssertEqual(users, 2)
    }

    /// Devices leaving by every way (a cleanup of one device, a device changing hands, a dead
    /// token reported by the sender) keep the count exact, in any batches.
    func testTheCountOfUsersFollowsDevicesWhateverTheBatches() async throws {
        let send = NotificationRequested(deliveryId: UUID(), mobileAppId: appId, target: NotificationTarget(userIds: ["u3"]),
                                         content: NotificationContent(text: "hi"))
        let commands: [any Command] = [
            AppCreated(orgId: org, mobileAppId: appId, name: "a", tokenId: UUID(), tokenHash: tokenHash),
            register(1, "u1"), register(2, "u2"), register(5, "u2"),
            cleanup("u1", 1),
            register(2, "u3"),
            send,
            DeliveryResultReported(mobileAppId: appId, deviceToken: token(2), platform: .ios, deliveryId: send.deliveryId,
                                   messageId: MessageId.make(deliveryId: send.deliveryId, index: 0), outcome: .unregistered),
            register(3, "u4"),
            register(6, "u6"),
        ]
        let records = try commands.enumerated().map { n, command in
            try record(command, partition: 0, offset: Int64(n), at: at.addingTimeInterval(Double(n)))
        }
        var dumps: [String] = []
        for (name, batches) in [("one", [records]), ("each", records.map { [$0] }),
                                ("mixed", [Array(records[..<3]), Array(records[3..<6]), Array(records[6...])])] {
            let (store, _) = try await apply(batches, name: "\(name).sqlite", rules: rules)
            // u1 left; u2 keeps device 5 when device 2 moves to u3; u3 loses it to the sender's
            // report; u4 comes in its place; u6 is one too many.
            let users = try await store.app(appId)?.users
            XCTAssertEqual(users, 2, name)
            let refused = try await store.devices(app: appId, user: "u6")
            XCTAssertEqual(refused, [], name)
            dumps.append(try await store.dump())
        }
        XCTAssertEqual(dumps[1], dumps[0])
        XCTAssertEqual(dumps[2], dumps[0])
    }
}
