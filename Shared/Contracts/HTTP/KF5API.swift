import Foundation

/// Wire shapes of the KF5 SDK calls (docs/API.md#kf5-sdk-token-api): `saveToken` and `deleteToken`
/// map to `POST` and `DELETE /kf5/v1/apps/{mobileAppId}/tokens`, authenticated with
/// `Authorization: Bearer <api token>`.
public enum KF5API {
    /// The body of both routes. Fields are optional so that ingest can name the missing one.
    public struct TokenRequest: Codable, Sendable, Equatable {
        /// `KF5UserToken`: the app's user id of the device.
        public var userToken: String?
        /// `KF5DeviceToken`: the APNs device token or FCM registration token.
        public var deviceToken: String?
        /// `IOS` or `ANDROID` (case-insensitive); when absent on save, the platform is the one
        /// whose token format `deviceToken` has (APNs first).
        public var type: String?
        /// Pushline's own, optional, on save (docs/API.md#device-properties): the device's locale,
        /// time zone and app version, tags to add and topics to subscribe to.
        public var locale: String?
        public var timeZone: String?
        public var appVersion: String?
        public var tags: [String]?
        public var topics: [String]?

        public init(userToken: String?, deviceToken: String?, type: String? = nil, locale: String? = nil, timeZone: String? = nil,
                    appVersion: String? = nil, tags: [String]? = nil, topics: [String]? = nil) {
            self.userToken = userToken
            self.deviceToken = deviceToken
            self.type = type
            self.locale = locale
            self.timeZone = timeZone
            self.appVersion = appVersion
            self.tags = tags
            self.topics = topics
        }
    }
}
