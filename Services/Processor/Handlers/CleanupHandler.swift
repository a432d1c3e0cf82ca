import Contracts
import Projections

/// Removes the (app, user, token) device, or every device of the user when no token is given.
/// Removing nothing is not an error.
package struct CleanupHandler: CommandHandler {
    package func addNeeds(of c: DeviceCleanupRequested, to query: inout StateQuery) {
        query.appIds.insert(c.mobileAppId)
        // The user's devices: all go, or one of them (the app's count of users follows).
        query.userKeys.insert(UserKey(appId: c.mobileAppId, userId: c.userId))
        if let token = c.deviceToken { query.deviceKeys.insert(DeviceKey(appId: c.mobileAppId, deviceToken: token)) }
    }

    package func apply(_ c: DeviceCleanupRequested, _ context: CommandContext, to state: inout BatchState) -> HandlerResult {
        switch state.authorization(app: c.mobileAppId, part: context.part, org: c.orgId, tokenHash: c.apiTokenHash, scope: .client) {
        case .authorized: break
        case .invalid: return .rejected("invalid-api-token")
        // A server-only token: a device's route needs the client scope (docs/API.md#token-scopes).
        case .lacksScope: return .rejected("missing-client-scope")
        }
        guard c.identityVerified == true || !state.requiresIdentity(app: c.mobileAppId, part: context.part) else {
            return .rejected("user-identity-not-verified")
        }
        if let token = c.deviceToken {
            guard state.holds(token: token, part: context.part) else { return .rejected("another-part") }
            let key = DeviceKey(appId: c.mobileAppId, deviceToken: token)
            if state.devices[key]?.userId == c.userId { state.delete(key) }
        } else {
            // An app in parts gets this command in every part: each removes the devices it holds.
            for device in state.devices(of: UserKey(appId: c.mobileAppId, userId: c.userId), part: context.part) {
                state.delete(device.key)
            }
        }
        return .applied
    }
}
