import Contracts
import Foundation
import WireCodec

/// The outbound records the processor writes: a notification's for one device, and a badge
/// update's. The record's shape and its writer (`OutboundRecord.encode`) are in Contracts; what
/// goes in them is rendered here.
extension OutboundRecord {
    /// The record of `n` for one device, as a Kafka record value; `locale`: the variant of a
    /// localized send `n`'s content is (`NotificationContent.localized(_:)`).
    public static func notification(_ n: NotificationRequested, deviceToken: String, platform: Platform, messageId: String,
                                    sentAt: Date, managedBadge: Int?, locale: String? = nil) -> Data {
        var w = JSONWriter()
        encode(mobileAppId: n.mobileAppId, deviceToken: deviceToken, platform: platform, deliveryId: n.deliveryId,
               messageId: messageId, options: n.content, sentAt: sentAt, locale: locale, into: &w) { w in
            PushPayload.render(n, platform: platform, messageId: messageId, sentAt: sentAt, managedBadge: managedBadge, into: &w)
        }
        return w.data
    }

    /// The badge update record sent to one device after the ack `ackId`.
    public static func badgeUpdate(mobileAppId: UUID, deviceToken: String, platform: Platform, ackId: UUID, badge: Int) -> Data {
        var w = JSONWriter(capacity: 256)
        encode(mobileAppId: mobileAppId, deviceToken: deviceToken, platform: platform, deliveryId: nil,
               messageId: MessageId.badgeUpdate(ackId: ackId), into: &w) { w in
            PushPayload.renderBadgeUpdate(platform: platform, badge: badge, into: &w)
        }
        return w.data
    }
}
