import Contracts
import Foundation
import OutboundRendering
import Projections

/// Applies a device's acknowledgement (docs/API.md#managed-notifications-and-acknowledgements):
/// the notification is no longer pending on it, and the device is sent its new badge.
///
/// An ack counts only for a notification pending on that device: any other is refused and
/// leaves nothing behind, so that the client token, which anyone can read out of the app, cannot
/// grow the store or trigger badge pushes with made-up ids. A device learns a notification's id
/// from its push, which follows the send's application; the send and the ack are commands of one
/// app, applied in the app's one event order (docs/ARCHITECTURE.md#keys-and-ordering), so an
/// ack the device could have made is never applied before its notification. The ack counted is
/// stored (until `DecisionRules.ackTtlMs` of log time later); its notification is no longer
/// pending, so a repeat is refused.
///
/// A device is sent at most `maxBadgeUpdatesPerMinute` badge updates per minute of log time
/// (windows that start at the first update after the last window ended): an ack past them counts,
/// and sends none. The device's badge is then stale until its next badge update or managed push,
/// both of which carry its count; its pending list is always exact.
package struct AckHandler: CommandHandler {
    /// The most badge updates a device is sent per window (`DecisionRules.maxBadgeUpdatesPerMinute`).
    package let maxBadgeUpdatesPerMinute: Int
    /// A window's length, in log time.
    static let badgeWindow: TimeInterval = 60

    package init(maxBadgeUpdatesPerMinute: Int = DecisionRules.default.maxBadgeUpdatesPerMinute) {
        self.maxBadgeUpdatesPerMinute = max(1, maxBadgeUpdatesPerMinute)
    }

    package func addNeeds(of c: NotificationAcknowledged, to query: inout StateQuery) {
        query.appIds.insert(c.mobileAppId)
        query.deviceKeys.insert(DeviceKey(appId: c.mobileAppId, deviceToken: c.deviceToken))
        query.pendingCountDevices.insert(DeviceKey(appId: c.mobileAppId, deviceToken: c.deviceToken))
        query.pendingKeys.insert(PendingKey(appId: c.mobileAppId, deviceToken: c.deviceToken, notificationId: c.notificationId))
    }

    package func apply(_ c: NotificationAcknowledged, _ context: CommandContext, to state: inout BatchState) -> HandlerResult {
        guard state.app(c.mobileAppId, part: context.part) != nil else { return .rejected("unknown-app") }
        guard state.holds(token: c.deviceToken, part: context.part) else { return .rejected("another-part") }
        let key = PendingKey(appId: c.mobileAppId, deviceToken: c.deviceToken, notificationId: c.notificationId)
        guard var device = state.devices[key.device] else { return .rejected("unknown-device") }
        guard state.isPending(key) else { return .rejected("not-pending") }
        state.recordAck(AckRow(appId: c.mobileAppId, deviceToken: c.deviceToken, notificationId: c.notificationId,
                               businessId: c.businessId, ackedAt: context.at))
        state.removePending(key)
        if let since = device.badgesSince, context.at < since.addingTimeInterval(Self.badgeWindow) {
            guard device.badges < maxBadgeUpdatesPerMinute else { return .applied }
            device.badges += 1
        } else {
            (device.badgesSince, device.badges) = (context.at, 1)
        }
        state.upsert(device)
        let value = OutboundRecord.badgeUpdate(mobileAppId: c.mobileAppId, deviceToken: c.deviceToken, platform: device.platform,
                                               ackId: context.id, badge: state.pendingCount(key.device))
        state.emit(OutboundMessage(kind: .badgeUpdate, deviceToken: c.deviceToken, value: value))
        return .applied
    }
}
