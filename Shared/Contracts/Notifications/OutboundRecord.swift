import Foundation
import WireCodec

/// The value of one record on the `outbound` topic, keyed by device token
/// (docs/API.md#outbound-payloads):
/// `{"mobileAppId","deviceToken","platform","deliveryId" (absent on badge updates),"messageId",`
/// `"collapseKey","priority","expiresAt" (each when the send has one),"payload":{…}}`.
///
/// Written by hand into one buffer, payload included: a record per device is the processor's
/// hottest output.
public enum OutboundRecord {
    /// Writes one record into `w`; `payload` writes the platform payload (`PushPayload`).
    /// - Returns: the payload's size in bytes, to check against `PushPayload.maxBytes`.
    @discardableResult
    public static func encode(mobileAppId: UUID, deviceToken: String, platform: Platform, deliveryId: UUID?,
                              messageId: String, options: NotificationContent? = nil, sentAt: Date? = nil,
                              into w: inout JSONWriter, payload: (inout JSONWriter) -> Void) -> Int {
        w.beginObject()
        w.key("mobileAppId")
        w.uuid(mobileAppId)
        w.field("deviceToken", deviceToken)
        w.field("platform", platform.rawValue)
        if let deliveryId {
            w.key("deliveryId")
            w.uuid(deliveryId)
        }
        w.field("messageId", messageId)
        if let options {
            // The delivery options the sender maps to each provider's fields.
            w.field("collapseKey", options.collapseKey)
            w.field("priority", options.priority?.rawValue)
            if let ttl = options.timeToLive, let sentAt {
                w.field("expiresAt", PushPayload.epochMillis(sentAt) + ttl * 1000)
            }
        }
        w.key("payload")
        let start = w.bytes.count
        payload(&w)
        let size = w.bytes.count - start
        w.endObject()
        return size
    }

    /// The record of `n` for one device, as a Kafka record value.
    public static func notification(_ n: NotificationRequested, deviceToken: String, platform: Platform, messageId: String,
                                    sentAt: Date, managedBadge: Int?) -> Data {
        var w = JSONWriter()
        encode(mobileAppId: n.mobileAppId, deviceToken: deviceToken, platform: platform, deliveryId: n.deliveryId,
               messageId: messageId, options: n.content, sentAt: sentAt, into: &w) { w in
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

/// An outbound record as read back by consumers and tests.
public struct OutboundRecordView: Decodable, Sendable, Equatable {
    public var mobileAppId: UUID
    public var deviceToken: String
    public var platform: Platform
    public var deliveryId: UUID?
    public var messageId: String
    public var collapseKey: String?
    public var priority: NotificationPriority?
    /// Milliseconds since 1970: the send's time plus its `timeToLive`.
    public var expiresAt: Int64?
    public var payload: JSONValue

    /// When the push expires, if the send said.
    public var expiry: Date? { expiresAt.map { Date(timeIntervalSince1970: TimeInterval($0) / 1000) } }

    public static func decode(_ data: Data) throws -> OutboundRecordView {
        try JSONDecoder().decode(OutboundRecordView.self, from: data)
    }
}
