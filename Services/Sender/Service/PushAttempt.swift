import Contracts

/// What one attempt came to.
public enum PushAttempt: Sendable, Equatable {
    /// The provider answered (or could not be reached: a retry).
    case outcome(AttemptOutcome)
    /// The app has no credentials for the record's platform.
    case noCredentials(PushProvider)
    /// The record cannot become a request.
    case badRecord(String)
}
