import Contracts
import Foundation
import WireCodec

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

public enum ProviderAnswers {
    /// Reads an APNs answer: its status and the `reason` (and `timestamp`) of its JSON body.
    public static func apns(status: Int, body: Data, retryAfter: String? = nil) -> AttemptOutcome {
        if status == 200 { return .delivered }
        let json = try? JSONValue.parse(body)
        let reason: String
        if case .string(let text)? = json?["reason"] { reason = text } else { reason = "HTTP \(status)" }
        switch (status, reason) {
        case (410, _):
            var since: Date?
            if case .number(let millis)? = json?["timestamp"] { since = Date(timeIntervalSince1970: millis / 1000) }
            return .unregistered(reason: reason, since: since)
        case (400, "BadDeviceToken"):
            return .unregistered(reason: reason, since: nil)
        case (403, "InvalidProviderToken"), (403, "ExpiredProviderToken"), (403, "MissingProviderToken"),
             (403, "BadCertificate"), (403, "BadCertificateEnvironment"):
            return .credentialsRejected(reason: reason)
        case (429, _), (500..., _):
            return .retry(reason: reason, retryAfter: retryAfter.flatMap { parseRetryAfter($0) })
        default:
            return .failed(status: status, reason: reason)
        }
    }

    /// Reads an FCM HTTP v1 answer: Google's `{"error": {"status", "message", "details":
    /// [{"errorCode"}]}}`.
    public static func fcm(status: Int, body: Data, retryAfter: String? = nil) -> AttemptOutcome {
        if status == 200 { return .delivered }
        let error = (try? JSONValue.parse(body))?["error"]
        var googleStatus = "HTTP \(status)", message = "", errorCode: String?
        if case .string(let s)? = error?["status"] { googleStatus = s }
        if case .string(let m)? = error?["message"] { message = m }
        if case .array(let details)? = error?["details"] {
            for detail in details { if case .string(let code)? = detail["errorCode"] { errorCode = code } }
        }
        let reason = errorCode ?? googleStatus
        switch status {
        case 404 where errorCode == "UNREGISTERED" || googleStatus == "NOT_FOUND":
            return .unregistered(reason: reason, since: nil)
        // INVALID_ARGUMENT is the token's fault only when Google says so; a bad payload is not.
        case 400 where (errorCode ?? googleStatus) == "INVALID_ARGUMENT" && message.localizedCaseInsensitiveContains("registration token"):
            return .unregistered(reason: reason, since: nil)
        case 403 where errorCode == "SENDER_ID_MISMATCH":
            // The token belongs to another Firebase project: this push cannot go, the account is fine.
            return .failed(status: status, reason: reason)
        case 401, 403:
            return .credentialsRejected(reason: reason)
        case 429, 500...:
            return .retry(reason: reason, retryAfter: retryAfter.flatMap { parseRetryAfter($0) })
        default:
            return .failed(status: status, reason: reason)
        }
    }

    /// `Retry-After` in seconds (an HTTP date is read too); nil when unreadable.
    static func parseRetryAfter(_ text: String, now: Date = Date()) -> TimeInterval? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if let seconds = Int(trimmed), seconds >= 0 { return TimeInterval(seconds) }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        return formatter.date(from: trimmed).map { max(0, $0.timeIntervalSince(now)) }
    }
}

/// When to try again: exponential back-off with full jitter (`base × 2^(attempt−1)`, capped,
/// a uniform draw below it), never sooner than the provider's `Retry-After`.
public struct RetryPolicy: Sendable, Equatable {
    public var base: TimeInterval
    public var cap: TimeInterval

    public init(base: TimeInterval = 1, cap: TimeInterval = 300) {
        self.base = base
        self.cap = cap
    }

    /// The wait before attempt `attempt + 1`, after `attempt` (≥ 1) failed attempts.
    public func delay(afterAttempt attempt: Int, retryAfter: TimeInterval?,
                      using random: inout some RandomNumberGenerator) -> TimeInterval {
        let ceiling = min(cap, base * pow(2, Double(max(0, attempt - 1))))
        let jittered = Double.random(in: 0...ceiling, using: &random)
        guard let retryAfter else { return jittered }
        // Honoured, plus a little spread so that throttled senders do not return together.
        return retryAfter + Double.random(in: 0...(max(retryAfter, base) * 0.1), using: &random)
    }
}
