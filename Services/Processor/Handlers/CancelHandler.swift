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

/// Sets a user's own settings in this part (docs/API.md#quiet-hours): their quiet hours replace
/// the app's for every send after it in the log. The app part counts its users with quiet hours
/// of their own, so that a send to an app with none reads no user's settings.
package struct UserSettingsHandler: CommandHandler {
    package init() {}

    package func addNeeds(of c: UserSettingsChanged, to query: inout StateQuery) {
        query.appIds.insert(c.mobileAppId)
        query.userSettings.insert(UserKey(appId: c.mobileAppId, userId: c.userId))
    }

    package func apply(_ c: UserSettingsChanged, _ context: CommandContext, to state: inout BatchState) -> HandlerResult {
        guard var app = state.app(c.mobileAppId, part: context.part) else { return .rejected("unknown-app") }
        let user = UserKey(appId: c.mobileAppId, userId: c.userId)
        var row = state.settings(of: user, part: context.part) ?? UserSettingsRow(appId: c.mobileAppId, userId: c.userId, part: context.part)
        if let text = c.quietHours {
            // Canonical again; text no reader takes removes them rather than keeping a rule nobody set.
            let quiet = QuietHours(text)?.description
            if (row.quietHours == nil) != (quiet == nil) {
                app.quietUsers += quiet == nil ? -1 : 1
                state.upsert(app)
            }
            row.quietHours = quiet
        }
        state.record(row)
        return .applied
    }
}
