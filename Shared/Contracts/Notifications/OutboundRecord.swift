import Foundation

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

/// Any JSON value, for comparing rendered JSON with an expected literal whatever the key order.
/// Numbers are `Double`s: every integer Pushline writes (badges, millis) is exact in one.
public enum JSONValue: Codable, Sendable, Equatable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public static func parse(_ data: Data) throws -> JSONValue {
        try JSONDecoder().decode(JSONValue.self, from: data)
    }

    public static func parse(_ text: String) throws -> JSONValue {
        try parse(Data(text.utf8))
    }

    /// The member `key` of an object; nil for a missing key or a non-object.
    public subscript(key: String) -> JSONValue? {
        if case .object(let members) = self { members[key] } else { nil }
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() {
            self = .null
        } else if let b = try? c.decode(Bool.self) {
            // JSONDecoder decodes only `true`/`false` as Bool (never 1 or 0; a test pins it).
            self = .bool(b)
        } else if let d = try? c.decode(Double.self) {
            self = .number(d)
        } else if let s = try? c.decode(String.self) {
            self = .string(s)
        } else if let a = try? c.decode([JSONValue].self) {
            self = .array(a)
        } else {
            self = .object(try c.decode([String: JSONValue].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .null: try c.encodeNil()
        case .bool(let b): try c.encode(b)
        case .number(let d): try c.encode(d)
        case .string(let s): try c.encode(s)
        case .array(let a): try c.encode(a)
        case .object(let o): try c.encode(o)
        }
    }
}
