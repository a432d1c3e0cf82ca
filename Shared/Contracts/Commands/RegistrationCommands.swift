import Foundation
import WireCodec

/// A device platform, decided by which token field the client sent.
public enum Platform: String, Codable, Sendable, CaseIterable {
    case ios
    case android
}

extension Platform: WireDecodable {}

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

extension StatusCallback: WireDecodable {
    private enum Key: String, CaseIterable { case url, headers, signature }
    private static let keys = WireKeys<Key>()

    public init?(wire reader: inout WireReader) {
        var url: String?, headers: [String: String]?, signature: String?
        guard reader.object(Self.keys, { reader, key in
            switch key {
            case .url: reader.read(&url)
            case .headers: reader.read(&headers)
            case .signature: reader.read(&signature)
            }
        }), let url, let headers, let signature else { return nil }
        self.init(url: url, headers: headers, signature: signature)
    }
}

/// A device registration, one per device: the registration API's `devices` and `devices/batch`, BW
/// `PUT devices`, KF5 `POST tokens`.
public struct DeviceRegistrationRequested: DeviceScopedCommand, Equatable {
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
    /// The device's time zone, an IANA name, when the registration gave one.
    public var timeZone: String?
    /// True when ingest checked a user assertion for `userId` (docs/API.md#verified-user-identity);
    /// nil otherwise, and in records from before assertions (left out of the log: not verified).
    public var identityVerified: Bool?
    /// The device's locale (canonical, `DeviceLocale`) and app version (`AppVersion`), when given.
    public var locale: String?
    public var appVersion: String?
    /// Tags the registration adds to the device, and topics it subscribes it to (none: nil).
    public var tags: [String]?
    public var topics: [String]?

    public init(registrationRequestId: UUID, orgId: UUID, mobileAppId: UUID, userId: String, platform: Platform,
                deviceToken: String, apiTokenHash: String, trackStatus: Bool, callback: StatusCallback?, timeZone: String? = nil,
                identityVerified: Bool? = nil, locale: String? = nil, appVersion: String? = nil, tags: [String]? = nil,
                topics: [String]? = nil) {
        self.registrationRequestId = registrationRequestId
        self.orgId = orgId
        self.mobileAppId = mobileAppId
        self.userId = userId
        self.platform = platform
        self.deviceToken = deviceToken
        self.apiTokenHash = apiTokenHash
        self.trackStatus = trackStatus
        self.callback = callback
        self.timeZone = timeZone
        self.identityVerified = identityVerified
        self.locale = locale
        self.appVersion = appVersion
        self.tags = tags
        self.topics = topics
    }
}

extension DeviceRegistrationRequested: WireDecodable {
    private enum Key: String, CaseIterable {
        case registrationRequestId, orgId, mobileAppId, userId, platform, deviceToken, apiTokenHash, trackStatus, callback, timeZone
        case identityVerified, locale, appVersion, tags, topics
    }
    private static let keys = WireKeys<Key>()

    public init?(wire reader: inout WireReader) {
        var registrationRequestId: UUID?, orgId: UUID?, mobileAppId: UUID?, userId: String?, platform: Platform?
        var deviceToken: String?, apiTokenHash: String?, trackStatus: Bool?, callback: StatusCallback?, timeZone: String?
        var identityVerified: Bool?, locale: String?, appVersion: String?, tags: [String]?, topics: [String]?
        guard reader.object(Self.keys, { reader, key in
            switch key {
            case .registrationRequestId: reader.read(&registrationRequestId)
            case .orgId: reader.read(&orgId)
            case .mobileAppId: reader.read(&mobileAppId)
            case .userId: reader.read(&userId)
            case .platform: reader.read(&platform)
            case .deviceToken: reader.read(&deviceToken)
            case .apiTokenHash: reader.read(&apiTokenHash)
            case .trackStatus: reader.read(&trackStatus)
            case .callback: reader.readOptional(&callback)
            case .timeZone: reader.readOptional(&timeZone)
            case .identityVerified: reader.readOptional(&identityVerified)
            case .locale: reader.readOptional(&locale)
            case .appVersion: reader.readOptional(&appVersion)
            case .tags: reader.readOptional(&tags)
            case .topics: reader.readOptional(&topics)
            }
        }), let registrationRequestId, let orgId, let mobileAppId, let userId, let platform, let deviceToken, let apiTokenHash,
              let trackStatus else { return nil }
        self.init(registrationRequestId: registrationRequestId, orgId: orgId, mobileAppId: mobileAppId, userId: userId,
                  platform: platform, deviceToken: deviceToken, apiTokenHash: apiTokenHash, trackStatus: trackStatus,
                  callback: callback, timeZone: timeZone, identityVerified: identityVerified, locale: locale, appVersion: appVersion,
                  tags: tags, topics: topics)
    }
}

extension DeviceRegistrationRequested: HandWrittenCommand {
    public func writePayload(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("apiTokenHash")
        writer.string(apiTokenHash)
        writer.field("appVersion", appVersion)
        if let callback {
            writer.key("callback")
            writer.beginObject()
            writer.key("headers")
            writer.object(callback.headers)
            writer.key("signature")
            writer.string(callback.signature)
            writer.key("url")
            writer.string(callback.url)
            writer.endObject()
        }
        writer.key("deviceToken")
        writer.string(deviceToken)
        writer.field("identityVerified", identityVerified)
        writer.field("locale", locale)
        writer.key("mobileAppId")
        writer.uuid(mobileAppId)
        writer.key("orgId")
        writer.uuid(orgId)
        writer.key("platform")
        writer.string(platform.rawValue)
        writer.key("registrationRequestId")
        writer.uuid(registrationRequestId)
        writer.field("tags", tags)
        writer.field("timeZone", timeZone)
        writer.field("topics", topics)
        writer.key("trackStatus")
        writer.bool(trackStatus)
        writer.key("userId")
        writer.string(userId)
        writer.endObject()
    }
}

/// A device cleanup (the registration API's `devices/cleanup` and `cleanup/batch`, BW `DELETE
/// devices`, KF5 `DELETE tokens`): removes the (app, user, token) row, or every device of the user
/// in the app when `deviceToken` is absent.
public struct DeviceCleanupRequested: AppScopedCommand, Equatable {
    public static let type = CommandType.deviceCleanupRequested
    public static let topic = CommandTopic.registration

    @LowercaseUUID public var orgId: UUID
    @LowercaseUUID public var mobileAppId: UUID
    public var userId: String
    public var deviceToken: String?
    public var apiTokenHash: String
    /// True when ingest checked a user assertion for `userId` (`DeviceRegistrationRequested.identityVerified`).
    public var identityVerified: Bool?

    public init(orgId: UUID, mobileAppId: UUID, userId: String, deviceToken: String?, apiTokenHash: String, identityVerified: Bool? = nil) {
        self.orgId = orgId
        self.mobileAppId = mobileAppId
        self.userId = userId
        self.deviceToken = deviceToken
        self.apiTokenHash = apiTokenHash
        self.identityVerified = identityVerified
    }

    /// One token's cleanup goes to its part; a cleanup of all of a user's devices to every part,
    /// each removing those it holds.
    public func split(into parts: AppParts) -> [(part: Int, command: DeviceCleanupRequested)] {
        guard let deviceToken else { return parts.all.map { ($0, self) } }
        return [(parts.part(ofToken: deviceToken), self)]
    }
}

extension DeviceCleanupRequested: WireDecodable {
    private enum Key: String, CaseIterable { case orgId, mobileAppId, userId, deviceToken, apiTokenHash, identityVerified }
    private static let keys = WireKeys<Key>()

    public init?(wire reader: inout WireReader) {
        var orgId: UUID?, mobileAppId: UUID?, userId: String?, deviceToken: String?, apiTokenHash: String?, identityVerified: Bool?
        guard reader.object(Self.keys, { reader, key in
            switch key {
            case .orgId: reader.read(&orgId)
            case .mobileAppId: reader.read(&mobileAppId)
            case .userId: reader.read(&userId)
            case .deviceToken: reader.readOptional(&deviceToken)
            case .apiTokenHash: reader.read(&apiTokenHash)
            case .identityVerified: reader.readOptional(&identityVerified)
            }
        }), let orgId, let mobileAppId, let userId, let apiTokenHash else { return nil }
        self.init(orgId: orgId, mobileAppId: mobileAppId, userId: userId, deviceToken: deviceToken, apiTokenHash: apiTokenHash,
                  identityVerified: identityVerified)
    }
}

extension DeviceCleanupRequested: HandWrittenCommand {
    public func writePayload(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("apiTokenHash")
        writer.string(apiTokenHash)
        writer.field("deviceToken", deviceToken)
        writer.field("identityVerified", identityVerified)
        writer.key("mobileAppId")
        writer.uuid(mobileAppId)
        writer.key("orgId")
        writer.uuid(orgId)
        writer.key("userId")
        writer.string(userId)
        writer.endObject()
    }
}

/// A change of device properties (docs/API.md#device-properties): of one device
/// (`deviceToken`), or of every device of a user (`userId` alone). What it leaves out stays as it
/// was; tags are removed, then added, and so are topics.
public struct DeviceChangeRequested: AppScopedCommand, Equatable {
    public static let type = CommandType.deviceChangeRequested
    public static let topic = CommandTopic.registration

    @LowercaseUUID public var mobileAppId: UUID
    /// The device; nil: every device of `userId`.
    public var deviceToken: String?
    /// The user whose device (or devices) it changes; with a token, the device must be the user's.
    public var userId: String?
    public var locale: String?
    public var timeZone: String?
    public var appVersion: String?
    public var addTags: [String]?
    public var removeTags: [String]?
    public var subscribe: [String]?
    public var unsubscribe: [String]?
    /// Made by a device (the client scope): where the app requires verified identity, applied only
    /// with `identityVerified` (docs/API.md#verified-user-identity). Nil: the app's backend.
    public var fromClient: Bool?
    public var identityVerified: Bool?

    public init(mobileAppId: UUID, deviceToken: String?, userId: String?, locale: String? = nil, timeZone: String? = nil,
                appVersion: String? = nil, addTags: [String]? = nil, removeTags: [String]? = nil, subscribe: [String]? = nil,
                unsubscribe: [String]? = nil, fromClient: Bool? = nil, identityVerified: Bool? = nil) {
        self.mobileAppId = mobileAppId
        self.deviceToken = deviceToken
        self.userId = userId
        self.locale = locale
        self.timeZone = timeZone
        self.appVersion = appVersion
        self.addTags = addTags
        self.removeTags = removeTags
        self.subscribe = subscribe
        self.unsubscribe = unsubscribe
        self.fromClient = fromClient
        self.identityVerified = identityVerified
    }

    /// One device's change goes to its token's part; a user's to every part, each changing the
    /// devices it holds.
    public func split(into parts: AppParts) -> [(part: Int, command: DeviceChangeRequested)] {
        guard let deviceToken else { return parts.all.map { ($0, self) } }
        return [(parts.part(ofToken: deviceToken), self)]
    }
}

/// Written by hand, as a bulk change of tags writes one per device or user.
extension DeviceChangeRequested: HandWrittenCommand {
    public func writePayload(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.field("addTags", addTags)
        writer.field("appVersion", appVersion)
        writer.field("deviceToken", deviceToken)
        writer.field("fromClient", fromClient)
        writer.field("identityVerified", identityVerified)
        writer.field("locale", locale)
        writer.key("mobileAppId")
        writer.uuid(mobileAppId)
        writer.field("removeTags", removeTags)
        writer.field("subscribe", subscribe)
        writer.field("timeZone", timeZone)
        writer.field("unsubscribe", unsubscribe)
        writer.field("userId", userId)
        writer.endObject()
    }
}
