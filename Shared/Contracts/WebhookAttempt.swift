import Foundation

/// One record on the `webhooks` topic per webhook or callback attempt, for audit.
/// Keyed by the webhook id. Carries no secrets: no body, no headers.
public struct WebhookAttemptRecord: Codable, Sendable, Equatable {
    public static let type = "output.webhook-attempt"

    public enum Outcome: String, Codable, Sendable {
        /// The receiver answered 2xx.
        case delivered
        /// Failed; another attempt is scheduled.
        case retrying
        /// Failed and no attempt is left.
        case failed
    }

    public var webhookId: String
    public var kind: String
    public var mobileAppId: UUID?
    public var url: String
    public var attempt: Int
    public var outcome: Outcome
    public var httpStatus: Int?
    public var error: String?

    public init(webhookId: String, kind: String, mobileAppId: UUID?, url: String, attempt: Int, outcome: Outcome,
                httpStatus: Int?, error: String?) {
        self.webhookId = webhookId
        self.kind = kind
        self.mobileAppId = mobileAppId
        self.url = url
        self.attempt = attempt
        self.outcome = outcome
        self.httpStatus = httpStatus
        self.error = error
    }
}
