import Contracts
import Foundation
import OutboundRendering
import WireCodec

/// The rules of a send request (docs/API.md#sending-notifications). Each failure is a 400 naming
/// the field; nothing is published for a request that fails any of them.
extension NotificationRequested {
    init(validating send: NotificationAPI.SendRequest, deliveryId: UUID, mobileAppId: UUID, now: Date = Date()) throws {
        let target = try Self.target(of: send)
        var content = try Self.content(of: send)
        let managed = send.managed ?? false

        var kind = NotificationKind.alert
        if let text = send.kind {
            guard let parsed = NotificationKind(rawValue: text.lowercased()) else {
                throw IngestError.badRequest("kind must be alert, ticket or im", field: "kind")
            }
            kind = parsed
        }
        // Only the field of the notification's kind is kept: the callback body carries one or the other.
        var ticketId: String?
        var message: String?
        switch kind {
        case .alert: break
        case .ticket: ticketId = try Self.ticketId(send.ticketId)
        case .im:
            let chat = try FieldRules.required(send.message, maxBytes: FieldLimits.messageBytes, field: "message")
            message = chat
            // A chat message is the alert text of its push unless the send gives a text of its own.
            if content.text == nil { content.text = chat }
        }

        // An audience reaches devices, not named users: the pending lists and badges of managed
        // notifications, and the per-user app callbacks of tickets and chats, are for named ones.
        if target.audience != nil, managed || kind != .alert {
            throw IngestError.badRequest(managed ? "a managed notification goes to named users or devices, not to an audience"
                                                 : "a \(kind.rawValue) goes to named users or devices, not to an audience",
                                         field: managed ? "managed" : "kind")
        }
        let hasAlert = content.title != nil || content.body != nil || content.text != nil
        if managed, !hasAlert {
            // The device's pending list (`ns`) shows the alert text of each managed notification.
            throw IngestError.badRequest("a managed notification needs a title, body or text", field: "title|body|text", code: .fieldMissing)
        }
        if !hasAlert, content.contentAvailable != true {
            throw IngestError.badRequest("one of title, body or text is required (or contentAvailable: true for a silent push)",
                                         field: "title|body|text", code: .fieldMissing)
        }
        let tracking = try Self.tracking(send.tracking)
        if let businessId = send.businessId { try FieldRules.bounded(businessId, maxBytes: FieldLimits.shortTextBytes, field: "businessId") }
        if let ticketId { try FieldRules.bounded(ticketId, maxBytes: FieldLimits.shortTextBytes, field: "ticketId") }

        var quietHours: QuietHoursMode?
        if let text = send.quietHours {
            guard let mode = QuietHoursMode(rawValue: text) else {
                throw IngestError.badRequest("quietHours must be hold or drop", field: "quietHours")
            }
            quietHours = mode
        }
        if let category = send.capCategory, !FrequencyCap.isCategory(category) {
            throw IngestError.badRequest("capCategory is 1 to \(FrequencyCap.maxCategoryBytes) of a-z, 0-9, '-', '_' and '.'",
                                         field: "capCategory")
        }
        let local = try Self.sendAtLocal(send.sendAtLocal, sendAt: send.sendAt, now: now)
        // A local-time send's time is when it is first reached anywhere (nil: at once).
        let sendAt = if let local { local.sendAt } else { try Self.sendAt(send.sendAt, now: now) }
        self.init(deliveryId: deliveryId, mobileAppId: mobileAppId, target: target, content: content, managed: managed,
                  businessId: send.businessId.nonEmpty, tracking: tracking, kind: kind, ticketId: ticketId, message: message,
                  sendAt: sendAt, sendAtLocal: local?.time.description,
                  quietHours: quietHours, capCategory: send.capCategory, capExempt: send.capExempt == true ? true : nil)
        try checkPayloadSize()
    }

    /// A wall-clock time (`LocalDateTime`) that is still ahead in some zone and at most
    /// `NotificationAPI.maxScheduleAhead` away anywhere, with the time its devices are chosen at:
    /// when it is first reached anywhere (UTC+14), or nil (at once) when that has come.
    static func sendAtLocal(_ text: String?, sendAt: String?, now: Date) throws -> (time: LocalDateTime, sendAt: Date?)? {
        guard let text else { return nil }
        guard sendAt == nil else {
            throw IngestError.badRequest("give sendAt or sendAtLocal, not both", field: "sendAtLocal")
        }
        guard let time = LocalDateTime(text) else {
            throw IngestError.badRequest("sendAtLocal must be a local date and time without a zone, such as 2026-12-01T09:00",
                                         field: "sendAtLocal")
        }
        guard time.latestInstant > now else {
            throw IngestError.badRequest("sendAtLocal \(time) has passed in every time zone", field: "sendAtLocal")
        }
        guard time.earliestInstant <= now.addingTimeInterval(NotificationAPI.maxScheduleAhead) else {
            throw IngestError.badRequest("sendAtLocal may be at most \(Int(NotificationAPI.maxScheduleAhead / 86_400)) days ahead",
                                         field: "sendAtLocal")
        }
        let first = time.earliestInstant
        return (time, first > now.addingTimeInterval(1) ? first : nil)
    }

    /// A time at least a second ahead and at most `NotificationAPI.maxScheduleAhead`; nil (sent
    /// at once) for none, or for a time that has come.
    static func sendAt(_ text: String?, now: Date) throws -> Date? {
        guard let text else { return nil }
        guard let time = RFC3339.date(from: text) else {
            throw IngestError.badRequest("sendAt must be an RFC 3339 time, such as 2026-12-01T09:00:00Z", field: "sendAt")
        }
        guard time <= now.addingTimeInterval(NotificationAPI.maxScheduleAhead) else {
            throw IngestError.badRequest("sendAt may be at most \(Int(NotificationAPI.maxScheduleAhead / 86_400)) days ahead", field: "sendAt")
        }
        // To the millisecond, as the log keeps times.
        return time > now.addingTimeInterval(1) ? Date(timeIntervalSince1970: Double(RFC3339.milliseconds(time)) / 1000) : nil
    }

    /// Both platform payloads must fit APNs' and FCM's 4096 bytes, with the longest message id and
    /// badge the processor could give a device, so that no device's record is refused later.
    /// Every locale's variant is checked the same way, and a variant that cannot fit is named.
    private func checkPayloadSize() throws {
        var writer = JSONWriter(capacity: PushPayload.maxBytes)
        for variant in [nil] + (content.localized?.keys.sorted() ?? []) {
            var rendered = self
            rendered.content = content.localized(variant)
            for platform in Platform.allCases {
                writer.reset()
                PushPayload.render(rendered, platform: platform, messageId: MessageId.make(deliveryId: deliveryId, index: 999_999_999),
                                   sentAt: Date(), managedBadge: managed ? 999_999_999 : nil, into: &writer)
                guard writer.bytes.count <= PushPayload.maxBytes else {
                    let service = platform == .ios ? "APNs" : "FCM"
                    throw IngestError.badRequest("the \(service) payload\(variant.map { " of \($0)" } ?? "") would be \(writer.bytes.count) bytes; "
                                                 + "at most \(PushPayload.maxBytes) are allowed", field: variant.map { "localized.\($0)" } ?? "payload")
                }
            }
        }
    }

    /// Exactly one of `to`, `userId`, `userIds` or `deviceTokens`, and `to` has exactly one
    /// member; a list has 1…1000 non-empty elements.
    private static func target(of send: NotificationAPI.SendRequest) throws -> NotificationTarget {
        let given = [send.to != nil, send.userId != nil, send.userIds != nil, send.deviceTokens != nil].filter { $0 }.count
        guard given == 1 else {
            throw IngestError.badRequest(given == 0 ? "a target is required: to, userId, userIds or deviceTokens"
                                                    : "send only one of to, userId, userIds or deviceTokens",
                                         field: "to|userId|userIds|deviceTokens", code: given == 0 ? .fieldMissing : .fieldInvalid)
        }
        if let userId = send.userId {
            return NotificationTarget(userIds: [try FieldRules.required(userId, maxBytes: FieldLimits.userIdBytes, field: "userId")])
        }
        if let to = send.to {
            let members = [to.users != nil, to.devices != nil, to.topic != nil, to.all != nil, to.audience != nil].filter { $0 }.count
            guard members == 1 else {
                throw IngestError.badRequest("to has exactly one of users, devices, topic, all or audience", field: "to",
                                             code: members == 0 ? .fieldMissing : .fieldInvalid)
            }
            if let users = to.users { return try userIds(users, field: "to.users") }
            if let devices = to.devices { return try deviceTokens(devices, field: "to.devices") }
            if let topic = to.topic {
                guard DeviceTopic.isValid(topic) else {
                    throw IngestError.badRequest("a topic has 1 to \(DeviceTopic.maxBytes) bytes of letters, digits, _ - . and :",
                                                 field: "to.topic")
                }
                return NotificationTarget(audience: AudienceExpression.topic(topic).description)
            }
            if let all = to.all {
                guard all else { throw IngestError.badRequest("all must be true: to reach every device of the app", field: "to.all") }
                return NotificationTarget(audience: AudienceExpression.all.description)
            }
            return NotificationTarget(audience: try audience(to.audience ?? "", field: "to.audience").description)
        }
        if let listed = send.userIds { return try userIds(listed, field: "userIds") }
        return try deviceTokens(send.deviceTokens ?? [], field: "deviceTokens")
    }

    /// An audience expression (`AudienceExpression`); a `400 audience_invalid` says where it
    /// goes wrong (`position`, a UTF-8 byte offset).
    static func audience(_ text: String, field: String) throws -> AudienceExpression {
        do {
            let expression = try AudienceExpression.parse(text)
            // The command carries the canonical text, which the processor parses again; it may
            // be longer than what was sent (`&&` is ` and `).
            guard expression.description.utf8.count <= AudienceExpression.maxBytes else {
                throw IngestError.rejected(.badRequest, Problem(
                    error: "the audience's canonical form (and, or, not in words) would be over \(AudienceExpression.maxBytes) bytes",
                    field: field, code: .audienceInvalid, position: 0))
            }
            return expression
        } catch let error as AudienceExpression.SyntaxError {
            throw IngestError.rejected(.badRequest, Problem(error: "\(error.message), at byte \(error.position) of the audience",
                                                           field: field, code: .audienceInvalid, position: error.position))
        }
    }

    private static func userIds(_ userIds: [String], field: String) throws -> NotificationTarget {
        try checkListSize(userIds.count, field: field)
        for (index, userId) in userIds.enumerated() {
            _ = try FieldRules.required(userId, maxBytes: FieldLimits.userIdBytes, field: "\(field)[\(index)]")
        }
        return NotificationTarget(userIds: userIds)
    }

    private static func deviceTokens(_ deviceTokens: [String], field: String) throws -> NotificationTarget {
        try checkListSize(deviceTokens.count, field: field)
        for (index, token) in deviceTokens.enumerated() {
            _ = try FieldRules.deviceToken(token, field: "\(field)[\(index)]")
        }
        return NotificationTarget(deviceTokens: deviceTokens)
    }

    private static func checkListSize(_ count: Int, field: String) throws {
        guard (1...NotificationTarget.maxTargets).contains(count) else {
            throw IngestError.badRequest("\(field) must have 1…\(NotificationTarget.maxTargets) elements, not \(count)", field: field)
        }
    }

    /// The content fields; an empty string counts as not sent (nothing is rendered for it).
    private static func content(of send: NotificationAPI.SendRequest) throws -> NotificationContent {
        if let badge = send.badge, !(0...NotificationAPI.maxBadge).contains(badge) {
            throw IngestError.badRequest("badge must be between 0 and \(NotificationAPI.maxBadge)", field: "badge")
        }
        var priority: NotificationPriority?
        if let text = send.priority {
            guard let parsed = NotificationPriority(rawValue: text.lowercased()) else {
                throw IngestError.badRequest("priority must be high, normal or critical", field: "priority")
            }
            priority = parsed
        }
        if let ttl = send.timeToLive, !(1...NotificationAPI.maxTimeToLive).contains(ttl) {
            throw IngestError.badRequest("timeToLive must be between 1 and \(NotificationAPI.maxTimeToLive) seconds", field: "timeToLive")
        }
        if let key = send.collapseKey, key.utf8.count > NotificationAPI.maxCollapseKeyBytes {
            throw IngestError.badRequest("collapseKey is \(key.utf8.count) bytes; at most \(NotificationAPI.maxCollapseKeyBytes) are allowed",
                                         field: "collapseKey")
        }
        // Deep links use the app's own schemes, so any non-empty text is a uri.
        if let uri = send.uri, uri.isEmpty {
            throw IngestError.badRequest("uri must not be empty", field: "uri")
        }
        if let url = send.mediaAttachmentUrl {
            _ = try FieldRules.callbackURL(url, field: "mediaAttachmentUrl")
        }
        if let custom = send.custom {
            try checkCustom(custom)
        }
        return NotificationContent(
            title: send.title.nonEmpty, body: send.body.nonEmpty, text: send.text.nonEmpty, sound: send.sound.nonEmpty,
            badge: send.badge, category: send.category.nonEmpty, uri: send.uri, mediaAttachmentUrl: send.mediaAttachmentUrl,
            contentAvailable: send.contentAvailable, mutableContent: send.mutableContent, collapseKey: send.collapseKey.nonEmpty,
            priority: priority, custom: send.custom, timeToLive: send.timeToLive, localized: try localized(send.localized))
    }

    /// The text per locale: keys in canonical form, each once, each with some text; at most
    /// `NotificationAPI.maxLocalizations` (docs/API.md#localized-content).
    private static func localized(_ given: [String: NotificationAPI.Text]?) throws -> [String: LocalizedText]? {
        guard let given else { return nil }
        guard (1...NotificationAPI.maxLocalizations).contains(given.count) else {
            throw IngestError.badRequest("localized has \(given.count) locales; give 1…\(NotificationAPI.maxLocalizations)", field: "localized")
        }
        var localized: [String: LocalizedText] = [:]
        for key in given.keys.sorted() {
            let field = "localized." + (key.utf8.count > 40 ? String(key.prefix(40)) + "…" : key)
            guard let locale = DeviceLocale.canonical(key) else {
                throw IngestError.badRequest("a key of localized is a locale such as pt-BR or pt; the default text is the send's own title, "
                                             + "body and text", field: field)
            }
            guard localized[locale] == nil else {
                throw IngestError.badRequest("localized names \(locale) twice", field: field)
            }
            let text = given[key]!
            let variant = LocalizedText(title: text.title.nonEmpty, body: text.body.nonEmpty, text: text.text.nonEmpty)
            guard variant.title != nil || variant.body != nil || variant.text != nil else {
                throw IngestError.badRequest("a locale's text needs a title, body or text", field: field, code: .fieldMissing)
            }
            localized[locale] = variant
        }
        return localized
    }

    /// At most 100 entries, non-empty keys, none of `PushPayload.reservedCustomKeys` (the payload's own keys).
    private static func checkCustom(_ custom: [String: String]) throws {
        guard custom.count <= NotificationAPI.maxCustomEntries else {
            throw IngestError.badRequest("custom has \(custom.count) entries; at most \(NotificationAPI.maxCustomEntries) are allowed",
                                         field: "custom")
        }
        for key in custom.keys.sorted() {
            if key.isEmpty {
                throw IngestError.badRequest("custom keys must not be empty", field: "custom")
            }
            if PushPayload.reservedCustomKeys.contains(key) {
                throw IngestError.badRequest("\(key) is reserved: the rendered payload has its own value at this key",
                                             field: "custom.\(key)")
            }
        }
    }

    /// `"on"`/`"off"` (any case) or `true`/`false`; absent means on.
    private static func tracking(_ value: NotificationAPI.Scalar?) throws -> Bool {
        switch value {
        case nil: return true
        case .bool(let on): return on
        case .string(let text) where text.lowercased() == "on": return true
        case .string(let text) where text.lowercased() == "off": return false
        default: throw IngestError.badRequest("tracking must be \"on\", \"off\", true or false", field: "tracking")
        }
    }

    /// A non-empty string, or an integer kept as its decimal text (the callback's `ticket_id` is then `"123"`).
    private static func ticketId(_ value: NotificationAPI.Scalar?) throws -> String {
        switch value {
        case nil: throw IngestError.badRequest("ticketId is required for kind ticket", field: "ticketId", code: .fieldMissing)
        case .string(let text) where !text.isEmpty: return text
        case .int(let number): return String(number)
        default: throw IngestError.badRequest("ticketId must be a non-empty string or an integer", field: "ticketId")
        }
    }
}
