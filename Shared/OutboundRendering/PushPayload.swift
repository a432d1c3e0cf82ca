import Contracts
import Foundation
import WireCodec

/// The APNs and FCM payloads of a notification, with the BW keys of managed notifications
/// (docs/API.md#outbound-payloads). A key whose value is absent is not written.
public enum PushPayload {
    /// The payload size limit of both APNs and FCM, in bytes.
    public static let maxBytes = 4096

    /// Names Pushline writes itself on either platform. A custom field of one of these names
    /// is not rendered: it would duplicate a key (and could forge `_mId`); ingest should reject it.
    public static let reservedCustomKeys: Set<String> = [
        "aps", "title", "body", "category", "sound", "badge", "media-attachment-url", "uri",
        "_dId", "_mId", "_acsDeliveryTracking", "text", "timestamp", "nid", "bid", "faf",
    ]

    /// Writes the payload of `n` for one device.
    ///
    /// - Parameter managedBadge: non-nil exactly for managed notifications: the device's
    ///   pending count, this notification included. It replaces `content.badge`.
    public static func render(_ n: NotificationRequested, platform: Platform, messageId: String, sentAt: Date,
                              managedBadge: Int?, into w: inout JSONWriter) {
        assert((managedBadge != nil) == n.managed, "managedBadge is set exactly for managed notifications")
        switch platform {
        case .ios: renderAPNs(n, messageId: messageId, sentAt: sentAt, managedBadge: managedBadge, into: &w)
        case .android: renderFCM(n, messageId: messageId, sentAt: sentAt, managedBadge: managedBadge, into: &w)
        }
    }

    /// The badge update sent to a device after an ack, `badge` 0 when nothing is pending.
    public static func renderBadgeUpdate(platform: Platform, badge: Int, into w: inout JSONWriter) {
        w.beginObject()
        switch platform {
        case .ios:
            w.key("aps")
            w.beginObject()
            w.field("badge", badge)
            w.endObject()
            w.field("badge", intString: badge)
        case .android:
            w.key("data")
            w.beginObject()
            w.field("badge", intString: badge)
            w.endObject()
        }
        w.endObject()
    }

    /// The BW `timestamp` (and `ns` time): milliseconds since 1970, rounded like `RFC3339`.
    public static func epochMillis(_ date: Date) -> Int {
        Int(RFC3339.milliseconds(date))
    }

    private static func renderAPNs(_ n: NotificationRequested, messageId: String, sentAt: Date, managedBadge: Int?,
                                   into w: inout JSONWriter) {
        let c = n.content
        let alertBody = c.body ?? c.text
        w.beginObject()
        w.key("aps")
        w.beginObject()
        if c.title != nil || alertBody != nil {
            w.key("alert")
            w.beginObject()
            w.field("title", c.title)
            w.field("body", alertBody)
            w.endObject()
        }
        w.field("badge", managedBadge ?? c.badge)
        w.field("sound", c.sound)
        w.field("category", c.category)
        if c.contentAvailable == true { w.field("content-available", 1) }
        // A media URL sets mutable-content by itself (the service extension fetches it).
        if c.mutableContent == true || c.mediaAttachmentUrl != nil { w.field("mutable-content", 1) }
        w.endObject()
        writeCustom(c.custom, into: &w)
        w.field("media-attachment-url", c.mediaAttachmentUrl)
        w.field("uri", c.uri)
        writeTracking(n, messageId: messageId, into: &w)
        if n.managed {
            writeManaged(n, sentAt: sentAt, into: &w)
            w.field("badge", intString: managedBadge)
        }
        w.endObject()
    }

    /// An FCM data message: every value in `data` is a string.
    private static func renderFCM(_ n: NotificationRequested, messageId: String, sentAt: Date, managedBadge: Int?,
                                  into w: inout JSONWriter) {
        let c = n.content
        w.beginObject()
        w.field("collapseKey", c.collapseKey)
        w.field("priority", c.priority?.provider.rawValue)
        w.key("data")
        w.beginObject()
        w.key("_dId")
        w.uuid(n.deliveryId)
        w.field("_mId", messageId)
        w.field("title", c.title)
        w.field("body", c.body ?? c.text)
        w.field("category", c.category)
        writeCustom(c.custom, into: &w)
        w.field("media-attachment-url", c.mediaAttachmentUrl)
        w.field("sound", c.sound)
        w.field("uri", c.uri)
        w.field("badge", intString: managedBadge ?? c.badge)
        w.field("_acsDeliveryTracking", n.tracking ? "on" : "off")
        if n.managed { writeManaged(n, sentAt: sentAt, into: &w) }
        w.endObject()
        w.endObject()
    }

    /// `_dId`, `_mId`, `_acsDeliveryTracking` (APNs order).
    private static func writeTracking(_ n: NotificationRequested, messageId: String, into w: inout JSONWriter) {
        w.key("_dId")
        w.uuid(n.deliveryId)
        w.field("_mId", messageId)
        w.field("_acsDeliveryTracking", n.tracking ? "on" : "off")
    }

    /// The BW keys of a managed notification, except `badge`.
    private static func writeManaged(_ n: NotificationRequested, sentAt: Date, into w: inout JSONWriter) {
        w.field("text", n.content.alertText)
        w.field("timestamp", intString: epochMillis(sentAt))
        w.key("nid")
        w.uuid(n.deliveryId)  // == n.notificationId
        w.field("bid", n.businessId)
        w.field("faf", "false")
    }

    /// Custom fields sorted by key, so a payload is the same bytes on every render.
    private static func writeCustom(_ custom: [String: String]?, into w: inout JSONWriter) {
        guard let custom, !custom.isEmpty else { return }
        for key in custom.keys.sorted() where !reservedCustomKeys.contains(key) {
            w.field(key, custom[key])
        }
    }
}
