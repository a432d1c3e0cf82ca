import Foundation
import WireCodec

/// Wire shapes of the device registration API (docs/API.md#device-registration-api)
/// (`/api/v1.0/orgs/{orgId}/pushdeviceregistration/…`). Field names are PascalCase, exactly as
/// its clients send them. Fields are optional here so that ingest can name the missing one in
/// its 400.
public enum DeviceRegistrationAPI {
    public static let trackRegistrationHeader = "x-ms-track-registration"
    public static let callbackURLHeader = "x-ms-callback-url"
    /// The other name some clients use for `x-ms-callback-url`; both are accepted.
    public static let statusCallbackURLHeader = "x-ms-status-callback-url"
    public static let callbackURLHeadersHeader = "x-ms-callback-url-headers"
    public static let maxBatch = 100
    /// The most registration request ids one status query may name (`POST …/devices/status`).
    public static let maxStatusIds = 100
    public static let maxDeviceTokenBytes = 4096

    /// One registration (`POST …/devices`, and each element of `…/devices/batch`).
    public struct Registration: Codable, Sendable, Equatable {
        public var MobileAppId: String?
        public var UserId: String?
        public var ApiToken: String?
        public var ApnsDeviceToken: String?
        public var FcmDeviceToken: String?
        /// The device's time zone, an IANA name (`Europe/Lisbon`); optional.
        public var TimeZone: String?
        /// The user assertion for `UserId` (`UserIdentity`, docs/API.md#verified-user-identity);
        /// required when the app requires verified identity.
        public var UserAssertion: String?
        /// The device's locale (BCP 47, `pt-BR`), app version (`5.2.1`), tags to add and topics to
        /// subscribe to (docs/API.md#device-properties); optional.
        public var Locale: String?
        public var AppVersion: String?
        public var Tags: [String]?
        public var Topics: [String]?

        public init(MobileAppId: String?, UserId: String?, ApiToken: String?, ApnsDeviceToken: String? = nil, FcmDeviceToken: String? = nil,
                    TimeZone: String? = nil, UserAssertion: String? = nil, Locale: String? = nil, AppVersion: String? = nil,
                    Tags: [String]? = nil, Topics: [String]? = nil) {
            self.Locale = Locale
            self.AppVersion = AppVersion
            self.Tags = Tags
            self.Topics = Topics
            self.MobileAppId = MobileAppId
            self.UserId = UserId
            self.ApiToken = ApiToken
            self.ApnsDeviceToken = ApnsDeviceToken
            self.FcmDeviceToken = FcmDeviceToken
            self.TimeZone = TimeZone
            self.UserAssertion = UserAssertion
        }
    }

    /// The answer to a tracked registration.
    public struct RegistrationAccepted: Codable, Sendable, Equatable {
        @LowercaseUUID public var RegistrationRequestId: UUID
        public init(RegistrationRequestId: UUID) { self.RegistrationRequestId = RegistrationRequestId }
    }

    /// `POST …/devices/status/`.
    public struct StatusQuery: Codable, Sendable, Equatable {
        public var RegistrationRequestIds: [String]?
        public var MobileAppId: String?
        public var ApiToken: String?

        public init(RegistrationRequestIds: [String]?, MobileAppId: String?, ApiToken: String?) {
            self.RegistrationRequestIds = RegistrationRequestIds
            self.MobileAppId = MobileAppId
            self.ApiToken = ApiToken
        }
    }

    /// One element of the status answer, in request order.
    public struct RegistrationStatus: Codable, Sendable, Equatable {
        public var Status: Status
        public var FailureReason: FailureReason?

        public init(Status: Status, FailureReason: FailureReason? = nil) {
            self.Status = Status
            self.FailureReason = FailureReason
        }
    }

    public enum Status: String, Codable, Sendable {
        case Pending, Success, Failed
    }

    /// Why a registration failed (docs/API.md#registration-outcomes).
    public enum FailureReason: String, Codable, Sendable, CaseIterable {
        case DuplicateExists, DryRunSendingFailed, DeviceTokenTooLong, FailedToStoreDevice, ApiTokenNotValid
        /// Pushline's own: the registration would add a user to an app that has as many as it
        /// may keep (`PUSHLINE_MAX_USERS_PER_APP`).
        case TooManyUsers
    }

    /// `POST …/devices/cleanup` and each element of `…/cleanup/batch`.
    public struct Cleanup: Codable, Sendable, Equatable {
        public var MobileAppId: String?
        public var ApiToken: String?
        public var UserId: String?
        public var DeviceToken: String?
        /// The user assertion for `UserId`, as in `Registration`.
        public var UserAssertion: String?

        public init(MobileAppId: String?, ApiToken: String?, UserId: String?, DeviceToken: String? = nil, UserAssertion: String? = nil) {
            self.MobileAppId = MobileAppId
            self.ApiToken = ApiToken
            self.UserId = UserId
            self.DeviceToken = DeviceToken
            self.UserAssertion = UserAssertion
        }
    }

    /// The status webhook body POSTed to `x-ms-callback-url` after the outcome.
    public struct StatusWebhook: Codable, Sendable, Equatable {
        public var Status: Status
        public var Signature: String
        public var FailureReason: FailureReason?

        public init(Status: Status, Signature: String, FailureReason: FailureReason?) {
            self.Status = Status
            self.Signature = Signature
            self.FailureReason = FailureReason
        }
    }
}

extension DeviceRegistrationAPI.Registration: WireDecodable {
    private enum Key: String, CaseIterable {
        case MobileAppId, UserId, ApiToken, ApnsDeviceToken, FcmDeviceToken, TimeZone, UserAssertion, Locale, AppVersion, Tags, Topics
    }
    private static let keys = WireKeys<Key>()

    public init?(wire reader: inout WireReader) {
        var mobileAppId: String?, userId: String?, apiToken: String?, apns: String?, fcm: String?, timeZone: String?
        var assertion: String?, locale: String?, appVersion: String?, tags: [String]?, topics: [String]?
        guard reader.object(Self.keys, { reader, key in
            switch key {
            case .MobileAppId: reader.readOptional(&mobileAppId)
            case .UserId: reader.readOptional(&userId)
            case .ApiToken: reader.readOptional(&apiToken)
            case .ApnsDeviceToken: reader.readOptional(&apns)
            case .FcmDeviceToken: reader.readOptional(&fcm)
            case .TimeZone: reader.readOptional(&timeZone)
            case .UserAssertion: reader.readOptional(&assertion)
            case .Locale: reader.readOptional(&locale)
            case .AppVersion: reader.readOptional(&appVersion)
            case .Tags: reader.readOptional(&tags)
            case .Topics: reader.readOptional(&topics)
            }
        }) else { return nil }
        self.init(MobileAppId: mobileAppId, UserId: userId, ApiToken: apiToken, ApnsDeviceToken: apns, FcmDeviceToken: fcm,
                  TimeZone: timeZone, UserAssertion: assertion, Locale: locale, AppVersion: appVersion, Tags: tags, Topics: topics)
    }
}

extension DeviceRegistrationAPI.Cleanup: WireDecodable {
    private enum Key: String, CaseIterable { case MobileAppId, ApiToken, UserId, DeviceToken, UserAssertion }
    private static let keys = WireKeys<Key>()

    public init?(wire reader: inout WireReader) {
        var mobileAppId: String?, apiToken: String?, userId: String?, deviceToken: String?, assertion: String?
        guard reader.object(Self.keys, { reader, key in
            switch key {
            case .MobileAppId: reader.readOptional(&mobileAppId)
            case .ApiToken: reader.readOptional(&apiToken)
            case .UserId: reader.readOptional(&userId)
            case .DeviceToken: reader.readOptional(&deviceToken)
            case .UserAssertion: reader.readOptional(&assertion)
            }
        }) else { return nil }
        self.init(MobileAppId: mobileAppId, ApiToken: apiToken, UserId: userId, DeviceToken: deviceToken, UserAssertion: assertion)
    }
}

/// The header that identifies one webhook or callback job; repeats of a job carry the same id
/// so receivers can drop them.
public enum WebhookHeaders {
    public static let webhookId = "x-pushline-webhook-id"

    /// Whether a callback header may not be set by an app: the ones that frame or route the
    /// request (`Host`, `Connection`, `Content-Length`, `Transfer-Encoding`, `TE`, `Upgrade`,
    /// `Expect`, `Proxy-*`), which only the HTTP client decides. Ingest refuses them and the
    /// dispatcher drops them.
    public static func isReserved(_ name: String) -> Bool {
        let lower = name.lowercased()
        return reserved.contains(lower) || lower.hasPrefix("proxy-")
    }

    private static let reserved: Set<String> = ["host", "connection", "content-length", "transfer-encoding", "te", "upgrade", "expect",
                                                "keep-alive"]
}

/// The JSON problem body of every 4xx/5xx answer: `{"error": "...", "field": "...", "code": "..."}`.
/// `error` is for people and may be reworded; `code` is for programs and never changes meaning.
/// Every answer of this version has a code; an older server's has none (nil when decoded).
public struct Problem: Codable, Sendable, Equatable {
    public var error: String
    public var field: String?
    public var code: ProblemCode?
    /// Where in the field's text the problem is: the 0-based UTF-8 byte offset of an audience
    /// expression's offending token (`audience_invalid`); nil for other problems.
    public var position: Int?

    public init(error: String, field: String? = nil, code: ProblemCode, position: Int? = nil) {
        self.error = error
        self.field = field
        self.code = code
        self.position = position
    }
}
