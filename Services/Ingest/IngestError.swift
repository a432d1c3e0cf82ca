import Contracts
import Hummingbird

/// The one error type of the Ingest module.
///
/// Route code throws it to end a request early; `RequestMiddleware` turns it into the JSON
/// `Problem` answer. Messages never quote request bodies (they may hold API tokens).
public enum IngestError: Error, Sendable, CustomStringConvertible {
    /// The configuration could not be built (names the variable at fault).
    case invalidConfiguration(String)
    /// The request is refused with this 4xx status and problem body.
    case rejected(HTTPResponse.Status, Problem)
    /// A rate limit is exhausted: 429 with this problem, `Retry-After` (whole seconds) and the
    /// limit's `RateLimit-Policy` and `RateLimit` fields.
    case rateLimited(Problem, retryAfterSeconds: Int, policy: RateLimitPolicy)
    /// A dependency (broker or projection store) did not answer: 503 with `Retry-After`.
    case unavailable(String)
    /// An admin change is in the log but was not applied in time (`AdminChangeApplied`): 503
    /// with `Retry-After` and this message, which says what was written.
    case notApplied(String)

    public var description: String {
        switch self {
        case .invalidConfiguration(let message): "invalid configuration: \(message)"
        case .rejected(let status, let problem):
            "\(status.code) \(problem.error)" + (problem.field.map { " (field \($0))" } ?? "")
        case .rateLimited(let problem, let retryAfterSeconds, _): "429 \(problem.error) (retry after \(retryAfterSeconds) s)"
        case .unavailable(let reason): "unavailable: \(reason)"
        case .notApplied(let message): "not applied: \(message)"
        }
    }

    /// 400: a part of the request breaks a rule stated for it (`fieldInvalid` unless the rule
    /// has a code of its own).
    static func badRequest(_ error: String, field: String?, code: ProblemCode = .fieldInvalid) -> IngestError {
        .rejected(.badRequest, Problem(error: error, field: field, code: code))
    }

    static func notFound(_ error: String, field: String? = nil) -> IngestError {
        .rejected(.notFound, Problem(error: error, field: field, code: .notFound))
    }
}
