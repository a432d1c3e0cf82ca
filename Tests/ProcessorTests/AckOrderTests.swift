import Contracts
import Foundation
import Logging
import Projections
import WireCodec
import XCTest
@testable import Processor
@testable import Handlers

/// An ack counts only for a notification pending on its device (docs/API.md#managed-notifications-and-acknowledgements).
/// A send and its acks are commands of one app, in one event order; a device learns a
/// notification's id from its push, so an ack the device could have made follows its
/// notification. Through the real applier and a real SQLite store: an ack after its
/// notification leaves nothing pending; one before it is refused, whatever the batches, and the
/// notification stays pending.
final class AckOrderTests: ApplierTestCase {
    let appId = UUID(), org = UUID()
    let token = String(repeating: "c3", count: 32)

    private func run(_ batches: [[ConsumedRecord]], name: String) async throws -> (dump: String, pending: Int, outbound: [OutboundMessage]) {
        let (store, outbound) = try await apply(batches, name: name)
        let pending = try await store.pendingNotifications(DeviceKey(appId: appId, deviceToken: token)).count
        return (try await store.dump(), pending, outbound)
    }

    func testAnAckCountsAfterItsNotificationAndIsRefusedBeforeIt() async throws {
        let tokenHash = ApiTokens.hash("t")
        let setup = [
            try record(AppCreated(orgId: org, mobileAppId: appId, name: "a", tokenId: UUID(), tokenHash: tokenHash), partition: 0, offset: 0),
            try record(DeviceRegistrationRequested(registrationRequestId: UUID(), orgId: org, mobileAppId: appId, userId: "u", platform: .ios,
                                                   deviceToken: token, apiTokenHash: tokenHash, trackStatus: false, callback: nil),
                       partition: 0, offset: 0),
        ]
        let send = NotificationRequested(deliveryId: UUID(), mobileAppId: appId, target: NotificationTarget(userIds: ["u"]),
                                         content: NotificationContent(text: "hello"), managed: true)
        let notification = try record(send, partition: 1, offset: 0)
        let ack = try record(NotificationAcknowledged(mobileAppId: appId, notificationId: send.notificationId, deviceToken: token), partition: 2, offset: 0)

        let sendFirst = try await run([setup, [notification]], name: "probe.sqlite")
        XCTAssertEqual(sendFirst.pending, 1, "sanity: the managed notification is pending before its ack")

        let inOrder = try await run([setup, [notification], [ack]], name: "in-order.sqlite")
        XCTAssertEqual(inOrder.pending, 0)
        XCTAssertEqual(inOrder.outbound.map(\.kind), [.push, .badgeUpdate])
        let lastBadge = try JSONDecoder().decode(OutboundRecordView.self, from: inOrder.outbound[1].value)
        XCTAssertEqual(lastBadge.payload, try JSONValue.parse(Data(#"{"aps":{"badge":0},"badge":"0"}"#.utf8)))
        let inOneBatch = try await run([setup, [notification, ack]], name: "in-one-batch.sqlite")
        XCTAssertEqual(inOneBatch.dump, inOrder.dump)

        let ackFirst = try await run([setup, [ack], [notification]], name: "ack-first.sqlite")
        let ackFirstOneBatch = try await run([setup, [ack, notification]], name: "ack-first-one-batch.sqlite")
        XCTAssertEqual(ackFirst.pending, 1, "an ack before its notification does not count")
        XCTAssertEqual(ackFirst.outbound.map(\.kind), [.push], "and sends no badge update")
        XCTAssertEqual(ackFirst.dump, sendFirst.dump, "and stores nothing")
        XCTAssertEqual(ackFirstOneBatch.dump, sendFirst.dump)
    }
}
