import Contracts
import Foundation
import Projections

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
