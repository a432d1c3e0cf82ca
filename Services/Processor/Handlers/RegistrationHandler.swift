import Contracts
import Foundation
import Projections
import WireCodec

/// Decides the outcome of a device registration (docs/API.md#registration-outcomes) and records its
/// effects: the device row, the tracked status, and the status webhook as an outbox job.
package struct RegistrationHandler: CommandHandler {
    package typealias Reason = DeviceRegistrationAPI.FailureReason

    package let verifier: any DeviceTokenVerifier
    /// The most devices one user of an app keeps (`PUSHLINE_MAX_DEVICES_PER_USER`).
    package let maxDevicesPerUser: Int
    /// The most users each part of an app keeps (`DecisionRules.maxUsersPerPart`).
    package let maxUsersPerPart: Int
    private let encoder = WireJSON.encoder()

    package init(verifier: any DeviceTokenVerifier, maxDevicesPerUser: Int = DecisionRules.default.maxDevicesPerUser,
                 maxUsersPerPart: Int = DecisionRules.default.maxUsersPerPart) {
        self.verifier = verifier
        self.maxDevicesPerUser = max(1, maxDevicesPerUser)
        self.maxUsersPerPart = max(1, maxUsersPerPart)
    }

    package func addNeeds(of c: DeviceRegistrationRequested, to query: inout StateQuery) {
        query.appIds.insert(c.mobileAppId)
        // The device with every device of its present user (whom it may leave), and the new
        // user's devices: for the per-user cap and the app's count of users.
        query.deviceOwners.insert(DeviceKey(appId: c.mobileAppId, deviceToken: c.deviceToken))
        query.userKeys.insert(UserKey(appId: c.mobileAppId, userId: c.userId))
    }

    /// With `context.storeFailed` (the store rejected this registration's device write after
    /// retries) the outcome is `FailedToStoreDevice` and the device row is left as it was.
    package func apply(_ c: DeviceRegistrationRequested, _ context: CommandContext, to state: inout BatchState) -> HandlerResult {
        let at = context.at
        // Forged or stale tokens get no history and no webhook: no work for an attacker
        // (docs/API.md#forged-requests).
        switch state.authorization(app: c.mobileAppId, part: context.part, org: c.orgId, tokenHash: c.apiTokenHash, scope: .client) {
        case .authorized: break
        case .invalid: return .rejected("invalid-api-token")
        // A server-only token: a device's route needs the client scope (docs/API.md#token-scopes).
        case .lacksScope: return .rejected("missing-client-scope")
        }
        // Ingest refuses a binding without an assertion once the app requires them; one written
        // before the app did, and applied after, is refused here (docs/API.md#verified-user-identity).
        guard c.identityVerified == true || !state.requiresIdentity(app: c.mobileAppId, part: context.part) else {
            return .rejected("user-identity-not-verified")
        }
        guard state.holds(token: c.deviceToken, part: context.part) else { return .rejected("another-part") }
        let failure = context.storeFailed ? .FailedToStoreDevice : decide(c, part: context.part, state: state)
        if failure == nil {
            let key = DeviceKey(appId: c.mobileAppId, deviceToken: c.deviceToken)
            var row = Self.registered(c, over: state.devices[key])
            row.updatedAt = at
            state.upsert(row)
            retireOldestDevices(of: UserKey(appId: c.mobileAppId, userId: c.userId), part: context.part, keeping: key, in: &state)
        }
        let status: DeviceRegistrationAPI.Status = failure == nil ? .Success : .Failed
        if c.trackStatus {
            state.record(RegistrationStatusRow(requestId: c.registrationRequestId, appId: c.mobileAppId,
                                               status: status, failureReason: failure, decidedAt: at, part: context.part))
        }
        // The app's webhook hosts as the log has them now: the list may have changed since ingest
        // admitted the request (docs/API.md#webhook-hosts).
        if let callback = c.callback, let app = state.app(c.mobileAppId, part: context.part), Self.sendsWebhook(after: failure),
           WebhookHosts.allows(callback.url, hosts: app.webhookHosts) {
            state.enqueue(statusWebhook(for: c, callback: callback, status: status, failure: failure, retries: app.webhookRetries, at: at))
        }
        return failure.map { .rejected($0.rawValue) } ?? .applied
    }

    /// A user keeps at most `maxDevicesPerUser` devices: past it, the devices registered longest
    /// ago (by the time of the command that last registered them, then by token) are retired
    /// like a cleanup, never the one just registered. Decided from command times only, so a
    /// replay retires the same devices; apps change devices (reinstalls get new tokens), and the
    /// newest are the ones that still receive pushes. In an app in parts, each part keeps its
    /// own devices of the user within the cap (docs/ARCHITECTURE.md#one-app-in-parts).
    private func retireOldestDevices(of user: UserKey, part: Int, keeping registered: DeviceKey, in state: inout BatchState) {
        let devices = state.devices(of: user, part: part)
        guard devices.count > maxDevicesPerUser else { return }
        let oldestFirst = devices.filter { $0.key != registered }.sorted { a, b in
            a.updatedAt != b.updatedAt ? a.updatedAt < b.updatedAt : Array(a.deviceToken.utf8).lexicographicallyPrecedes(b.deviceToken.utf8)
        }
        for device in oldestFirst.prefix(devices.count - maxDevicesPerUser) {
            state.delete(device.key)
        }
    }

    /// Whether a registration that came to `failure` sends its status webhook. A token that fails
    /// verification (`DryRunSendingFailed`, `DeviceTokenTooLong`) is no device: anyone holding the
    /// client token can make one up, so its webhook would be a POST to a URL of their choosing
    /// for free (docs/API.md#status-webhook). Its status is still tracked. A duplicate, a store
    /// failure and a full app concern a token that verified, and keep their webhook.
    static func sendsWebhook(after failure: Reason?) -> Bool {
        switch failure {
        case nil, .DuplicateExists?, .FailedToStoreDevice?, .TooManyUsers?: true
        // Never decided here (an invalid token is rejected above), and the seed sends nothing for it.
        case .DryRunSendingFailed?, .DeviceTokenTooLong?, .ApiTokenNotValid?: false
        }
    }

    /// The device row a registration leaves (its version one past `existing`'s): the user and
    /// platform it names, the properties it gives, the others as they were. A device that changes
    /// hands starts without tags and topics (they were the previous user's); tags or topics that
    /// would take the device past its limit, or that hold a name outside the grammar
    /// (`DeviceTag.isValid`: ingest never writes one), are not added (docs/API.md#device-properties).
    static func registered(_ c: DeviceRegistrationRequested, over existing: DeviceRow?) -> DeviceRow {
        let kept = existing?.userId == c.userId ? existing : nil
        var tags = kept?.tags ?? [], topics = kept?.topics ?? []
        if let added = c.tags, !added.isEmpty, added.allSatisfy(DeviceTag.isValid) {
            let all = tags.changed(adding: added, removing: [])
            if all.count <= DeviceTag.maxPerDevice { tags = all }
        }
        if let added = c.topics, !added.isEmpty, added.allSatisfy(DeviceTopic.isValid) {
            let all = topics.changed(adding: added, removing: [])
            if all.count <= DeviceTopic.maxPerDevice { topics = all }
        }
        return DeviceRow(appId: c.mobileAppId, deviceToken: c.deviceToken, userId: c.userId, platform: c.platform,
                         version: (existing?.version ?? 0) + 1, updatedAt: existing?.updatedAt ?? .distantPast,
                         timeZone: c.timeZone ?? existing?.timeZone, badgesSince: existing?.badgesSince, badges: existing?.badges ?? 0,
                         locale: c.locale ?? existing?.locale, appVersion: c.appVersion ?? existing?.appVersion, tags: tags, topics: topics)
    }

    private func decide(_ c: DeviceRegistrationRequested, part: Int, state: BatchState) -> Reason? {
        if c.deviceToken.utf8.count > DeviceRegistrationAPI.maxDeviceTokenBytes { return .DeviceTokenTooLong }
        if !verifier.verify(token: c.deviceToken, platform: c.platform) { return .DryRunSendingFailed }
        let existing = state.devices[DeviceKey(appId: c.mobileAppId, deviceToken: c.deviceToken)]
        // A registration that changes nothing is a duplicate: the same user and platform, and
        // every property it gives already the device's (one it leaves out stays as it was).
        if let existing {
            var registered = Self.registered(c, over: existing)
            registered.version = existing.version
            registered.updatedAt = existing.updatedAt
            if registered == existing { return .DuplicateExists }
        }
        // A user the part does not have yet would be one more than it may keep: anyone holding
        // the client token could otherwise add devices without bound under made-up user ids.
        let user = UserKey(appId: c.mobileAppId, userId: c.userId)
        if state.devices(of: user, part: part).isEmpty, state.users(of: c.mobileAppId, part: part) >= maxUsersPerPart {
            return .TooManyUsers
        }
        return nil
    }

    private func statusWebhook(for c: DeviceRegistrationRequested, callback: StatusCallback, status: DeviceRegistrationAPI.Status,
                               failure: Reason?, retries: Int, at: Date) -> OutboxJob {
        let body = DeviceRegistrationAPI.StatusWebhook(Status: status, Signature: callback.signature, FailureReason: failure)
        // Encoding a struct of strings cannot fail; an empty body would still be sent and recorded.
        let data = (try? encoder.encode(body)) ?? Data()
        var headers = callback.headers
        headers["Content-Type"] = "application/json"
        return OutboxJob(id: "registration-status:\(c.registrationRequestId.lowercasedString)",
                         kind: "registration-status", appId: c.mobileAppId, url: callback.url, headers: headers,
                         body: data, maxAttempts: 1 + max(0, retries), nextAttemptAt: at, createdAt: at)
    }
}
