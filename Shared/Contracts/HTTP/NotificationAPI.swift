import Foundation
import WireCodec

/// Wire shapes of the send API, `POST /v1/apps/{mobileAppId}/notifications`
/// (docs/API.md#sending-notifications, `Authorization: Bearer <api token>`). Every field is
/// optional here so that ingest can name the missing or invalid one in its 400; ingest refuses a
/// field not in `SendRequest.fields` with a 400 naming it (`ListedFields`).
public enum NotificationAPI {
    /// At most this many `custom` entries.
    public static let maxCustomEntries = 100
    /// The largest `badge` accepted.
    public static let maxBadge = 1_000_000
    /// The longest `timeToLive`, in seconds: 28 days, FCM's limit.
    public static let maxTimeToLive = 2_419_200
    /// The longest `collapseKey`, in bytes: APNs's limit for `apns-collapse-id`.
    public static let maxCollapseKeyBytes = 64

    /// The body of a send request.
    public struct SendRequest: Codable, Sendable, Equatable {
        // Target: exactly one of these. `to` is the target as one object, which audiences
        // extend; the flat fields are its older spellings and stay.
        public var to: Target?
        public var userId: String?
        public var userIds: [String]?
        public var deviceTokens: [String]?
        // Content.
        public var title: String?
        public var body: String?
        public var text: String?
        public var sound: String?
        public var badge: Int?
        public var category: String?
        public var uri: String?
        public var mediaAttachmentUrl: String?
        public var contentAvailable: Bool?
        public var mutableContent: Bool?
        public var collapseKey: String?
        /// Seconds the providers keep trying to reach the device, and the sender keeps retrying.
        public var timeToLive: Int?
        /// `high` or `normal`.
        public var priority: String?
        public var custom: [String: String]?
        /// The displayed text per locale (`pt-BR`, `pt`, `es`…); the fields above are the default
        /// (docs/API.md#localized-content).
        public var localized: [String: Text]?
        // Delivery options.
        /// Default false.
        public var managed: Bool?
        public var businessId: String?
        /// `"on"`/`"off"` (the `_acsDeliveryTracking` spelling) or `true`/`false`; default on.
        public var tracking: Scalar?
        /// `alert` (default), `ticket` or `im`.
        public var kind: String?
        /// Required for `kind: ticket`; a string, or an integer kept as its decimal text.
        public var ticketId: Scalar?
        /// Required for `kind: im`.
        public var message: String?
        // Time.
        /// When to send (RFC 3339, up to `maxScheduleAhead` ahead); absent or past: at once
        /// (docs/API.md#scheduled-sends).
        public var sendAt: String?
        /// A local date and time, applied in each device's time zone (the app's for a device
        /// without one): `2026-12-01T09:00` (docs/API.md#local-time-sends).
        public var sendAtLocal: String?
        /// `hold` (the default) or `drop` a push that would arrive in quiet hours
        /// (docs/API.md#quiet-hours).
        public var quietHours: String?
        /// The category the app's frequency caps count the push in, and whether no cap counts
        /// or stops it (docs/API.md#frequency-caps).
        public var capCategory: String?
        public var capExempt: Bool?

        /// The name of every field above, as the body spells it: the only ones a send may carry.
        public static let fields: Set<String> = [
            "to", "userId", "userIds", "deviceTokens", "title", "body", "text", "sound", "badge", "category", "uri",
            "mediaAttachmentUrl", "contentAvailable", "mutableContent", "collapseKey", "timeToLive", "priority", "custom",
            "localized", "managed", "businessId", "tracking", "kind", "ticketId", "message", "sendAt",
            "sendAtLocal", "quietHours", "capCategory", "capExempt",
        ]

        public init(to: Target? = nil, userId: String? = nil, userIds: [String]? = nil, deviceTokens: [String]? = nil, title: String? = nil,
                    body: String? = nil, text: String? = nil, sound: String? = nil, badge: Int? = nil, category: String? = nil,
                    uri: String? = nil, mediaAttachmentUrl: String? = nil, contentAvailable: Bool? = nil,
                    mutableContent: Bool? = nil, collapseKey: String? = nil, priority: String? = nil,
                    custom: [String: String]? = nil, managed: Bool? = nil, businessId: String? = nil, tracking: Scalar? = nil,
                    kind: String? = nil, ticketId: Scalar? = nil, message: String? = nil, timeToLive: Int? = nil,
                    localized: [String: Text]? = nil, sendAt: String? = nil, sendAtLocal: String? = nil, quietHours: String? = nil,
                    capCategory: String? = nil, capExempt: Bool? = nil) {
            self.capCategory = capCategory
            self.capExempt = capExempt
            self.sendAtLocal = sendAtLocal
            self.quietHours = quietHours
            self.localized = localized
            self.sendAt = sendAt
            self.to = to
            self.userId = userId
            self.userIds = userIds
            self.deviceTokens = deviceTokens
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
            self.timeToLive = timeToLive
            self.priority = priority
            self.custom = custom
            self.managed = managed
            self.businessId = businessId
            self.tracking = tracking
            self.kind = kind
            self.ticketId = ticketId
            self.message = message
        }
    }

    /// The most locales one send's `localized` may name.
    public static let maxLocalizations = 100

    /// One locale's text in a send's `localized`; it refuses a member it does not list.
    public struct Text: Codable, Sendable, Equatable {
        public var title: String?
        public var body: String?
        public var text: String?

        public init(title: String? = nil, body: String? = nil, text: String? = nil) {
            self.title = title
            self.body = body
            self.text = text
        }

        public init(from decoder: any Decoder) throws {
            try UnknownFields.refuse(in: decoder, listed: ["title", "body", "text"])
            let c = try decoder.container(keyedBy: CodingKeys.self)
            self.init(title: try c.decodeIfPresent(String.self, forKey: .title), body: try c.decodeIfPresent(String.self, forKey: .body),
                      text: try c.decodeIfPresent(String.self, forKey: .text))
        }
    }

    /// A send's `to`: exactly one member. `{"users": [...]}` is `userIds`, `{"devices": [...]}`
    /// is `deviceTokens`; `{"topic": "news"}`, `{"all": true}` and `{"audience": "…"}` choose the
    /// app's devices by their properties (docs/API.md#audiences).
    public struct Target: Codable, Sendable, Equatable {
        public var users: [String]?
        public var devices: [String]?
        public var topic: String?
        public var all: Bool?
        public var audience: String?

        /// The members a `to` may have.
        public static let fields: Set<String> = ["users", "devices", "topic", "all", "audience"]

        public init(users: [String]? = nil, devices: [String]? = nil, topic: String? = nil, all: Bool? = nil, audience: String? = nil) {
            self.users = users
            self.devices = devices
            self.topic = topic
            self.all = all
            self.audience = audience
        }
    }

    /// The `202` answer: the delivery id (lower-case UUID), which is the `_dId` of every payload
    /// and the `nid` of a managed notification.
    public struct SendAccepted: Codable, Sendable, Equatable {
        public var deliveryId: String
        /// When a scheduled send goes out (a local-time send: when its devices are chosen, the
        /// first time its local time is reached anywhere); absent for a send made at once.
        public var sendAt: Date?
        /// A local-time send's local date and time, canonical (`2026-12-01T09:00:00`).
        public var sendAtLocal: String?

        public init(deliveryId: UUID, sendAt: Date? = nil, sendAtLocal: String? = nil) {
            self.deliveryId = deliveryId.lowercasedString
            self.sendAt = sendAt
            self.sendAtLocal = sendAtLocal
        }
    }

    /// `PUT /v1/apps/{id}/users/{userId}/settings` and its `GET`: a user's own settings
    /// (docs/API.md#quiet-hours). A field absent from a `PUT` is left as it is.
    public struct UserSettings: Codable, Sendable, Equatable {
        /// `22:00-08:00` in each of the user's devices' zones, replacing the app's; `""` (in a
        /// `PUT`) removes them; absent (in a `GET`): the app's apply.
        public var quietHours: String?

        public init(quietHours: String? = nil) {
            self.quietHours = quietHours
        }
    }

    /// How far ahead a send may be scheduled: 30 days.
    public static let maxScheduleAhead: TimeInterval = 30 * 86_400

    /// `DELETE /v1/apps/{id}/notifications/{deliveryId}`: the scheduled send is cancelled.
    public struct Cancelled: Codable, Sendable, Equatable {
        public var deliveryId: String
        public var schedule: ScheduleState

        public init(deliveryId: UUID, schedule: ScheduleState) {
            self.deliveryId = deliveryId.lowercasedString
            self.schedule = schedule
        }
    }

    /// `GET /v1/apps/{id}/notifications?schedule=waiting`: one page of the app's scheduled sends
    /// in that state, the earliest first; `next` (the `after` of the following page) while more follow.
    public struct ScheduledList: Codable, Sendable, Equatable {
        public var notifications: [Scheduled]
        public var next: String?

        public init(notifications: [Scheduled], next: String?) {
            self.notifications = notifications
            self.next = next
        }
    }

    public struct Scheduled: Codable, Sendable, Equatable {
        public var deliveryId: String
        public var sendAt: Date
        public var schedule: ScheduleState
        /// When the send was accepted.
        public var createdAt: Date
        /// A local-time send's local date and time.
        public var sendAtLocal: String?
        /// Pushes held for a later time (while `sending`: `sendAt` is the next of those times).
        public var held: Int

        public init(deliveryId: UUID, sendAt: Date, schedule: ScheduleState, createdAt: Date, sendAtLocal: String? = nil, held: Int = 0) {
            self.sendAtLocal = sendAtLocal
            self.held = held
            self.deliveryId = deliveryId.lowercasedString
            self.sendAt = sendAt
            self.schedule = schedule
            self.createdAt = createdAt
        }
    }

    /// A JSON string, integer or boolean: the fields that senders write either way
    /// (`tracking: "off"` or `false`, `ticketId: "123"` or `123`). Ingest decides what each
    /// field accepts; any other JSON type is a decoding error naming the field.
    public enum Scalar: Codable, Sendable, Equatable {
        case string(String)
        case int(Int)
        case bool(Bool)

        public init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let value = try? container.decode(String.self) {
                self = .string(value)
            } else if let value = try? container.decode(Bool.self) {
                self = .bool(value)
            } else if let value = try? container.decode(Int.self) {
                self = .int(value)
            } else {
                throw DecodingError.typeMismatch(String.self, .init(
                    codingPath: decoder.codingPath, debugDescription: "expected a string, an integer or a boolean"))
            }
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .string(let value): try container.encode(value)
            case .int(let value): try container.encode(value)
            case .bool(let value): try container.encode(value)
            }
        }
    }
}
