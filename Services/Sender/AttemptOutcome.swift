import Foundation

/// What one attempt's answer means for the push, the device and the app
/// (docs/ARCHITECTURE.md#delivery).
public enum AttemptOutcome: Sendable, Equatable {
    case delivered
    /// The token is dead: the processor retires the device unless it registered again after
    /// `since` (APNs's timestamp; nil: the time of the attempt).
    case unregistered(reason: String, since: Date?)
    /// The app's credentials were refused: its sending pauses until they are replaced; the
    /// device is not at fault.
    case credentialsRejected(reason: String)
    /// Worth another attempt later (throttled, provider errors): after `retryAfter` when the
    /// provider said so.
    case retry(reason: String, retryAfter: TimeInterval?)
    /// Refused for good (another 4xx).
    case failed(status: Int, reason: String)
}
