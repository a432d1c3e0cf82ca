import Contracts
import Foundation
import OutboundRendering
import Projections
import Synchronization

/// The sender's report of one push (docs/ARCHITECTURE.md#delivery): the device's outcome is
/// counted against its delivery, and a dead token retires its device — unless the device was
/// registered again after the provider found the token dead.
///
/// In event order a report comes after the send it reports on: the sender's records are
/// appended after the progress marks that let the processor apply the send, and count as no
/// earlier than them.
package struct DeliveryResultHandler: CommandHandler {
    /// The keys of keyed message ids, to read a keyed push's place in its delivery.
    package let messageIdKeys: MessageIdKeys
    /// The series of the deliveries reported on lately: a broadcast's reports all name one
    /// delivery, and making its series (a hash for each key) cost a tenth of the processor's time.
    private let recentSeries = RecentSeries()

    package init(messageIdKeys: MessageIdKeys = .none) {
        self.messageIdKeys = messageIdKeys
    }

    package func addNeeds(of c: DeliveryResultReported, to query: inout StateQuery) {
        query.appIds.insert(c.mobileAppId)
        // A dead token's device may go, with its user's other devices (the app's count of users follows).
        if c.outcome == .unregistered { query.deviceOwners.insert(DeviceKey(appId: c.mobileAppId, deviceToken: c.deviceToken)) }
        if let key = outcomeKey(c) {
            query.deliveryIds.insert(key.deliveryId)
            query.outcomeKeys.insert(key)
        }
    }

    package func apply(_ c: DeliveryResultReported, _ context: CommandContext, to state: inout BatchState) -> HandlerResult {
        guard state.app(c.mobileAppId, part: context.part) != nil else { return .rejected("unknown-app") }
        guard state.holds(token: c.deviceToken, part: context.part) else { return .rejected("another-part") }
        if c.outcome == .unregistered { retire(c, context, &state) }
        // A badge update belongs to no delivery: only its device is concerned.
        guard c.deliveryId != nil else { return .applied }
        guard let key = outcomeKey(c), let delivery = state.delivery(key.deliveryId, app: c.mobileAppId, part: context.part),
              delivery.sentTo(messageIndex: key.messageIndex)
        else { return c.outcome == .unregistered ? .applied : .rejected("unknown-delivery") }
        state.record(DeliveryOutcomeRow(appId: c.mobileAppId, deliveryId: key.deliveryId, messageIndex: key.messageIndex,
                                        deviceToken: c.deviceToken, outcome: c.outcome, reason: c.reason, reportedAt: context.at),
                     locale: c.locale)
        return .applied
    }

    /// Removes the device (and its pending notifications) unless a registration wrote it after
    /// the token was found dead: APNs's timestamp, else the report's time.
    private func retire(_ c: DeliveryResultReported, _ context: CommandContext, _ state: inout BatchState) {
        let key = DeviceKey(appId: c.mobileAppId, deviceToken: c.deviceToken)
        guard let device = state.devices[key], device.updatedAt <= (c.invalidSince ?? context.at) else { return }
        state.delete(key)
    }

    /// The device's place in its delivery, read from the message id the processor gave the push.
    /// The sender's report does not say which series made it: keyed under a key held, or
    /// unkeyed (only the sender writes these reports, so either is the processor's own).
    private func outcomeKey(_ c: DeliveryResultReported) -> DeliveryOutcomeKey? {
        guard let deliveryId = c.deliveryId else { return nil }
        let candidates = recentSeries.series(of: deliveryId) {
            messageIdKeys.candidates(for: deliveryId, keyed: true) + [MessageId.Series(deliveryId: deliveryId)]
        }
        guard let index = candidates.lazy.compactMap({ $0.index(of: c.messageId) }).first else { return nil }
        return DeliveryOutcomeKey(appId: c.mobileAppId, deliveryId: deliveryId, messageIndex: index)
    }
}

/// The candidate series of the last deliveries asked for. A delivery's series are a function of
/// its id and the keys held, so keeping them changes no decision.
private final class RecentSeries: Sendable {
    private static let capacity = 256
    private let byDelivery = Mutex<[UUID: [MessageId.Series]]>([:])

    func series(of deliveryId: UUID, make: () -> [MessageId.Series]) -> [MessageId.Series] {
        if let known = byDelivery.withLock({ $0[deliveryId] }) { return known }
        let made = make()
        byDelivery.withLock { table in
            if table.count >= Self.capacity { table.removeAll(keepingCapacity: true) }
            table[deliveryId] = made
        }
        return made
    }
}
