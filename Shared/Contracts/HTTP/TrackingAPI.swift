import Foundation

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

        public init(deliveryId: UUID, sent: Int, impressions: Int, clicks: Int, opens: Int, repeatsIgnored: Int) {
            self.deliveryId = deliveryId.lowercasedString
            self.sent = sent
            self.impressions = impressions
            self.clicks = clicks
            self.opens = opens
            self.repeatsIgnored = repeatsIgnored
            clickThroughRate = Self.ratio(clicks, impressions)
            openRate = Self.ratio(opens, sent)
        }

        private static func ratio(_ a: Int, _ b: Int) -> Double { b == 0 ? 0 : Double(a) / Double(b) }
    }
}
