import Contracts
import Hummingbird

/// `HTTPField`, reached through `HTTPFields` (Hummingbird re-exports only the latter), so that
/// ingest does not import HTTPTypes without declaring it.
typealias HeaderField = HTTPFields.Element

/// The header names ingest reads or writes beyond the standard ones.
extension HTTPFields.Element.Name {
    static let requestId = Self("x-request-id")!
    static let trackRegistration = Self(DeviceRegistrationAPI.trackRegistrationHeader)!
    static let callbackURL = Self(DeviceRegistrationAPI.callbackURLHeader)!
    static let statusCallbackURL = Self(DeviceRegistrationAPI.statusCallbackURLHeader)!
    static let callbackURLHeaders = Self(DeviceRegistrationAPI.callbackURLHeadersHeader)!
    static let idempotencyKey = Self(IdempotencyKeys.header)!
    static let userAssertion = Self(UserIdentity.assertionHeader)!
    static let userId = Self(UserIdentity.userIdHeader)!
    /// Set to `true` on the answer to a keyed send that repeats one already applied.
    static let idempotentReplayed = Self("Idempotent-Replayed")!
    /// The client addresses proxies append to (read only from `TrustedProxies`).
    static let xForwardedFor = Self("X-Forwarded-For")!
}
