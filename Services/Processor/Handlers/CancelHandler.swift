import Contracts
import Foundation
import Projections

/// Cancels a scheduled send that still waits in this part (docs/API.md#scheduled-sends): its
/// firing, if one comes later, finds it cancelled and sends nothing. A send some of whose pushes
/// are held (`sending`: a local-time send's later zones, quiet hours) is cancelled for those:
/// they are dropped and counted as cancelled, and what went out stays counted. A send that fired
/// in full, expired, was cancelled already or never came is left as it is.
package struct CancelHandler: CommandHandler {
    package init() {}

    package func addNeeds(of c: NotificationCancelled, to query: inout StateQuery) {
        query.appIds.insert(c.mobileAppId)
        query.deliveryIds.insert(c.deliveryId)
    }

    package func addNeeds(of c: NotificationCancelled, part: Int, to query: inout StateQuery) {
        addNeeds(of: c, to: &query)
        query.heldOf.insert(DeliveryKey(appId: c.mobileAppId, deliveryId: c.deliveryId, part: part))
    }

    package func apply(_ c: NotificationCancelled, _ context: CommandContext, to state: inout BatchState) -> HandlerResult {
        guard state.app(c.mobileAppId, part: context.part) != nil else { return .rejected("unknown-app") }
        guard var delivery = state.delivery(c.deliveryId, app: c.mobileAppId, part: context.part), delivery.schedule == .waiting || delivery.schedule == .sending else {
            return .rejected("not-waiting")
        }
        for row in state.heldPushes(of: delivery.key) {
            state.unhold(row.key)
            delivery.cancelled += 1
        }
        delivery.held = 0
        delivery.waves = []
        delivery.schedule = .cancelled
        delivery.scheduledCommand = nil
        state.record(delivery)
        return .applied
    }
}

