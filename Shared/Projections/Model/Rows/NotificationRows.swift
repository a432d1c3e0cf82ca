import Contracts
import Foundation

/// A managed notification a device has not acknowledged yet. The device's badge is the number of
/// these rows.
public struct PendingNotificationRow: Sendable, Equatable, Codable {
    public var appId: UUID
    public var deviceToken: String
    public var notificationId: String
    public var deliveryId: UUID
    /// When the notification was sent (its command's time); `ns` lists oldest first.
    public var sentAt: Date
    /// The alert text (text, else body, else title).
    public var text: String
    public var businessId: String?

    public init(appId: UUID, deviceToken: String, notificationId: String, deliveryId: UUID, sentAt: Date, text: String,
                businessId: String?) {
        self.appId = appId
        self.deviceToken = deviceToken
        self.notificationId = notificationId
        self.deliveryId = deliveryId
        self.sentAt = sentAt
        self.text = text
        self.businessId = businessId
    }

    public var key: PendingKey { PendingKey(appId: appId, deviceToken: deviceToken, notificationId: notificationId) }
}

/// A device's acknowledgement of a notification. Kept whether or not the notification was
/// pending when the ack was applied, so that a notification applied after its ack (they
/// travel on different partitions) is not made pending, and so that the final tables do not
/// depend on which came first.
public struct AckRow: Sendable, Equatable, Codable {
    public var appId: UUID
    public var deviceToken: String
    public var notificationId: String
    public var businessId: String?
    public var ackedAt: Date

    public init(appId: UUID, deviceToken: String, notificationId: String, businessId: String?, ackedAt: Date) {
        self.appId = appId
        self.deviceToken = deviceToken
        self.notificationId = notificationId
        self.businessId = businessId
        self.ackedAt = ackedAt
    }

    public var key: PendingKey { PendingKey(appId: appId, deviceToken: deviceToken, notificationId: notificationId) }
}

/// One applied send request: what it was and how many devices it reached.
public struct DeliveryRow: Sendable, Equatable, Codable {
    public var appId: UUID
    public var deliveryId: UUID
    public var kind: NotificationKind
    public var key: DeliveryKey { DeliveryKey(appId: appId, deliveryId: deliveryId, part: part) }
    public var managed: Bool
    public var tracking: Bool
    /// Outbound records written (one per resolved device).
    public var sent: Int
    public var createdAt: Date
    /// Devices whose last reported outcome (`DeliveryOutcomeRow`) is each of these.
    public var delivered: Int
    public var failed: Int
    public var unregistered: Int
    public var expired: Int
    /// The send's `Idempotency-Key`, nil for a send without one (docs/API.md#idempotency-keys).
    public var idempotencyKey: String?
    /// `IdempotencyKeys.requestHash` of the first send's body, set with `idempotencyKey`.
    public var requestHash: String?
    /// Later sends with the same key: with the same body (`duplicates`) or another (`conflicts`).
    /// Neither was sent.
    public var duplicates: Int
    public var conflicts: Int
    /// The part of the app that applied the send and counts its devices (`AppPart`): a
    /// delivery's figures are the sum over its parts' rows (`summed`).
    public var part: Int
    /// A localized send's devices per locale it was sent in (`NotificationContent.variant`,
    /// `default` for the send's own text); nil for a send without localized text.
    public var sentByLocale: [String: Int]?
    /// A localized send's devices per locale by their last reported outcome, as `delivered`,
    /// `failed`, `unregistered` and `expired` count them all; nil until one is reported.
    public var outcomesByLocale: [String: OutcomeCounts]?
    /// A scheduled send's time (`NotificationRequested.sendAt`); nil for a send made at once.
    public var sendAt: Date?
    /// Where a scheduled send stands; nil for a send made at once.
    public var schedule: ScheduleState?
    /// A waiting send's command payload, as its firing repeats it (`WireJSON`); nil once it
    /// fired, was cancelled or expired.
    public var scheduledCommand: String?
    /// A local-time send's wall-clock time (`NotificationRequested.sendAtLocal`); nil otherwise.
    public var sendAtLocal: String?
    /// Its pushes held for a later time (`HeldPushRow`: a local-time send's later zones, quiet
    /// hours), dropped in quiet hours, and held ones a cancel dropped.
    public var held: Int
    public var dropped: Int
    public var cancelled: Int
    /// Its pushes over a frequency cap of the app (`FrequencyCap`), not sent.
    public var capped: Int
    /// The times its held pushes go out, ascending; the first is `sendAt` while it is `sending`.
    public var waves: [Date]

    public init(appId: UUID, deliveryId: UUID, kind: NotificationKind, managed: Bool, tracking: Bool, sent: Int, createdAt: Date,
                delivered: Int = 0, failed: Int = 0, unregistered: Int = 0, idempotencyKey: String? = nil,
                requestHash: String? = nil, duplicates: Int = 0, conflicts: Int = 0, part: Int = 0, sentByLocale: [String: Int]? = nil,
                outcomesByLocale: [String: OutcomeCounts]? = nil, expired: Int = 0, sendAt: Date? = nil,
                schedule: ScheduleState? = nil, scheduledCommand: String? = nil, sendAtLocal: String? = nil, held: Int = 0,
                dropped: Int = 0, cancelled: Int = 0, waves: [Date] = [], capped: Int = 0) {
        self.capped = capped
        self.sendAtLocal = sendAtLocal
        self.held = held
        self.dropped = dropped
        self.cancelled = cancelled
        self.waves = waves
        self.expired = expired
        self.sendAt = sendAt
        self.schedule = schedule
        self.scheduledCommand = scheduledCommand
        self.sentByLocale = sentByLocale
        self.outcomesByLocale = outcomesByLocale
        self.appId = appId
        self.part = part
        self.deliveryId = deliveryId
        self.kind = kind
        self.managed = managed
        self.tracking = tracking
        self.sent = sent
        self.createdAt = createdAt
        self.delivered = delivered
        self.failed = failed
        self.unregistered = unregistered
        self.idempotencyKey = idempotencyKey
        self.requestHash = requestHash
        self.duplicates = duplicates
        self.conflicts = conflicts
    }

    /// The delivery as its readers see it: the parts' rows (`part`) in one, its counts summed;
    /// nil for none.
    public static func summed(_ rows: some Sequence<DeliveryRow>) -> DeliveryRow? {
        var total: DeliveryRow?
        for row in rows.sorted(by: { $0.part < $1.part }) {
            guard var sum = total else {
                total = row
                total?.part = 0
                continue
            }
            sum.sent += row.sent
            sum.delivered += row.delivered
            sum.failed += row.failed
            sum.unregistered += row.unregistered
            sum.expired += row.expired
            sum.duplicates += row.duplicates
            sum.conflicts += row.conflicts
            sum.held += row.held
            sum.dropped += row.dropped
            sum.cancelled += row.cancelled
            sum.capped += row.capped
            sum.waves = Array(Set(sum.waves + row.waves)).sorted()
            if let counts = row.sentByLocale {
                sum.sentByLocale = (sum.sentByLocale ?? [:]).merging(counts, uniquingKeysWith: +)
            }
            if let counts = row.outcomesByLocale {
                sum.outcomesByLocale = (sum.outcomesByLocale ?? [:]).merging(counts, uniquingKeysWith: +)
            }
            total = sum
        }
        return total
    }

    /// Whether this part's row counts the push of this message index: one of its part, within
    /// the part's sent count.
    public func sentTo(messageIndex index: Int) -> Bool {
        AppParts.part(ofMessageIndex: index) == part && AppParts.place(ofMessageIndex: index) < sent
    }

    /// Moves one device from the count of `from` (nil: not counted yet) to that of `to`, and,
    /// for a localized send, in the counts of the variant `locale` it got (one the send was
    /// sent in: any other is not counted per locale).
    public mutating func recount(from: DeliveryOutcome?, to: DeliveryOutcome, locale: String? = nil) {
        outcomes.recount(from: from, to: to)
        guard let locale, sentByLocale?[locale] != nil else { return }
        outcomesByLocale = outcomesByLocale ?? [:]
        outcomesByLocale![locale, default: OutcomeCounts()].recount(from: from, to: to)
    }

    /// `delivered`, `failed`, `unregistered` and `expired` together.
    public var outcomes: OutcomeCounts {
        get { OutcomeCounts(delivered: delivered, failed: failed, unregistered: unregistered, expired: expired) }
        set {
            delivered = newValue.delivered
            failed = newValue.failed
            unregistered = newValue.unregistered
            expired = newValue.expired
        }
    }

    public subscript(count outcome: DeliveryOutcome) -> Int {
        get { outcomes[outcome] }
        set { outcomes[outcome] = newValue }
    }
}

/// A device's outcome of one delivery, as the sender last reported it. The device is named by
/// its message index within the delivery (`MessageId`), as tracking rows name it: a small key
/// whatever the token's length, in the order the delivery reached its devices.
public struct DeliveryOutcomeRow: Sendable, Equatable, Codable {
    public var appId: UUID
    public var deliveryId: UUID
    public var messageIndex: Int
    public var deviceToken: String
    public var outcome: DeliveryOutcome
    public var reason: String?
    /// The report's command time.
    public var reportedAt: Date

    public init(appId: UUID, deliveryId: UUID, messageIndex: Int, deviceToken: String, outcome: DeliveryOutcome, reason: String?,
                reportedAt: Date) {
        self.appId = appId
        self.deliveryId = deliveryId
        self.messageIndex = messageIndex
        self.deviceToken = deviceToken
        self.outcome = outcome
        self.reason = reason
        self.reportedAt = reportedAt
    }

    public var key: DeliveryOutcomeKey { DeliveryOutcomeKey(appId: appId, deliveryId: deliveryId, messageIndex: messageIndex) }
}

public struct DeliveryOutcomeKey: Hashable, Sendable, Codable {
    public var appId: UUID
    public var deliveryId: UUID
    public var messageIndex: Int

    public init(appId: UUID, deliveryId: UUID, messageIndex: Int) {
        self.appId = appId
        self.deliveryId = deliveryId
        self.messageIndex = messageIndex
    }
}

/// A push a send decided and holds for a later time: its device's wave of a local-time send, or
/// the end of its quiet hours (docs/API.md#local-time-sends). Its delivery's firing of that time
/// (`NotificationRequested.wave`) sends it, to the device as it is then.
public struct HeldPushRow: Sendable, Equatable, Codable {
    public var appId: UUID
    public var deliveryId: UUID
    /// The part of the app that holds it (`DeliveryRow.part`).
    public var part: Int
    public var deviceToken: String
    /// The user the device had when the push was held: one the device has left gets nothing.
    public var userId: String
    /// When it goes out.
    public var releaseAt: Date
    /// When it was due: the send's time, or the device's local time of a local-time send. Its
    /// time to live counts from there.
    public var dueAt: Date
    /// A managed send's badge for the device: its notification was made pending when it was held.
    public var badge: Int?

    public init(appId: UUID, deliveryId: UUID, part: Int, deviceToken: String, userId: String, releaseAt: Date, dueAt: Date,
                badge: Int? = nil) {
        self.badge = badge
        self.appId = appId
        self.deliveryId = deliveryId
        self.part = part
        self.deviceToken = deviceToken
        self.userId = userId
        self.releaseAt = releaseAt
        self.dueAt = dueAt
    }

    public var key: HeldPushKey { HeldPushKey(delivery: DeliveryKey(appId: appId, deliveryId: deliveryId, part: part), deviceToken: deviceToken) }
}

/// The users a send to an audience reached in an app part, as its caps count them
/// (`CountedSend`; its time and category are in `AppRow.countedSends`).
public struct CountedSendRow: Sendable, Equatable {
    public var appId: UUID
    public var part: Int
    /// Its name, as `CappedPushes` names a delivery.
    public var delivery: String
    /// `UserDigest`s, sorted.
    public var users: [UInt64]

    public init(appId: UUID, part: Int, delivery: String, users: [UInt64]) {
        (self.appId, self.part, self.delivery, self.users) = (appId, part, delivery, users)
    }

    public var key: CountedSendKey { CountedSendKey(appId: appId, part: part, delivery: delivery) }
}

public struct CountedSendKey: Sendable, Hashable {
    public var appId: UUID
    public var part: Int
    public var delivery: String

    public init(appId: UUID, part: Int, delivery: String) {
        (self.appId, self.part, self.delivery) = (appId, part, delivery)
    }
}

/// A user's own settings of an app, as one part keeps them, and the pushes the app's caps counted
/// for the user in that part (docs/API.md#frequency-caps).
public struct UserSettingsRow: Sendable, Equatable, Codable {
    public var appId: UUID
    public var userId: String
    public var part: Int
    /// `QuietHours`, canonical; nil: the app's.
    public var quietHours: String?
    /// `CappedPushes.text`; nil: none counted.
    public var capped: String?

    public init(appId: UUID, userId: String, part: Int, quietHours: String? = nil, capped: String? = nil) {
        self.appId = appId
        self.userId = userId
        self.part = part
        self.quietHours = quietHours
        self.capped = capped
    }

    public var key: UserPartKey { UserPartKey(user: UserKey(appId: appId, userId: userId), part: part) }
}

/// A user of an app in one part.
public struct UserPartKey: Hashable, Sendable, Codable {
    public var user: UserKey
    public var part: Int

    public init(user: UserKey, part: Int) {
        self.user = user
        self.part = part
    }
}

/// Identifies one held push.
public struct HeldPushKey: Hashable, Sendable, Codable {
    public var delivery: DeliveryKey
    public var deviceToken: String

    public init(delivery: DeliveryKey, deviceToken: String) {
        self.delivery = delivery
        self.deviceToken = deviceToken
    }
}

/// The held pushes of one delivery part that go out at one time.
public struct HeldWave: Hashable, Sendable {
    public var delivery: DeliveryKey
    public var releaseAt: Date

    public init(delivery: DeliveryKey, releaseAt: Date) {
        self.delivery = delivery
        self.releaseAt = releaseAt
    }
}
