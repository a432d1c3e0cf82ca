import Contracts
import Foundation
import WireCodec

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
