import Contracts
import Foundation

/// A registered device: (app, token) → user, platform.
public struct DeviceRow: Sendable, Equatable, Codable {
    public var appId: UUID
    public var deviceToken: String
    public var userId: String
    public var platform: Platform
    /// 1 when first registered, +1 on every later change of the row (e.g. moving to another user).
    public var version: Int64
    public var updatedAt: Date
    /// The device's time zone (an IANA name, e.g. `Europe/Lisbon`), as its last registration
    /// gave it; nil when that registration gave none.
    public var timeZone: String?
    /// The badge updates sent to the device in its current window of log time, and when that
    /// window started (nil: none sent yet): `DecisionRules.maxBadgeUpdatesPerMinute` limits them.
    public var badgesSince: Date?
    public var badges: Int
    /// Its locale in canonical form (`DeviceLocale`) and its app version (`AppVersion`), as its
    /// registrations and changes last gave them; nil: never given.
    public var locale: String?
    public var appVersion: String?
    /// Its tags, and the topics it is subscribed to (docs/API.md#device-properties).
    public var tags: DeviceLabels
    public var topics: DeviceLabels

    public init(appId: UUID, deviceToken: String, userId: String, platform: Platform, version: Int64, updatedAt: Date,
                timeZone: String? = nil, badgesSince: Date? = nil, badges: Int = 0, locale: String? = nil, appVersion: String? = nil,
                tags: DeviceLabels = [], topics: DeviceLabels = []) {
        self.badgesSince = badgesSince
        self.badges = badges
        self.locale = locale
        self.appVersion = appVersion
        self.tags = tags
        self.topics = topics
        self.appId = appId
        self.deviceToken = deviceToken
        self.userId = userId
        self.platform = platform
        self.version = version
        self.updatedAt = updatedAt
        self.timeZone = timeZone
    }

    public var key: DeviceKey { DeviceKey(appId: appId, deviceToken: deviceToken) }
    public var user: UserKey { UserKey(appId: appId, userId: userId) }
}

/// The decided outcome of one tracked registration.
public struct RegistrationStatusRow: Sendable, Equatable, Codable {
    public var requestId: UUID
    public var appId: UUID
    public var status: DeviceRegistrationAPI.Status
    public var failureReason: DeviceRegistrationAPI.FailureReason?
    public var decidedAt: Date
    /// The part of its app that decided it (`AppParts`): that part prunes it, by its own clock.
    public var part: Int

    public init(requestId: UUID, appId: UUID, status: DeviceRegistrationAPI.Status,
                failureReason: DeviceRegistrationAPI.FailureReason?, decidedAt: Date, part: Int = 0) {
        self.requestId = requestId
        self.appId = appId
        self.status = status
        self.failureReason = failureReason
        self.decidedAt = decidedAt
        self.part = part
    }
}
