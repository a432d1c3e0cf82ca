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

/// What a claim may take: each app has `perApp` slots, of which `inFlight[app]` are taken by
/// attempts under way; jobs of no app are bounded only by the claim's limit.
///
/// A claim visits the apps with jobs in turn, starting after `after` (the app the last claim
/// ended with) and coming round to it last, and takes each app's oldest due jobs up to its slots
/// left, until it has its limit. It finds the next app and an app's due jobs each with one look
/// in an index of the claimable jobs by app, never by reading a queue of every app's jobs: an
/// app with a long backlog and no slot left costs the others nothing, and no app waits behind
/// another's backlog.
public struct OutboxSlots: Sendable, Equatable {
    public var perApp: Int
    public var inFlight: [UUID: Int]
    /// The app the last claim ended with: this claim starts after it.
    public var after: UUID?

    public init(perApp: Int, inFlight: [UUID: Int] = [:], after: UUID? = nil) {
        self.perApp = perApp
        self.inFlight = inFlight
        self.after = after
    }

    /// No bound per app.
    public static let unbounded = OutboxSlots(perApp: .max)

    /// The jobs a claim may take: pending, and not a callback share (those wait to be merged).
    /// It is the condition of the `outbox_claimable` index (schema step 22), written out with no
    /// bound value so that both stores see that the index serves a statement with it.
    package static let claimable = "state = 'pending' AND kind <> '\(CallbackShare.jobKind)'"

    /// Slots left to `app`.
    public func left(_ app: UUID) -> Int { max(0, perApp - inFlight[app, default: 0]) }
}

/// The order a claim visits apps in: those after `OutboxSlots.after`, then from the first app
/// round to it. The store looks for the first app with claimable jobs after `from` (nil: the first
/// of all) and hands what it found to `found`, until `done`.
public struct OutboxAppWalk: Sendable {
    public private(set) var done = false
    /// The app to look after next; nil: from the first.
    public private(set) var from: UUID?
    private let start: UUID?
    private var wrapped = false

    public init(after: UUID?) {
        start = after
        from = after
    }

    /// Takes the app found after `from` (nil: none) and returns it if it is the next to visit;
    /// nil: look again from `from`, unless `done`.
    public mutating func found(_ app: UUID?) -> UUID? {
        if let app, !(wrapped && KeyOrder.less(start!, app)) {
            from = app
            return app
        }
        if wrapped || start == nil {
            done = true
        } else {
            wrapped = true
            from = nil
        }
        return nil
    }
}
