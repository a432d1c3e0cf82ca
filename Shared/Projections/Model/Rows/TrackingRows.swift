import Contracts
import Foundation

/// A device's report of an action, and how many times a batch saw it. The device is named by
/// its message index: a broadlogId is checked against the delivery and reduced to its index
/// before it is stored (`MessageId`), so the key is small and one device cannot be counted twice
/// under two spellings.
public struct TrackingCount: Hashable, Sendable, Codable {
    public var action: TrackingAction
    public var messageIndex: Int
    /// Reports in the batch (≥ 1).
    public var reports: Int

    public init(action: TrackingAction, messageIndex: Int, reports: Int = 1) {
        self.action = action
        self.messageIndex = messageIndex
        self.reports = reports
    }
}

/// The reports of one batch about one delivery of one app's part.
public struct TrackingCounts: Sendable, Equatable, Codable {
    public var appId: UUID
    public var deliveryId: UUID
    public var counts: [TrackingCount]
    public var part: Int

    public init(appId: UUID, deliveryId: UUID, counts: [TrackingCount], part: Int = 0) {
        self.appId = appId
        self.deliveryId = deliveryId
        self.counts = counts
        self.part = part
    }

    public var pair: TrackingPair { TrackingPair(deliveryId: deliveryId, appId: appId, part: part) }
}

/// The delivery and app a tracking report names, and the app's part it is for (`AppPart`): the
/// reports of one pair are parked, settled and expired together.
public struct TrackingPair: Hashable, Sendable {
    public var deliveryId: UUID
    public var appId: UUID
    public var part: Int

    public init(deliveryId: UUID, appId: UUID, part: Int = 0) {
        self.deliveryId = deliveryId
        self.appId = appId
        self.part = part
    }

    /// The app part the pair is of.
    public var scope: AppPart { AppPart(appId, part: part) }
}

/// A tracking row's key within its pair: this device did this.
public struct TrackingRowKey: Hashable, Sendable {
    public var action: TrackingAction
    public var messageIndex: Int

    public init(action: TrackingAction, messageIndex: Int) {
        self.action = action
        self.messageIndex = messageIndex
    }
}

/// A stored tracking row, as a send finds the rows reported before it was applied.
public struct TrackedEvent: Sendable, Equatable, Codable {
    public var appId: UUID
    public var action: TrackingAction
    public var messageIndex: Int
    /// Reports of the same (device, action) after the first.
    public var repeats: Int
    /// The app's part that counted it.
    public var part: Int

    public init(appId: UUID, action: TrackingAction, messageIndex: Int, repeats: Int, part: Int = 0) {
        self.appId = appId
        self.action = action
        self.messageIndex = messageIndex
        self.repeats = repeats
        self.part = part
    }

    public var key: TrackingRowKey { TrackingRowKey(action: action, messageIndex: messageIndex) }

    /// The app part that counted it.
    public var scope: AppPart { AppPart(appId, part: part) }
}

/// A delivery with its engagement counts (docs/API.md#delivery-statistics): each count is the
/// number of distinct devices that reported the action, among the devices the delivery was sent to,
/// and zero for a delivery sent with tracking off.
public struct DeliveryStatsRow: Sendable, Equatable {
    public var delivery: DeliveryRow
    public var impressions: Int
    public var clicks: Int
    public var opens: Int
    public var repeatsIgnored: Int

    public init(delivery: DeliveryRow, impressions: Int = 0, clicks: Int = 0, opens: Int = 0, repeatsIgnored: Int = 0) {
        self.delivery = delivery
        self.impressions = impressions
        self.clicks = clicks
        self.opens = opens
        self.repeatsIgnored = repeatsIgnored
    }
}
