import Foundation
import WireCodec

/// The value of one record on the `outbound` topic, keyed by device token
/// (docs/API.md#outbound-payloads):
/// `{"mobileAppId","deviceToken","platform","deliveryId" (absent on badge updates),"messageId",`
/// `"collapseKey","priority","expiresAt" (each when the send has one),"locale" (a localized`
/// `send's variant the device got, `default` for the send's own text),"payload":{…}}`.
///
/// Written by hand into one buffer, payload included: a record per device is the processor's
/// hottest output. Its keys are listed once, `Key`: the writer here, the sender's reader
/// (`OutboundPush`) and the decoder's view (`OutboundRecordView`) below all name them from it.
/// The payload and the records of a send are rendered in `OutboundRendering`.
public enum OutboundRecord {
    /// The record's keys, in the order the writer writes them.
    public enum Key: String, CodingKey, CaseIterable, Sendable {
        case mobileAppId, deviceToken, platform, deliveryId, messageId, collapseKey, priority, expiresAt, locale, payload
    }

    /// Writes one record into `w`; `payload` writes the platform payload (`PushPayload`).
    /// `locale`: the variant of a localized send the device gets, which the sender reports its
    /// outcome under.
    /// - Returns: the payload's size in bytes, to check against `PushPayload.maxBytes`.
    @discardableResult
    public static func encode(mobileAppId: UUID, deviceToken: String, platform: Platform, deliveryId: UUID?,
                              messageId: String, options: NotificationContent? = nil, sentAt: Date? = nil, locale: String? = nil,
                              into w: inout JSONWriter, payload: (inout JSONWriter) -> Void) -> Int {
        w.beginObject()
        w.key(Key.mobileAppId.rawValue)
        w.uuid(mobileAppId)
        w.field(Key.deviceToken.rawValue, deviceToken)
        w.field(Key.platform.rawValue, platform.rawValue)
        if let deliveryId {
            w.key(Key.deliveryId.rawValue)
            w.uuid(deliveryId)
        }
        w.field(Key.messageId.rawValue, messageId)
        if let options {
            // The delivery options the sender maps to each provider's fields.
            w.field(Key.collapseKey.rawValue, options.collapseKey)
            w.field(Key.priority.rawValue, options.priority?.provider.rawValue)
            if let ttl = options.timeToLive, let sentAt {
                w.field(Key.expiresAt.rawValue, Int(RFC3339.milliseconds(sentAt)) + ttl * 1000)
            }
        }
        w.field(Key.locale.rawValue, locale)
        w.key(Key.payload.rawValue)
        let start = w.bytes.count
        payload(&w)
        let size = w.bytes.count - start
        w.endObject()
        return size
    }
}

/// An outbound record as the sender reads it (docs/ARCHITECTURE.md#delivery): its fields, and
/// its payload as the bytes the processor rendered, which become the provider request as they
/// are instead of being decoded and encoded again (a tenth of the sender's CPU when they were;
/// docs/BENCHMARKS.md, "Sender").
///
/// `read` takes the hand-written path (`WireReader`) for the records the processor writes and
/// falls back to `JSONDecoder` (`OutboundRecordView`) for anything it is not sure of, such as
/// escaped keys; both give the same fields and the same meaning of the payload.
public struct OutboundPush: Sendable, Equatable {
    public var mobileAppId: UUID
    public var deviceToken: String
    public var platform: Platform
    public var deliveryId: UUID?
    public var messageId: String
    public var collapseKey: String?
    public var priority: NotificationPriority?
    /// Milliseconds since 1970: the send's time plus its `timeToLive`.
    public var expiresAt: Int64?
    /// The variant of a localized send the device got (`default`: the send's own text).
    public var locale: String? = nil
    /// The rendered payload, a JSON object in every record the processor writes.
    public var payload: Data
    /// What the sender needs to know of the payload's contents.
    public var contents: PayloadContents

    /// When the push expires, if the send said.
    public var expiry: Date? { expiresAt.map { Date(timeIntervalSince1970: TimeInterval($0) / 1000) } }

    /// What the payload says to each provider's request beyond its bytes.
    public struct PayloadContents: Sendable, Equatable {
        /// False for a payload that is not a JSON object: such a record cannot become a push.
        public var isObject = true
        /// APNs: `aps` only wakes the app (`content-available` 1 without alert, badge or sound).
        public var wakesOnly = false
        /// FCM: the payload's `data`, as written.
        public var data: Data?
        /// FCM: the payload's `priority` and `collapseKey`, which records written before the
        /// record carried its own have only there.
        public var priority: String?
        public var collapseKey: String?

        public init() {}
    }

    /// Reads the value of one outbound record.
    public static func read(_ data: Data) throws -> OutboundPush {
        if let push = data.withUnsafeBytes({ raw in fast(raw.assumingMemoryBound(to: UInt8.self)) }) { return push }
        let view = try OutboundRecordView.decode(data)
        return OutboundPush(mobileAppId: view.mobileAppId, deviceToken: view.deviceToken, platform: view.platform,
                            deliveryId: view.deliveryId, messageId: view.messageId, collapseKey: view.collapseKey,
                            priority: view.priority, expiresAt: view.expiresAt, locale: view.locale,
                            payload: try WireJSON.encoder().encode(view.payload), contents: PayloadContents(view.payload))
    }

    private static func fast(_ bytes: UnsafeBufferPointer<UInt8>) -> OutboundPush? {
        var reader = WireReader(bytes)
        var mobileAppId: UUID?, deviceToken: String?, platform: Platform?, deliveryId: UUID?, messageId: String?
        var collapseKey: String?, priority: NotificationPriority?, expiresAt: Int?, locale: String?, payload: Range<Int>?
        guard reader.object(outboundKeys, { reader, key in
            switch key {
            case .mobileAppId: reader.read(&mobileAppId)
            case .deviceToken: reader.read(&deviceToken)
            case .platform: reader.read(&platform)
            case .deliveryId: reader.readOptional(&deliveryId)
            case .messageId: reader.read(&messageId)
            case .collapseKey: reader.readOptional(&collapseKey)
            case .priority: reader.readOptional(&priority)
            case .expiresAt: reader.readOptional(&expiresAt)
            case .locale: reader.readOptional(&locale)
            case .payload: reader.span(&payload)
            }
        }), reader.atEnd(), let mobileAppId, let deviceToken, let platform, let messageId, let payload else { return nil }
        let payloadBytes = UnsafeBufferPointer(rebasing: bytes[payload])
        guard let contents = PayloadContents(wire: payloadBytes) ?? (try? JSONValue.parse(Data(payloadBytes))).map(PayloadContents.init)
        else { return nil }
        return OutboundPush(mobileAppId: mobileAppId, deviceToken: deviceToken, platform: platform, deliveryId: deliveryId,
                            messageId: messageId, collapseKey: collapseKey, priority: priority, expiresAt: expiresAt.map(Int64.init),
                            locale: locale, payload: Data(payloadBytes), contents: contents)
    }
}

private let outboundKeys = WireKeys<OutboundRecord.Key>()

private enum PayloadKey: String, CaseIterable { case aps, data, priority, collapseKey }
private let payloadKeys = WireKeys<PayloadKey>()

private enum APSKey: String, CaseIterable {
    case alert, badge, sound
    case contentAvailable = "content-available"
}
private let apsKeys = WireKeys<APSKey>()

extension NotificationPriority: WireDecodable {}

extension OutboundPush.PayloadContents {
    /// The contents of a decoded payload.
    public init(_ payload: JSONValue) {
        guard case .object(let members) = payload else {
            isObject = false
            return
        }
        if case .object(let aps)? = members["aps"] {
            wakesOnly = aps["alert"] == nil && aps["badge"] == nil && aps["sound"] == nil && aps["content-available"] == .number(1)
        }
        data = members["data"].flatMap { try? WireJSON.encoder().encode($0) }
        if case .string(let text)? = members["priority"] { priority = text }
        if case .string(let text)? = members["collapseKey"] { collapseKey = text }
    }

    /// The contents read from the payload's bytes; nil when `WireReader` is not sure (an escaped
    /// key or string where it matters, a repeated key, `content-available` not a plain integer):
    /// the payload is then decoded.
    init?(wire bytes: UnsafeBufferPointer<UInt8>) {
        var reader = WireReader(bytes)
        guard reader.consume("{") else {
            // Not an object; nil (decoded, which decides) unless it is some other value.
            var other = WireReader(bytes)
            guard other.skipValue() != nil, other.atEnd() else { return nil }
            isObject = false
            return
        }
        reader = WireReader(bytes)
        var seen: UInt64 = 0
        var alert = false, badge = false, sound = false, contentAvailable: Int?
        var data: Range<Int>?, priority: String?, collapseKey: String?
        let read = reader.members { reader, name in
            guard let index = payloadKeys.index(of: name) else { return reader.skipValue() != nil }
            guard seen & (1 << index) == 0 else { return false }
            seen |= 1 << index
            switch payloadKeys[index] {
            case .aps:
                return reader.members { reader, name in
                    switch apsKeys.index(of: name).map({ apsKeys[$0] }) {
                    case .alert?: alert = true
                    case .badge?: badge = true
                    case .sound?: sound = true
                    case .contentAvailable?:
                        guard contentAvailable == nil, let value = reader.int() else { return false }
                        contentAvailable = value
                        return true
                    case nil: break
                    }
                    return reader.skipValue() != nil
                }
            case .data: return reader.span(&data)
            case .priority: return reader.read(&priority)
            case .collapseKey: return reader.read(&collapseKey)
            }
        }
        guard read, reader.atEnd() else { return nil }
        wakesOnly = !alert && !badge && !sound && contentAvailable == 1
        self.data = data.map { Data(UnsafeBufferPointer(rebasing: bytes[$0])) }
        self.priority = priority
        self.collapseKey = collapseKey
    }
}

/// An outbound record as read back by consumers and tests.
public struct OutboundRecordView: Decodable, Sendable, Equatable {
    private typealias CodingKeys = OutboundRecord.Key

    public var mobileAppId: UUID
    public var deviceToken: String
    public var platform: Platform
    public var deliveryId: UUID?
    public var messageId: String
    public var collapseKey: String?
    public var priority: NotificationPriority?
    /// Milliseconds since 1970: the send's time plus its `timeToLive`.
    public var expiresAt: Int64?
    /// The variant of a localized send the device got.
    public var locale: String?
    public var payload: JSONValue

    /// When the push expires, if the send said.
    public var expiry: Date? { expiresAt.map { Date(timeIntervalSince1970: TimeInterval($0) / 1000) } }

    public static func decode(_ data: Data) throws -> OutboundRecordView {
        try JSONDecoder().decode(OutboundRecordView.self, from: data)
    }
}
