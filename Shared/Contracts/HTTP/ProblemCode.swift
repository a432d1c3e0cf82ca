/// The machine-readable reason of a refusal, the `code` of every `Problem` body. A code keeps its
/// meaning for good; new ones may be added, so a client takes a code it does not know as the
/// status's general case. docs/API.md#error-codes lists them with their status.
///
/// One rule decides between `400` and `422`: a request that cannot be read, or a part of it that
/// breaks a rule the documentation states for that part alone (its type, syntax, length, range,
/// allowed values, or a field the route does not take), is `400`. A request that is well formed
/// but conflicts with what the service already holds (an `Idempotency-Key` used for another
/// request) is `422`.
public struct ProblemCode: RawRepresentable, Codable, Hashable, Sendable {
    public let rawValue: String

    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    // 400: the request as sent.
    public static let bodyMissing = ProblemCode(rawValue: "body_missing")
    public static let bodyMalformed = ProblemCode(rawValue: "body_malformed")
    public static let fieldUnknown = ProblemCode(rawValue: "field_unknown")
    public static let fieldMissing = ProblemCode(rawValue: "field_missing")
    public static let fieldType = ProblemCode(rawValue: "field_type")
    public static let fieldInvalid = ProblemCode(rawValue: "field_invalid")
    public static let webhookHostNotAllowed = ProblemCode(rawValue: "webhook_host_not_allowed")
    public static let audienceInvalid = ProblemCode(rawValue: "audience_invalid")
    // 401 and 403: who is asking.
    public static let tokenMissing = ProblemCode(rawValue: "token_missing")
    public static let tokenInvalid = ProblemCode(rawValue: "token_invalid")
    public static let adminTokenInvalid = ProblemCode(rawValue: "admin_token_invalid")
    public static let scopeMissing = ProblemCode(rawValue: "scope_missing")
    public static let userAssertionRequired = ProblemCode(rawValue: "user_assertion_required")
    public static let userAssertionInvalid = ProblemCode(rawValue: "user_assertion_invalid")
    // 404, 405, 409, 413, 415, 422: what the request names or how it is sent.
    public static let notFound = ProblemCode(rawValue: "not_found")
    public static let conflict = ProblemCode(rawValue: "conflict")
    public static let idempotencyKeyReused = ProblemCode(rawValue: "idempotency_key_reused")
    public static let idempotencyKeyExhausted = ProblemCode(rawValue: "idempotency_key_exhausted")
    public static let scheduleNotWaiting = ProblemCode(rawValue: "schedule_not_waiting")
    public static let bodyTooLarge = ProblemCode(rawValue: "body_too_large")
    public static let commandTooLarge = ProblemCode(rawValue: "command_too_large")
    public static let mediaTypeUnsupported = ProblemCode(rawValue: "media_type_unsupported")
    // 429: a limit.
    public static let rateLimitedSource = ProblemCode(rawValue: "rate_limited_source")
    public static let rateLimitedApp = ProblemCode(rawValue: "rate_limited_app")
    public static let rateLimitedAdminAuthentication = ProblemCode(rawValue: "rate_limited_admin_authentication")
    // 5xx: the service.
    public static let secretsKeyMissing = ProblemCode(rawValue: "secrets_key_missing")
    public static let unavailable = ProblemCode(rawValue: "unavailable")
    public static let notApplied = ProblemCode(rawValue: "not_applied")
    public static let internalError = ProblemCode(rawValue: "internal_error")

    /// Every code this version gives.
    public static let known: [ProblemCode] = [
        .bodyMissing, .bodyMalformed, .fieldUnknown, .fieldMissing, .fieldType, .fieldInvalid, .webhookHostNotAllowed, .audienceInvalid,
        .tokenMissing, .tokenInvalid, .adminTokenInvalid, .scopeMissing, .userAssertionRequired, .userAssertionInvalid,
        .notFound, .conflict, .idempotencyKeyReused, .idempotencyKeyExhausted, .scheduleNotWaiting, .bodyTooLarge,
        .commandTooLarge, .mediaTypeUnsupported, .rateLimitedSource, .rateLimitedApp, .rateLimitedAdminAuthentication,
        .secretsKeyMissing, .unavailable, .notApplied, .internalError
    ]
}
