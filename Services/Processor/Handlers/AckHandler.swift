import Contracts
import Foundation
import OutboundRendering
import Projections

/// Applies a device's acknowledgement (docs/API.md#managed-notifications-and-acknowledgements):
/// the notification is no longer pending on it, and the device is sent its new badge. The ack is
/// kept, so that a notification applied after it (they may travel on different partitions) is
/// not made pending. The first ack of a (device, notification) is the one kept.
package struct AckHandler: CommandHandler {
    package func addNeeds(of c: NotificationAcknowledged, to query: inout StateQuery) {
        query.appIds.insert(c.mobileAppId)
        query.deviceKeys.insert(DeviceKey(appId: c.mobileAppId, deviceToken: c.deviceToken))
        query.pendingCountDevices.insert(DeviceKey(appId: c.mobileAppId, deviceToken: c.deviceToken))
        let key = PendingKey(appId: c.mobileAppId, deviceToken: c.deviceToken, notificationId: c.notificationId)
        query.pendingKeys.insert(key)
        query.ackKeys.insert(key)
    }

    package func apply(_ c: NotificationAcknowledged, _ context: CommandContext, to state: inout BatchState) -> HandlerResult {
        guard state.app(c.mobileAppId, part: context.part) != nil else { return .rejected("unknown-app") }
        guard state.holds(token: c.deviceToken, part: context.part) else { return .rejected("another-part") }
        let key = PendingKey(appId: c.mobileAppId, deviceToken: c.deviceToken, notificationId: c.notificationId)
        // An ack of a device the app does not have leaves nothing behind: anyone holding the
        // app's token could otherwise grow the store without bound. (That device has nothing
        // pending; an ack read before its device's registration is dropped the same way.)
        guard let device = state.devices[key.device] else { return .rejected("unknown-device") }
        state.recordAck(AckRow(appId: c.mobileAppId, deviceToken: c.deviceToken, notificationId: c.notificationId,
                               businessId: c.businessId, ackedAt: context.at))
        state.removePending(key)
        let value = OutboundRecord.badgeUpdate(mobileAppId: c.mobileAppId, deviceToken: c.deviceToken, platform: device.platform,
                                               ackId: context.id, badge: state.pendingCount(key.device))
        state.emit(OutboundMessage(kind: .badgeUpdate, deviceToken: c.deviceToken, value: value))
        return .applied
    }
}
