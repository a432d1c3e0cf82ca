import Foundation

/// A device platform, decided by which token field the client sent.
public enum Platform: String, Codable, Sendable, CaseIterable {
    case ios
    case android
}

/// Where and how to deliver the status webhook of one registration.
public struct StatusCallback: Codable, Sendable, Equatable {
    public var url: String
    public var headers: [String: String]
    /// `ApiTokens.webhookSignature(apiToken:callbackURL:)`, computed by ingest from the raw token.
    public var signature: String

    public init(url: String, headers: [String: String], signature: String) {
        self.url = url
        self.headers = headers
        self.signature = signature
    }
}

/// A device registration, one per device: the registration API's `devices` and `devices/batch`, BW
/// `PUT devices`, KF5 `POST tokens`.
public struct DeviceRegistrationRequested: Command, Equatable {
    public static let type = CommandType.deviceRegistrationRequested
    public static let topic = CommandTopic.registration

    /// Always set; reported to the client (and its status stored) only when `trackStatus`.
    @LowercaseUUID public var registrationRequestId: UUID
    @LowercaseUUID public var orgId: UUID
    @LowercaseUUID public var mobileAppId: UUID
    public var userId: String
    public var platform: Platform
    public var deviceToken: String
    /// `ApiTokens.hash` of the token the client presented (judged by the processor).
    public var apiTokenHash: String
    public var trackStatus: Bool
    public var callback: StatusCallback?

    public init(registrationRequestId: UUID, orgId: UUID, mobileAppId: UUID, userId: String, platform: Platform,
                deviceToken: String, apiTokenHash: String, trackStatus: Bool, callback: StatusCallback?) {
        self.registrationRequestId = registrationRequestId
        self.orgId = orgId
        self.mobileAppId = mobileAppId
        self.userId = userId
        self.platform = platform
        self.deviceToken = deviceToken
        self.apiTokenHash = apiTokenHash
        self.trackStatus = trackStatus
        self.callback = callback
    }

    public var recordKey: String { RecordKey.user(app: mobileAppId, user: userId) }
}

/// A device cleanup (the registration API's `devices/cleanup` and `cleanup/batch`, BW `DELETE
/// devices`, KF5 `DELETE tokens`): removes the (app, user, token) row, or every device of the user
/// in the app when `deviceToken` is absent.
public struct DeviceCleanupRequested: Command, Equatable {
    public static let type = CommandType.deviceCleanupRequested
    public static let topic = CommandTopic.registration

    @LowercaseUUID public var orgId: UUID
    @LowercaseUUID public var mobileAppId: UUID
    public var userId: String
    public var deviceToken: String?
    public var apiTokenHash: String

    public init(orgId: UUID, mobileAppId: UUID, userId: String, deviceToken: String?, apiTokenHash: String) {
        self.orgId = orgId
        self.mobileAppId = mobileAppId
        self.userId = userId
        self.deviceToken = deviceToken
        self.apiTokenHash = apiTokenHash
    }

    public var recordKey: String { RecordKey.user(app: mobileAppId, user: userId) }
}
