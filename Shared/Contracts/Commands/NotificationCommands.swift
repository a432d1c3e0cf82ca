import Foundation
import WireCodec

/// Who a notification goes to: the devices of some users of the app, some device tokens of the
/// app, or the app's devices an audience expression selects (`AudienceExpression`, in its
/// canonical text). Exactly one is given (ingest checks it).
public struct NotificationTarget: Codable, Sendable, Equatable {
    public var userIds: [String]
    public var deviceTokens: [String]
    /// An audience expression's canonical text (`all`, `topic:news`, …); nil: the lists name
    /// the devices.
    public var audience: String?

    public init(userIds: [String] = [], deviceTokens: [String] = [], audience: String? = nil) {
        self.userIds = userIds
        self.deviceTokens = deviceTokens
        self.audience = audience
    }

    /// The most elements either list may have.
    public static let maxTargets = 1000
}

/// Where a scheduled send stands (docs/API.md#scheduled-sends).
public enum ScheduleState: String, Codable, Sendable, CaseIterable {
    /// Kept until its time.
    case waiting
    /// Its time came: sent to some devices, and some still wait for theirs (a local-time send's
    /// later zones, or the end of their quiet hours).
    case sending
    /// Its time came and it was sent.
    case fired
    /// Cancelled before its time.
    case cancelled
    /// Its firing came after its time to live ran out: nothing was sent.
    case expired
}

/// A push's priority: the providers' `high` or `normal`; `critical` is sent as `high` and is
/// shown in quiet hours (docs/API.md#quiet-hours).
public enum NotificationPriority: String, Codable, Sendable, CaseIterable {
    case high, normal, critical

    /// The priority a provider is given.
    public var provider: NotificationPriority { self == .critical ? .high : self }
}

/// What a notification is for: a plain alert, or the KF5 customer-service kinds that also call the
/// app's callback URL.
public enum NotificationKind: String, Codable, Sendable, CaseIterable {
    case alert, ticket, im
}

/// The displayed and platform content of a notification (docs/API.md#content-and-alert-text). A
/// `nil` field is not rendered.
public struct NotificationContent: Codable, Sendable, Equatable {
    public var title: String?
    public var body: String?
    /// The BW alert text; when absent the alert text is `body`, else `title`.
    public var text: String?
    public var sound: String?
    public var badge: Int?
    public var category: String?
    /// Deep link.
    public var uri: String?
    public var mediaAttachmentUrl: String?
    public var contentAvailable: Bool?
    public var mutableContent: Bool?
    public var collapseKey: String?
    public var priority: NotificationPriority?
    /// Custom fields: top level on iOS, inside `data` on Android.
    public var custom: [String: String]?
    /// Seconds after the send during which the push may be delivered (the providers' expiry,
    /// the sender's last retry); nil: the sender's default.
    public var timeToLive: Int?
    /// The displayed text per locale (canonical `DeviceLocale` keys): each device gets the best
    /// match for its locale (`variant(for:)`), and the fields above when none matches
    /// (docs/API.md#localized-content).
    public var localized: [String: LocalizedText]?

    public init(title: String? = nil, body: String? = nil, text: String? = nil, sound: String? = nil, badge: Int? = nil,
                category: String? = nil, uri: String? = nil, mediaAttachmentUrl: String? = nil, contentAvailable: Bool? = nil,
                mutableContent: Bool? = nil, collapseKey: String? = nil, priority: NotificationPriority? = nil,
                custom: [String: String]? = nil, timeToLive: Int? = nil, localized: [String: LocalizedText]? = nil) {
        self.localized = localized
        self.title = title
        self.body = body
        self.text = text
        self.sound = sound
        self.badge = badge
        self.category = category
        self.uri = uri
        self.mediaAttachmentUrl = mediaAttachmentUrl
        self.contentAvailable = contentAvailable
        self.mutableContent = mutableContent
        self.collapseKey = collapseKey
        self.priority = priority
        self.custom = custom
        self.timeToLive = timeToLive
    }

    /// The alert text: `text`, else `body`, else `title` (empty when none is set).
    public var alertText: String { text ?? body ?? title ?? "" }

    /// The key of `localized` that best fits a device's canonical locale: the whole tag, then
    /// its language and region (`zh-TW` for `zh-Hant-TW`), then language and script, then the
    /// language alone; nil (the default text) when none is there or the device has no locale.
    public func variant(for locale: String?) -> String? {
        guard let localized, !localized.isEmpty, let locale else { return nil }
        let subtags = locale.split(separator: "-").map(String.init)
        guard let language = subtags.first else { return nil }
        var candidates = [locale]
        if subtags.count == 3 { candidates += [language + "-" + subtags[2], language + "-" + subtags[1]] }
        candidates.append(language)
        return candidates.first { localized[$0] != nil }
    }

    /// The content a device of variant `key` gets: that locale's text in place of the default
    /// (a field the variant leaves out is the default's), and no other variants.
    public func localized(_ key: String?) -> NotificationContent {
        var content = self
        content.localized = nil
        guard let key, let variant = localized?[key] else { return content }
        content.title = variant.title ?? title
        content.body = variant.body ?? body
        // The default's alert text is in the default's language: a variant without one shows its
        // own body or title instead.
        content.text = variant.text ?? (text == nil ? nil : variant.body ?? variant.title ?? text)
        return content
    }
}

/// One locale's displayed text of a send (`NotificationContent.localized`).
public struct LocalizedText: Codable, Sendable, Equatable {
    public var title: String?
    public var body: String?
    public var text: String?

    public init(title: String? = nil, body: String? = nil, text: String? = nil) {
        self.title = title
        self.body = body
        self.text = text
    }
}

extension NotificationContent {
    fileprivate func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.field("badge", badge)
        writer.field("body", body)
        writer.field("category", category)
        writer.field("collapseKey", collapseKey)
        writer.field("contentAvailable", contentAvailable)
        if let custom {
            writer.key("custom")
            writer.object(custom)
        }
        if let localized {
            writer.key("localized")
            writer.beginObject()
            for key in localized.keys.sorted() {
                let text = localized[key]!
                writer.key(key)
                writer.beginObject()
                writer.field("body", text.body)
                writer.field("text", text.text)
                writer.field("title", text.title)
                writer.endObject()
            }
            writer.endObject()
        }
        writer.field("mediaAttachmentUrl", mediaAttachmentUrl)
        writer.field("mutableContent", mutableContent)
        writer.field("priority", priority?.rawValue)
        writer.field("sound", sound)
        writer.field("text", text)
        writer.field("timeToLive", timeToLive)
        writer.field("title", title)
        writer.field("uri", uri)
        writer.endObject()
    }
}

/// A send request (`POST /v1/apps/{id}/notifications`), accepted by ingest after checking the
/// app's API token. The processor resolves the target to the app's devices when it applies
/// the command and writes one outbound record per device.
public struct NotificationRequested: AppScopedCommand, Equatable {
    public static let type = CommandType.notificationRequested
    public static let topic = CommandTopic.notification

    /// One per send request: the `_dId` of every payload, and the `nid` of a managed one.
    @LowercaseUUID public var deliveryId: UUID
    @LowercaseUUID public var mobileAppId: UUID
    public var target: NotificationTarget
    public var content: NotificationContent
    /// Managed notifications stay pending on each device until it acknowledges them.
    public var managed: Bool
    /// The BW `bid`.
    public var businessId: String?
    /// Whether devices should report engagement (`_acsDeliveryTracking`).
    public var tracking: Bool
    public var kind: NotificationKind
    /// For `kind == .ticket`.
    public var ticketId: String?
    /// For `kind == .im`.
    public var message: String?
    /// The request's `Idempotency-Key`, whose hash the delivery id is (`IdempotencyKeys`).
    public var idempotencyKey: String?
    /// `IdempotencyKeys.requestHash` of the request body, set with `idempotencyKey`.
    public var requestHash: String?
    /// The id of the deployment key the message ids are made with (`MessageIdKeys`), stamped by
    /// ingest from its `PUSHLINE_SECRETS_KEY`, so that a rebuild makes the same ids after a
    /// rotation. Nil (absent: logs from before keyed ids, or an ingest without the key): the
    /// unkeyed ids, which anyone who knows the delivery id can compute.
    public var messageKeyId: String?
    /// When the send is to go out (docs/API.md#scheduled-sends); nil: when it is applied. A send
    /// whose time is after its own is kept, and goes out at its firing.
    public var sendAt: Date?
    /// True on a scheduled send's firing: the copy of it a processor appends to the log once its
    /// time came (docs/ARCHITECTURE.md#time-is-part-of-the-log). Nil on the send ingest wrote.
    public var firing: Bool?
    /// A local-time send's wall-clock time (`LocalDateTime`, canonical), applied in each device's
    /// zone (docs/API.md#local-time-sends); its `sendAt` is then the earliest instant it is
    /// anywhere, when its devices are chosen.
    public var sendAtLocal: String?
    /// What the send does with a push that would arrive in quiet hours; nil: hold it.
    public var quietHours: QuietHoursMode?
    /// On a firing of a send some of whose pushes were held: the time of those it releases
    /// (`HeldPushRow.releaseAt`); nil on the send's first firing.
    public var wave: Date?
    /// The category the app's frequency caps count the push in (`FrequencyCap`); nil: only the
    /// caps of every push count it. `capExempt`: no cap counts or stops it.
    public var capCategory: String?
    public var capExempt: Bool?

    public init(deliveryId: UUID, mobileAppId: UUID, target: NotificationTarget, content: NotificationContent,
                managed: Bool = false, businessId: String? = nil, tracking: Bool = true, kind: NotificationKind = .alert,
                ticketId: String? = nil, message: String? = nil, idempotencyKey: String? = nil, requestHash: String? = nil,
                messageKeyId: String? = nil, sendAt: Date? = nil, firing: Bool? = nil, sendAtLocal: String? = nil,
                quietHours: QuietHoursMode? = nil, wave: Date? = nil, capCategory: String? = nil, capExempt: Bool? = nil) {
        self.capCategory = capCategory
        self.capExempt = capExempt
        self.sendAt = sendAt
        self.firing = firing
        self.sendAtLocal = sendAtLocal
        self.quietHours = quietHours
        self.wave = wave
        self.deliveryId = deliveryId
        self.mobileAppId = mobileAppId
        self.target = target
        self.content = content
        self.managed = managed
        self.businessId = businessId
        self.tracking = tracking
        self.kind = kind
        self.ticketId = ticketId
        self.message = message
        self.idempotencyKey = idempotencyKey
        self.requestHash = requestHash
        self.messageKeyId = messageKeyId
    }

    /// The notification id (`nid`) of a managed notification: its delivery id.
    public var notificationId: String { deliveryId.lowercasedString }

    /// Whether this is a send to keep until its time: one with a time after its own `at`, and
    /// not its firing.
    public func isScheduled(at: Date) -> Bool {
        guard let sendAt, firing != true else { return false }
        return sendAt > at
    }

}

extension NotificationRequested: HandWrittenCommand {
    public func writePayload(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.field("businessId", businessId)
        writer.field("capCategory", capCategory)
        writer.field("capExempt", capExempt)
        writer.key("content")
        content.write(to: &writer)
        writer.key("deliveryId")
        writer.uuid(deliveryId)
        writer.field("firing", firing)
        writer.field("idempotencyKey", idempotencyKey)
        writer.key("kind")
        writer.string(kind.rawValue)
        writer.key("managed")
        writer.bool(managed)
        writer.field("message", message)
        writer.field("messageKeyId", messageKeyId)
        writer.key("mobileAppId")
        writer.uuid(mobileAppId)
        writer.field("quietHours", quietHours?.rawValue)
        writer.field("requestHash", requestHash)
        if let sendAt {
            writer.key("sendAt")
            writer.date(sendAt)
        }
        writer.field("sendAtLocal", sendAtLocal)
        writer.key("target")
        writer.beginObject()
        writer.field("audience", target.audience)
        writer.key("deviceTokens")
        writer.strings(target.deviceTokens)
        writer.key("userIds")
        writer.strings(target.userIds)
        writer.endObject()
        writer.field("ticketId", ticketId)
        writer.key("tracking")
        writer.bool(tracking)
        if let wave {
            writer.key("wave")
            writer.date(wave)
        }
        writer.endObject()
    }
}

extension NotificationKind: WireDecodable {}
extension QuietHoursMode: WireDecodable {}

extension NotificationTarget: WireDecodable {
    private enum Key: String, CaseIterable { case userIds, deviceTokens, audience }
    private static let keys = WireKeys<Key>()

    public init?(wire reader: inout WireReader) {
        var userIds: [String]?, deviceTokens: [String]?, audience: String?
        guard reader.object(Self.keys, { reader, key in
            switch key {
            case .userIds: reader.read(&userIds)
            case .deviceTokens: reader.read(&deviceTokens)
            case .audience: reader.readOptional(&audience)
            }
        }), let userIds, let deviceTokens else { return nil }
        self.init(userIds: userIds, deviceTokens: deviceTokens, audience: audience)
    }
}

extension LocalizedText: WireDecodable {
    private enum Key: String, CaseIterable { case title, body, text }
    private static let keys = WireKeys<Key>()

    public init?(wire reader: inout WireReader) {
        var title: String?, body: String?, text: String?
        guard reader.object(Self.keys, { reader, key in
            switch key {
            case .title: reader.readOptional(&title)
            case .body: reader.readOptional(&body)
            case .text: reader.readOptional(&text)
            }
        }) else { return nil }
        self.init(title: title, body: body, text: text)
    }
}

extension NotificationContent: WireDecodable {
    private enum Key: String, CaseIterable {
        case title, body, text, sound, badge, category, uri, mediaAttachmentUrl, contentAvailable, mutableContent, collapseKey, priority
        case custom, timeToLive, localized
    }
    private static let keys = WireKeys<Key>()

    public init?(wire reader: inout WireReader) {
        var content = NotificationContent()
        guard reader.object(Self.keys, { reader, key in
            switch key {
            case .title: reader.readOptional(&content.title)
            case .body: reader.readOptional(&content.body)
            case .text: reader.readOptional(&content.text)
            case .sound: reader.readOptional(&content.sound)
            case .badge: reader.readOptional(&content.badge)
            case .category: reader.readOptional(&content.category)
            case .uri: reader.readOptional(&content.uri)
            case .mediaAttachmentUrl: reader.readOptional(&content.mediaAttachmentUrl)
            case .contentAvailable: reader.readOptional(&content.contentAvailable)
            case .mutableContent: reader.readOptional(&content.mutableContent)
            case .collapseKey: reader.readOptional(&content.collapseKey)
            case .priority: reader.readOptional(&content.priority)
            case .custom: reader.readOptional(&content.custom)
            case .timeToLive: reader.readOptional(&content.timeToLive)
            case .localized: reader.readOptional(&content.localized)
            }
        }) else { return nil }
        self = content
    }
}

/// Read by hand: every send is decoded by the processor, and a scheduled one twice more (its
/// kept command read back for its firing, the firing applied).
extension NotificationRequested: WireDecodable {
    private enum Key: String, CaseIterable {
        case deliveryId, mobileAppId, target, content, managed, businessId, tracking, kind, ticketId, message, idempotencyKey
        case requestHash, messageKeyId, sendAt, firing, sendAtLocal, quietHours, wave, capCategory, capExempt
    }
    private static let keys = WireKeys<Key>()
    /// The ids of the value the optional fields are read into, before the required ones are.
    private static let unread = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))

    public init?(wire reader: inout WireReader) {
        var deliveryId: UUID?, mobileAppId: UUID?, target: NotificationTarget?, content: NotificationContent?
        var managed: Bool?, tracking: Bool?, kind: NotificationKind?
        var optional = NotificationRequested(deliveryId: Self.unread, mobileAppId: Self.unread, target: NotificationTarget(),
                                             content: NotificationContent())
        guard reader.object(Self.keys, { reader, key in
            switch key {
            case .deliveryId: reader.read(&deliveryId)
            case .mobileAppId: reader.read(&mobileAppId)
            case .target: reader.read(&target)
            case .content: reader.read(&content)
            case .managed: reader.read(&managed)
            case .tracking: reader.read(&tracking)
            case .kind: reader.read(&kind)
            case .businessId: reader.readOptional(&optional.businessId)
            case .ticketId: reader.readOptional(&optional.ticketId)
            case .message: reader.readOptional(&optional.message)
            case .idempotencyKey: reader.readOptional(&optional.idempotencyKey)
            case .requestHash: reader.readOptional(&optional.requestHash)
            case .messageKeyId: reader.readOptional(&optional.messageKeyId)
            case .sendAt: reader.readOptional(&optional.sendAt)
            case .firing: reader.readOptional(&optional.firing)
            case .sendAtLocal: reader.readOptional(&optional.sendAtLocal)
            case .quietHours: reader.readOptional(&optional.quietHours)
            case .wave: reader.readOptional(&optional.wave)
            case .capCategory: reader.readOptional(&optional.capCategory)
            case .capExempt: reader.readOptional(&optional.capExempt)
            }
        }), let deliveryId, let mobileAppId, let target, let content, let managed, let tracking, let kind else { return nil }
        self = optional
        (self.deliveryId, self.mobileAppId, self.target, self.content) = (deliveryId, mobileAppId, target, content)
        (self.managed, self.tracking, self.kind) = (managed, tracking, kind)
    }

    /// The send kept as `text` (`writePayload`, as a scheduled send's delivery keeps it), read by
    /// hand, else by `JSONDecoder`; nil when neither reads it.
    public init?(payload text: String) {
        var text = text
        guard let command = text.withUTF8({ NotificationRequested(whole: $0) })
            ?? (try? WireJSON.decoder().decode(NotificationRequested.self, from: Data(text.utf8))) else { return nil }
        self = command
    }
}

/// A scheduled send cancelled before its time (`DELETE /v1/apps/{id}/notifications/{deliveryId}`).
/// It goes to every part of the app, like the send; a part whose copy of the send is still
/// waiting drops it, and one where it fired (or never came) changes nothing.
public struct NotificationCancelled: AppScopedCommand, Equatable {
    public static let type = CommandType.notificationCancelled
    public static let topic = CommandTopic.notification

    @LowercaseUUID public var mobileAppId: UUID
    @LowercaseUUID public var deliveryId: UUID

    public init(mobileAppId: UUID, deliveryId: UUID) {
        self.mobileAppId = mobileAppId
        self.deliveryId = deliveryId
    }
}

/// A user's own settings of an app changed (`PUT /v1/apps/{id}/users/{userId}/settings`): their
/// quiet hours, which replace the app's for their devices (docs/API.md#quiet-hours). It goes to
/// every part of the app, on the sends' topic, so that every send after it in the log sees it.
public struct UserSettingsChanged: AppScopedCommand, Equatable {
    public static let type = CommandType.userSettingsChanged
    public static let topic = CommandTopic.notification

    @LowercaseUUID public var mobileAppId: UUID
    public var userId: String
    /// `QuietHours`, canonical; `""` removes the user's own (the app's apply again); nil leaves them.
    public var quietHours: String?

    public init(mobileAppId: UUID, userId: String, quietHours: String?) {
        self.mobileAppId = mobileAppId
        self.userId = userId
        self.quietHours = quietHours
    }
}

/// A device acknowledged a managed notification (BW `PUT /acks`): it is no longer pending on
/// that device, whichever of the two commands is applied first.
public struct NotificationAcknowledged: DeviceScopedCommand, Equatable {
    public static let type = CommandType.notificationAcknowledged
    public static let topic = CommandTopic.notification

    @LowercaseUUID public var mobileAppId: UUID
    /// The `nid` the device received.
    public var notificationId: String
    public var deviceToken: String
    public var businessId: String?

    public init(mobileAppId: UUID, notificationId: String, deviceToken: String, businessId: String? = nil) {
        self.mobileAppId = mobileAppId
        self.notificationId = notificationId
        self.deviceToken = deviceToken
        self.businessId = businessId
    }
}

extension NotificationAcknowledged: WireDecodable {
    private enum Key: String, CaseIterable { case mobileAppId, notificationId, deviceToken, businessId }
    private static let keys = WireKeys<Key>()

    public init?(wire reader: inout WireReader) {
        var mobileAppId: UUID?, notificationId: String?, deviceToken: String?, businessId: String?
        guard reader.object(Self.keys, { reader, key in
            switch key {
            case .mobileAppId: reader.read(&mobileAppId)
            case .notificationId: reader.read(&notificationId)
            case .deviceToken: reader.read(&deviceToken)
            case .businessId: reader.readOptional(&businessId)
            }
        }), let mobileAppId, let notificationId, let deviceToken else { return nil }
        self.init(mobileAppId: mobileAppId, notificationId: notificationId, deviceToken: deviceToken, businessId: businessId)
    }
}

extension NotificationAcknowledged: HandWrittenCommand {
    public func writePayload(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.field("businessId", businessId)
        writer.key("deviceToken")
        writer.string(deviceToken)
        writer.key("mobileAppId")
        writer.uuid(mobileAppId)
        writer.key("notificationId")
        writer.string(notificationId)
        writer.endObject()
    }
}
