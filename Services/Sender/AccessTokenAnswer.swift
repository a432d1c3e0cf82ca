import Foundation

/// The token endpoint's answer, as the sender acts on it.
public enum AccessTokenAnswer: Sendable, Equatable {
    case token(String, expiresIn: TimeInterval)
    /// The account's assertion was refused (`invalid_grant`, a deleted key): a credentials error.
    case refused(reason: String)
    case retry(reason: String, retryAfter: TimeInterval?)
}
