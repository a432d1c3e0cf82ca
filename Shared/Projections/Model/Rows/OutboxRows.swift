import Foundation

/// The delivery state of an outbox job.
public enum OutboxState: String, Sendable, Codable {
    case pending, delivered, failed
    /// Written by a rebuild's replay: the original run already handled the job, so it is never
    /// claimed or sent (`claimOutboxJobs` takes `pending` jobs only, `nextOutboxDue` ignores it).
    case replayed
}

/// A webhook or callback to send: written in the same transaction as the state change that
/// caused it, sent later by the dispatcher. `id` is deterministic (derived from the command),
/// so a replayed command cannot enqueue a second job, and is sent as `x-pushline-webhook-id`.
public struct OutboxJob: Sendable, Equatable, Codable {
    public var id: String
    /// What the job is, e.g. `registration-status`.
    public var kind: String
    public var appId: UUID?
    public var url: String
    public var headers: [String: String]
    public var body: Data
    /// Total attempts allowed (1 + the app's webhookRetries).
    public var maxAttempts: Int
    public var attempts: Int
    public var nextAttemptAt: Date
    public var state: OutboxState
    public var lastStatus: Int?
    public var lastError: String?
    public var createdAt: Date

    public init(id: String, kind: String, appId: UUID?, url: String, headers: [String: String], body: Data,
                maxAttempts: Int, attempts: Int = 0, nextAttemptAt: Date, state: OutboxState = .pending,
                lastStatus: Int? = nil, lastError: String? = nil, createdAt: Date) {
        self.id = id
        self.kind = kind
        self.appId = appId
        self.url = url
        self.headers = headers
        self.body = body
        self.maxAttempts = maxAttempts
        self.attempts = attempts
        self.nextAttemptAt = nextAttemptAt
        self.state = state
        self.lastStatus = lastStatus
        self.lastError = lastError
        self.createdAt = createdAt
    }
}

/// What happened to one attempt of an outbox job.
public struct OutboxAttemptResult: Sendable, Equatable {
    public enum Next: Sendable, Equatable {
        case delivered
        case retry(at: Date)
        case failed
    }

    public var at: Date
    public var httpStatus: Int?
    public var error: String?
    public var next: Next

    public init(at: Date, httpStatus: Int?, error: String?, next: Next) {
        self.at = at
        self.httpStatus = httpStatus
        self.error = error
        self.next = next
    }
}
