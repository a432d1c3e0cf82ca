import Foundation

/// A Kafka partition of a topic, as the store records consumed offsets for it.
public struct PartitionKey: Hashable, Sendable, Codable, CustomStringConvertible {
    public var topic: String
    public var partition: Int32

    public init(topic: String, partition: Int32) {
        self.topic = topic
        self.partition = partition
    }

    public var description: String { "\(topic)[\(partition)]" }
}

/// Identifies a device row: one device token belongs to at most one user of an app.
public struct DeviceKey: Hashable, Sendable, Codable {
    public var appId: UUID
    public var deviceToken: String

    public init(appId: UUID, deviceToken: String) {
        self.appId = appId
        self.deviceToken = deviceToken
    }
}

/// Identifies a user of an app.
public struct UserKey: Hashable, Sendable, Codable {
    public var appId: UUID
    public var userId: String

    public init(appId: UUID, userId: String) {
        self.appId = appId
        self.userId = userId
    }
}

/// Identifies a notification of an app by its `nid` (its delivery id).
public struct NotificationKey: Hashable, Sendable, Codable {
    public var appId: UUID
    public var notificationId: String

    public init(appId: UUID, notificationId: String) {
        self.appId = appId
        self.notificationId = notificationId
    }
}

/// A delivery's key: its id is its app's (another app may use the same id for its own).
public struct DeliveryKey: Hashable, Sendable, Codable {
    public var appId: UUID
    public var deliveryId: UUID

    public init(appId: UUID, deliveryId: UUID) {
        self.appId = appId
        self.deliveryId = deliveryId
    }
}

/// Identifies one managed notification pending on one device.
public struct PendingKey: Hashable, Sendable, Codable {
    public var appId: UUID
    public var deviceToken: String
    public var notificationId: String

    public init(appId: UUID, deviceToken: String, notificationId: String) {
        self.appId = appId
        self.deviceToken = deviceToken
        self.notificationId = notificationId
    }

    public var device: DeviceKey { DeviceKey(appId: appId, deviceToken: deviceToken) }
}
