import Contracts
import Foundation
import Projections

/// Changes the properties of one device, or of every device of a user
/// (docs/API.md#device-properties): locale, time zone, app version, tags and topics. Only devices
/// registered before the change in the event order are changed; an unknown device, or a device
/// of another user than the one named, is left alone (`unknown-device`). A device that would end
/// with more than `DeviceTag.maxPerDevice` tags or `DeviceTopic.maxPerDevice` topics keeps what
/// it had (`too-many-tags`, `too-many-topics`); the user's other devices still change. A name to
/// add outside the grammar (`DeviceTag.isValid`: ingest never writes one) changes no device
/// (`invalid-name`): the stores split the names they keep at spaces, and SQLite's index of them
/// reads them as JSON strings.
package struct DeviceChangeHandler: CommandHandler {
    package init() {}

    package func addNeeds(of c: DeviceChangeRequested, to query: inout StateQuery) {
        query.appIds.insert(c.mobileAppId)
        if let token = c.deviceToken {
            query.deviceKeys.insert(DeviceKey(appId: c.mobileAppId, deviceToken: token))
        } else if let userId = c.userId {
            query.userKeys.insert(UserKey(appId: c.mobileAppId, userId: userId))
        }
    }

    package func apply(_ c: DeviceChangeRequested, _ context: CommandContext, to state: inout BatchState) -> HandlerResult {
        guard state.app(c.mobileAppId, part: context.part) != nil else { return .rejected("unknown-app") }
        // A device's own change needs its user's assertion once the app requires them, as its
        // registration does (docs/API.md#verified-user-identity).
        if c.fromClient == true, c.identityVerified != true, state.requiresIdentity(app: c.mobileAppId, part: context.part) {
            return .rejected("user-identity-not-verified")
        }
        let targets: [DeviceRow]
        if let token = c.deviceToken {
            guard state.holds(token: token, part: context.part) else { return .rejected("another-part") }
            guard let device = state.devices[DeviceKey(appId: c.mobileAppId, deviceToken: token)],
                  c.userId == nil || c.userId == device.userId else { return .rejected("unknown-device") }
            targets = [device]
        } else if let userId = c.userId {
            // An app in parts gets this command in every part: each changes the devices it holds.
            targets = state.devices(of: UserKey(appId: c.mobileAppId, userId: userId), part: context.part)
        } else {
            return .rejected("no-target")
        }
        var refusal: String?
        for device in targets {
            switch Self.changed(device, by: c) {
            case .success(let changed): if changed != device { state.upsert(changed) }
            case .failure(let reason): refusal = reason.rawValue
            }
        }
        return refusal.map { .rejected($0) } ?? .applied
    }

    package enum Refusal: String, Error {
        case tooManyTags = "too-many-tags"
        case tooManyTopics = "too-many-topics"
        case invalidName = "invalid-name"
    }

    /// The device with the change applied (its row's version one higher when anything changed),
    /// or why it keeps what it had.
    static func changed(_ device: DeviceRow, by c: DeviceChangeRequested) -> Result<DeviceRow, Refusal> {
        guard (c.addTags ?? []).allSatisfy(DeviceTag.isValid), (c.subscribe ?? []).allSatisfy(DeviceTopic.isValid) else {
            return .failure(.invalidName)
        }
        var row = device
        row.locale = c.locale ?? row.locale
        row.timeZone = c.timeZone ?? row.timeZone
        row.appVersion = c.appVersion ?? row.appVersion
        row.tags = row.tags.changed(adding: c.addTags ?? [], removing: c.removeTags ?? [])
        row.topics = row.topics.changed(adding: c.subscribe ?? [], removing: c.unsubscribe ?? [])
        guard row.tags.count <= DeviceTag.maxPerDevice else { return .failure(.tooManyTags) }
        guard row.topics.count <= DeviceTopic.maxPerDevice else { return .failure(.tooManyTopics) }
        if row != device { row.version += 1 }
        return .success(row)
    }
}
