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

/// A part of an app (`AppParts`, docs/ARCHITECTURE.md#one-app-in-parts): the rows an app keeps
/// per part (its settings and tokens, its deliveries' figures, its parked tracking reports) are
/// each part's own, so that no part reads what another part's processor writes.
public struct AppPart: Hashable, Sendable, Codable, CustomStringConvertible {
    public var appId: UUID
    public var part: Int

    public init(_ appId: UUID, part: Int = 0) {
        self.appId = appId
        self.part = part
    }

    public var description: String { part == 0 ? appId.lowercasedString : "\(appId.lowercasedString)#\(part)" }
}

/// A delivery's key: its id is its app's (another app may use the same id for its own), and each
/// part of the app that applied the send has its row.
public struct DeliveryKey: Hashable, Sendable, Codable {
    public var appId: UUID
    public var deliveryId: UUID
    public var part: Int

    public init(appId: UUID, deliveryId: UUID, part: Int = 0) {
        self.appId = appId
        self.deliveryId = deliveryId
        self.part = part
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
