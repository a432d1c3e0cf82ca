import Contracts
import Foundation
import OutboundRendering
import Projections
import XCTest
@testable import Processor
@testable import Handlers

/// The sender's reports, decided in memory: outcomes counted once per device (the last report
/// stays), dead tokens retired unless registered again after they died.
final class DeliveryResultHandlerTests: XCTestCase {
    let appId = UUID(), deliveryId = UUID()
    let at = Date(timeIntervalSince1970: 1_800_000_000)
    let handler = DeliveryResultHandler()

    private func state(registeredAt: Date? = nil, outcomes: [Int: DeliveryOutcome] = [:]) -> BatchState {
        var snapshot = StateSnapshot()
        snapshot.apps[AppPart(appId)] = AppRow(appId: appId, orgId: UUID(), name: "a", createdAt: at)
        snapshot.deliveries[DeliveryKey(appId: appId, deliveryId: deliveryId)] = DeliveryRow(appId: appId, deliveryId: deliveryId, kind: .alert, managed: false, tracking: false,
                                                      sent: 4, createdAt: at)
        if let registeredAt {
            let device = DeviceRow(appId: appId, deviceToken: token(1), userId: "u", platform: .ios, version: 1, updatedAt: registeredAt)
            snapshot.devices[device.key] = device
        }
        for (index, outcome) in outcomes {
            snapshot.outcomes[DeliveryOutcomeKey(appId: appId, deliveryId: deliveryId, messageIndex: index)] = outcome
            snapshot.deliveries[DeliveryKey(appId: appId, deliveryId: deliveryId)]?[count: outcome] += 1
        }
        return BatchState(snapshot)
    }

    private func token(_ index: Int) -> String { String(repeating: "\(index)a", count: 32) }

    private func report(_ index: Int, _ outcome: DeliveryOutcome, invalidSince: Date? = nil, delivery: UUID? = nil) -> DeliveryResultReported {
        let delivery = delivery ?? deliveryId
        return DeliveryResultReported(mobileAppId: appId, deviceToken: token(index), platform: .ios, deliveryId: delivery,
                                      messageId: MessageId.make(deliveryId: delivery, index: index), outcome: outcome,
                                      reason: outcome == .delivered ? nil : "r", status: outcome == .delivered ? 200 : 410,
                                      invalidSince: invalidSince)
    }

    private func counts(_ state: BatchState) -> [Int] {
        let d = state.delivery(deliveryId, app: appId, part: 0)!
        return [d.delivered, d.failed, d.unregistered, d.expired]
    }

    func testEachDeviceCountsOnceByItsLastReport() {
        var s = state(outcomes: [3: .failed])
        let context = CommandContext(at: at)
        for r in [report(0, .delivered), report(1, .failed), report(1, .delivered), report(0, .delivered), report(3, .delivered)] {
            XCTAssertEqual(handler.apply(r, context, to: &s), .applied)
        }
        // Device 3's failure was counted by an earlier batch: its new report moves it over.
        XCTAssertEqual(counts(s), [3, 0, 0, 0])
        s.finishOutcomes()
        let puts = s.mutations.compactMap { if case .putDelivery(let d) = $0 { d } else { nil } }
        XCTAssertEqual(puts.count, 1, "the delivery is written once per batch")
        XCTAssertEqual(puts.first?.delivered, 3)
        let rows = s.mutations.compactMap { if case .putDeliveryOutcome(let o) = $0 { o } else { nil } }
        XCTAssertEqual(rows.map(\.messageIndex), [0, 1, 1, 0, 3])
        XCTAssertEqual(rows.last, DeliveryOutcomeRow(appId: appId, deliveryId: deliveryId, messageIndex: 3, deviceToken: token(3),
                                                     outcome: .delivered, reason: nil, reportedAt: at))
    }

    func testAnExpiredPushIsCountedApartAndRetiresNothing() {
        var s = state(registeredAt: at.addingTimeInterval(-60), outcomes: [2: .failed])
        let context = CommandContext(at: at)
        // Device 1 expired; device 2's failure (an earlier batch) became an expiry; device 3
        // expired, then a repeat of its push was delivered: its last report counts.
        for r in [report(1, .expired), report(2, .expired), report(3, .expired), report(3, .delivered)] {
            XCTAssertEqual(handler.apply(r, context, to: &s), .applied)
        }
        XCTAssertEqual(counts(s), [1, 0, 0, 2])
        XCTAssertNotNil(s.devices[DeviceKey(appId: appId, deviceToken: token(1))], "an expired push says nothing of its token")
        s.finishOutcomes()
        let puts = s.mutations.compactMap { if case .putDelivery(let d) = $0 { d } else { nil } }
        XCTAssertEqual(puts.map(\.expired), [2])
    }

    func testALocalizedSendsOutcomesAreCountedPerLocaleToo() {
        var snapshot = StateSnapshot()
        snapshot.apps[AppPart(appId)] = AppRow(appId: appId, orgId: UUID(), name: "a", createdAt: at)
        snapshot.deliveries[DeliveryKey(appId: appId, deliveryId: deliveryId)] = DeliveryRow(
            appId: appId, deliveryId: deliveryId, kind: .alert, managed: false, tracking: false, sent: 4, createdAt: at,
            sentByLocale: ["pt-BR": 2, "default": 2])
        var s = BatchState(snapshot)
        let context = CommandContext(at: at)
        func localized(_ index: Int, _ outcome: DeliveryOutcome, _ locale: String?) -> DeliveryResultReported {
            var r = report(index, outcome)
            r.locale = locale
            return r
        }
        for r in [localized(0, .failed, "pt-BR"), localized(0, .delivered, "pt-BR"), localized(1, .unregistered, "pt-BR"),
                  localized(2, .delivered, "default"), localized(3, .delivered, "xx")] {
            XCTAssertEqual(handler.apply(r, context, to: &s), .applied)
        }
        let d = s.delivery(deliveryId, app: appId, part: 0)!
        XCTAssertEqual([d.delivered, d.failed, d.unregistered], [3, 0, 1])
        XCTAssertEqual(d.outcomesByLocale, ["pt-BR": OutcomeCounts(delivered: 1, unregistered: 1), "default": OutcomeCounts(delivered: 1)],
                       "each device by its last report, under the variant it got; a variant the send was not sent in is not one")

        // A send without localized text counts none per locale, whatever a report says.
        var plain = state()
        XCTAssertEqual(handler.apply(localized(0, .delivered, "pt-BR"), context, to: &plain), .applied)
        XCTAssertNil(plain.delivery(deliveryId, app: appId, part: 0)!.outcomesByLocale)
    }

    func testADeadTokenRetiresItsDeviceUnlessItRegisteredAfterItDied() {
        let key = DeviceKey(appId: appId, deviceToken: token(1))
        // Registered before the token died (APNs's timestamp): retired, its pending rows cleared.
        var s = state(registeredAt: at.addingTimeInterval(-60))
        XCTAssertEqual(handler.apply(report(1, .unregistered, invalidSince: at.addingTimeInterval(-10)), CommandContext(at: at), to: &s), .applied)
        XCTAssertNil(s.devices[key])
        XCTAssertTrue(s.mutations.contains(.deleteDevice(key)) && s.mutations.contains(.clearPending(key)))
        XCTAssertEqual(counts(s), [0, 0, 1, 0])
        // Registered again after the timestamp: kept, still counted.
        s = state(registeredAt: at.addingTimeInterval(-5))
        _ = handler.apply(report(1, .unregistered, invalidSince: at.addingTimeInterval(-10)), CommandContext(at: at), to: &s)
        XCTAssertNotNil(s.devices[key])
        XCTAssertFalse(s.mutations.contains(.deleteDevice(key)))
        XCTAssertEqual(counts(s), [0, 0, 1, 0])
        // No timestamp (FCM, BadDeviceToken): the report's time decides.
        s = state(registeredAt: at.addingTimeInterval(-5))
        _ = handler.apply(report(1, .unregistered), CommandContext(at: at), to: &s)
        XCTAssertNil(s.devices[key])
        s = state(registeredAt: at.addingTimeInterval(5))
        _ = handler.apply(report(1, .unregistered), CommandContext(at: at), to: &s)
        XCTAssertNotNil(s.devices[key])
        // Failures and deliveries never retire.
        s = state(registeredAt: at.addingTimeInterval(-60))
        _ = handler.apply(report(1, .failed), CommandContext(at: at), to: &s)
        XCTAssertNotNil(s.devices[key])
    }

    func testReportsOfUnknownAppsDeliveriesOrForeignMessageIdsAreRejectedButADeadTokenStillRetires() {
        var s = state(registeredAt: at.addingTimeInterval(-60))
        let context = CommandContext(at: at)
        var foreignApp = report(0, .delivered)
        foreignApp.mobileAppId = UUID()
        XCTAssertEqual(handler.apply(foreignApp, context, to: &s), .rejected("unknown-app"))
        XCTAssertEqual(handler.apply(report(0, .delivered, delivery: UUID()), context, to: &s), .rejected("unknown-delivery"))
        var foreignMessage = report(0, .delivered)
        foreignMessage.messageId = MessageId.make(deliveryId: UUID(), index: 0)
        XCTAssertEqual(handler.apply(foreignMessage, context, to: &s), .rejected("unknown-delivery"))
        XCTAssertEqual(handler.apply(report(9, .delivered), context, to: &s), .rejected("unknown-delivery"), "past the sent count")
        XCTAssertTrue(s.mutations.isEmpty)
        // A badge update's dead token: no delivery, the device still goes.
        var badge = report(1, .unregistered)
        badge.deliveryId = nil
        badge.messageId = MessageId.badgeUpdate(ackId: UUID())
        XCTAssertEqual(handler.apply(badge, context, to: &s), .applied)
        XCTAssertNil(s.devices[DeviceKey(appId: appId, deviceToken: token(1))])
        XCTAssertEqual(counts(s), [0, 0, 0, 0])
    }
}
