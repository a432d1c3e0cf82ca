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
    public var managed: Bool
    public var tracking: Bool
    /// Outbound records written (one per resolved device).
    public var sent: Int
    public var createdAt: Date

    public init(appId: UUID, deliveryId: UUID, kind: NotificationKind, managed: Bool, tracking: Bool, sent: Int, createdAt: Date) {
        self.appId = appId
        self.deliveryId = deliveryId
        self.kind = kind
        self.managed = managed
        self.tracking = tracking
        self.sent = sent
        self.createdAt = createdAt
    }
}
