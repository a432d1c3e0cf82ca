import Foundation
import WireCodec

/// The engagement tracking routes (docs/API.md#engagement-tracking).
public enum TrackingAPI {
    /// The most events one `POST …/tracking` may carry.
    public static let maxEvents = 1000
    /// The longest broadlogId accepted; Pushline's own are at most 36 bytes.
    public static let maxBroadlogIdBytes = 128

    /// One event of `POST /v1/apps/{id}/tracking`, as the tracking SDK sends it: `deliveryId`
    /// (`_dId`), `broadlogId` (`_mId`), `action` `"1"`, `"2"`, `"7"` (or the same integers). Fields
    /// are optional here so that ingest can name the one that is missing.
    public struct Event: Codable, Sendable, Equatable {
        public var deliveryId: String?
        public var broadlogId: String?
        public var action: NotificationAPI.Scalar?

        public init(deliveryId: String? = nil, broadlogId: String? = nil, action: NotificationAPI.Scalar? = nil) {
            self.deliveryId = deliveryId
            self.broadlogId = broadlogId
            self.action = action
        }
    }

    /// The `202` answer: how many events were taken.
    public struct Accepted: Codable, Sendable, Equatable {
        public var accepted: Int

        public init(accepted: Int) {
            self.accepted = accepted
        }
    }

    /// `GET /v1/apps/{id}/deliveries/{deliveryId}`: the delivery's statistics.
    ///
    /// `impressions`, `clicks` and `opens` count distinct devices (broadlogIds): a device that
    /// reports the same action again adds to `repeatsIgnored` instead. The rates are 0 when their
    /// denominator is 0, and may exceed 1 (an open or a click can be reported without an
    /// impression: iOS does not always report impressions).
    public struct DeliveryStats: Codable, Sendable, Equatable {
        public var deliveryId: String
        public var sent: Int
        public var impressions: Int
        public var clicks: Int
        public var opens: Int
        public var repeatsIgnored: Int
        /// clicks / impressions.
        public var clickThroughRate: Double
        /// opens / sent.
        public var openRate: Double
        /// Devices by the last outcome the sender reported of their push (docs/API.md#delivery-outcomes);
        /// `sent` minus their sum have none reported yet.
        public var delivered: Int
        public var failed: Int
        public var unregistered: Int
        /// Devices whose push expired before a provider took it (the send's `timeToLive`, else
        /// the sender's default).
        public var expired: Int
        /// The send's `Idempotency-Key` (absent without one), and the later sends with it within
        /// its window: the same body (`duplicates`) or another (`conflicts`); none was sent
        /// (docs/API.md#idempotency-keys).
        public var idempotencyKey: String?
        public var duplicates: Int
        public var conflicts: Int
        /// A localized send's devices per locale whose text they got (`default`: the send's own);
        /// absent for a send without localized text (docs/API.md#localized-content).
        public var sentByLocale: [String: Int]?
        /// A localized send's devices per locale by the last outcome reported of their push, as
        /// `delivered`, `failed`, `unregistered` and `expired` count them all; absent until one is
        /// reported.
        public var outcomesByLocale: [String: OutcomeCounts]?
        /// A scheduled send's time and where it stands (docs/API.md#scheduled-sends); absent for
        /// a send made at once.
        public var sendAt: Date?
        public var schedule: ScheduleState?
        /// A local-time send's local date and time (docs/API.md#local-time-sends).
        public var sendAtLocal: String?
        /// Devices whose push is held for a later time (a local-time send's later zones, the end
        /// of quiet hours), dropped in quiet hours, and held ones a cancel dropped
        /// (docs/API.md#quiet-hours). `sent` counts the pushes that went.
        public var held: Int
        public var dropped: Int
        public var cancelled: Int
        /// Devices whose push was over a frequency cap of the app (docs/API.md#frequency-caps).
        public var capped: Int
        /// The times the held pushes go out, the earliest first; absent when none are held.
        public var waves: [Date]?

        public init(deliveryId: UUID, sent: Int, impressions: Int, clicks: Int, opens: Int, repeatsIgnored: Int,
                    delivered: Int = 0, failed: Int = 0, unregistered: Int = 0, idempotencyKey: String? = nil,
                    duplicates: Int = 0, conflicts: Int = 0, sentByLocale: [String: Int]? = nil,
                    outcomesByLocale: [String: OutcomeCounts]? = nil, expired: Int = 0, sendAt: Date? = nil,
                    schedule: ScheduleState? = nil, sendAtLocal: String? = nil, held: Int = 0, dropped: Int = 0, cancelled: Int = 0,
                    waves: [Date]? = nil, capped: Int = 0) {
            self.capped = capped
            self.sendAtLocal = sendAtLocal
            self.held = held
            self.dropped = dropped
            self.cancelled = cancelled
            self.waves = waves
            self.expired = expired
            self.sendAt = sendAt
            self.schedule = schedule
            self.sentByLocale = sentByLocale
            self.outcomesByLocale = outcomesByLocale
            self.deliveryId = deliveryId.lowercasedString
            self.sent = sent
            self.impressions = impressions
            self.clicks = clicks
            self.opens = opens
            self.repeatsIgnored = repeatsIgnored
            clickThroughRate = Self.ratio(clicks, impressions)
            openRate = Self.ratio(opens, sent)
            self.delivered = delivered
            self.failed = failed
            self.unregistered = unregistered
            self.idempotencyKey = idempotencyKey
            self.duplicates = duplicates
            self.conflicts = conflicts
        }

        private static func ratio(_ a: Int, _ b: Int) -> Double { b == 0 ? 0 : Double(a) / Double(b) }
    }

    /// `GET /v1/apps/{id}/deliveries/{deliveryId}/outcomes?outcome=&limit=&after=`: one page of
    /// the delivery's devices with a reported outcome, in the order the delivery reached them;
    /// `next` (the `after` of the following page) is present while more follow.
    public struct OutcomeList: Codable, Sendable, Equatable {
        public var outcomes: [Outcome]
        public var next: Int?
        public init(outcomes: [Outcome], next: Int?) {
            self.outcomes = outcomes
            self.next = next
        }
    }

    public struct Outcome: Codable, Sendable, Equatable {
        /// The device's place in the delivery (its broadlogId's index).
        public var index: Int
        public var deviceToken: String
        public var outcome: DeliveryOutcome
        /// The provider's reason, for `failed` and `unregistered`; for `expired`, the last
        /// attempt's when there was one.
        public var reason: String?
        /// When the sender reported it (RFC 3339, ms).
        public var reportedAt: Date
        public init(index: Int, deviceToken: String, outcome: DeliveryOutcome, reason: String?, reportedAt: Date) {
            self.index = index
            self.deviceToken = deviceToken
            self.outcome = outcome
            self.reason = reason
            self.reportedAt = reportedAt
        }
    }
}
