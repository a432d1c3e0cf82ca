import Contracts
import Foundation
import Projections

/// Cancels a scheduled send that still waits in this part (docs/API.md#scheduled-sends): its
/// firing, if one comes later, finds it cancelled and sends nothing. A send that fired, expired,
/// was cancelled already or never came is left as it is.
package struct CancelHandler: CommandHandler {
    package init() {}

    package func addNeeds(of c: NotificationCancelled, to query: inout StateQuery) {
        query.appIds.insert(c.mobileAppId)
        query.deliveryIds.insert(c.deliveryId)
    }

    package func apply(_ c: NotificationCancelled, _ context: CommandContext, to state: inout BatchState) -> HandlerResult {
        guard state.app(c.mobileAppId, part: context.part) != nil else { return .rejected("unknown-app") }
        guard var delivery = state.delivery(c.deliveryId, app: c.mobileAppId, part: context.part), delivery.schedule == .waiting else {
            return .rejected("not-waiting")
        }
        delivery.schedule = .cancelled
        delivery.scheduledCommand = nil
        state.record(delivery)
        return .applied
    }
}
