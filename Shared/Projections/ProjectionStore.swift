import Contracts
import Foundation

/// A Kafka partition of a topic, as the store records consumed offsets for it.
public struct PartitionKey: Hashable, Sendable, Codable, CustomStringConvertible {
    public var topic: String
    public var partition: Int32

    public init(topic: String, partition: Int32) {
        self.topic = topic
        self.partition = partition
    }

    public var description: String { "\(topic)[\(partition)]" }
}

/// An app of an org, with its settings.
public struct AppRow: Sendable, Equatable, Codable {
    public var appId: UUID
    public var orgId: UUID
    public var name: String
    public var callbackUrl: String?
    public var callbackHeaders: [String: String]
    /// Extra webhook/callback attempts after the first (0 = one attempt).
    public var webhookRetries: Int
    public var createdAt: Date

    public init(appId: UUID, orgId: UUID, name: String, callbackUrl: String? = nil, callbackHeaders: [String: String] = [:],
                webhookRetries: Int = 0, createdAt: Date) {
        self.appId = appId
        self.orgId = orgId
        self.name = name
        self.callbackUrl = callbackUrl
        self.callbackHeaders = callbackHeaders
        self.webhookRetries = webhookRetries
        self.createdAt = createdAt
    }
}

/// An API token of an app; only its hash is ever stored.
public struct ApiTokenRow: Sendable, Equatable, Codable {
    public var tokenId: UUID
    public var appId: UUID
    public var tokenHash: String
    public var revoked: Bool
    public var createdAt: Date

    public init(tokenId: UUID, appId: UUID, tokenHash: String, revoked: Bool = false, createdAt: Date) {
        self.tokenId = tokenId
        self.appId = appId
        self.tokenHash = tokenHash
        self.revoked = revoked
        self.createdAt = createdAt
    }
}

/// Identifies a device row: one device token belongs to at most one user of an app.
public struct DeviceKey: Hashable, Sendable, Codable {
    public var appId: UUID
    public var deviceToken: String

    public init(appId: UUID, deviceToken: String) {
        self.appId = appId
        self.deviceToken = deviceToken
    }
}

/// Identifies a user of an app.
public struct UserKey: Hashable, Sendable, Codable {
    public var appId: UUID
    public var userId: String

    public init(appId: UUID, userId: String) {
        self.appId = appId
        self.userId = userId
    }
}

/// A registered device: (app, token) → user, platform.
public struct DeviceRow: Sendable, Equatable, Codable {
    public var appId: UUID
    public var deviceToken: String
    public var userId: String
    public var platform: Platform
    /// 1 when first registered, +1 on every later change of the row (e.g. moving to another user).
    public var version: Int64
    public var updatedAt: Date

    public init(appId: UUID, deviceToken: String, userId: String, platform: Platform, version: Int64, updatedAt: Date) {
        self.appId = appId
        self.deviceToken = deviceToken
        self.userId = userId
        self.platform = platform
        self.version = version
        self.updatedAt = updatedAt
    }

    public var key: DeviceKey { DeviceKey(appId: appId, deviceToken: deviceToken) }
}

/// The decided outcome of one tracked registration.
public struct RegistrationStatusRow: Sendable, Equatable, Codable {
    public var requestId: UUID
    public var appId: UUID
    public var status: DeviceRegistrationAPI.Status
    public var failureReason: DeviceRegistrationAPI.FailureReason?
    public var decidedAt: Date

    public init(requestId: UUID, appId: UUID, status: DeviceRegistrationAPI.Status,
                failureReason: DeviceRegistrationAPI.FailureReason?, decidedAt: Date) {
        self.requestId = requestId
        self.appId = appId
        self.status = status
        self.failureReason = failureReason
        self.decidedAt = decidedAt
    }
}

/// The delivery state of an outbox job.
public enum OutboxState: String, Sendable, Codable {
    case pending, delivered, failed
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

/// The rows a batch of commands needs to decide its outcomes, loaded in one read.
public struct StateQuery: Sendable, Equatable {
    public var appIds: Set<UUID> = []
    public var deviceKeys: Set<DeviceKey> = []
    /// Every device of each of these users is loaded.
    public var userKeys: Set<UserKey> = []

    public init(appIds: Set<UUID> = [], deviceKeys: Set<DeviceKey> = [], userKeys: Set<UserKey> = []) {
        self.appIds = appIds
        self.deviceKeys = deviceKeys
        self.userKeys = userKeys
    }
}

/// The answer to a `StateQuery`.
public struct StateSnapshot: Sendable, Equatable {
    public var apps: [UUID: AppRow] = [:]
    /// Every token (revoked too) of each loaded app, by app.
    public var tokens: [UUID: [ApiTokenRow]] = [:]
    /// Every device row matching a requested device key or belonging to a requested user.
    public var devices: [DeviceKey: DeviceRow] = [:]

    public init(apps: [UUID: AppRow] = [:], tokens: [UUID: [ApiTokenRow]] = [:], devices: [DeviceKey: DeviceRow] = [:]) {
        self.apps = apps
        self.tokens = tokens
        self.devices = devices
    }
}

/// One change to the projections, decided by a command handler.
public enum Mutation: Sendable, Equatable {
    case upsertApp(AppRow)
    case upsertApiToken(ApiTokenRow)
    case upsertDevice(DeviceRow)
    case deleteDevice(DeviceKey)
    case putRegistrationStatus(RegistrationStatusRow)
    /// Inserts the job; a job whose id already exists is left as it is.
    case enqueueOutbox(OutboxJob)
}

/// Moves the stored consumed offset of a partition from `expected` (nil: none stored yet) to
/// `next` (the offset of the next record to read). A mismatch means another processor
/// applied this partition meanwhile, and the whole commit is refused.
public struct OffsetUpdate: Sendable, Equatable {
    public var partition: PartitionKey
    public var expected: Int64?
    public var next: Int64

    public init(partition: PartitionKey, expected: Int64?, next: Int64) {
        self.partition = partition
        self.expected = expected
        self.next = next
    }
}

/// The one error type of the Projections module.
public enum ProjectionStoreError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The stored offsets of these partitions were not the expected ones; nothing was written.
    case offsetConflict([PartitionKey])
    /// The schema in the store is newer than this code knows.
    case unsupportedSchemaVersion(found: Int, supported: Int)
    /// The underlying database failed.
    case database(String)
    /// The store configuration could not be understood.
    case invalidConfiguration(String)

    public var description: String {
        switch self {
        case .offsetConflict(let p): "stored offsets changed underneath for \(p.map(\.description).joined(separator: ", "))"
        case .unsupportedSchemaVersion(let found, let supported): "store schema version \(found) is newer than supported \(supported)"
        case .database(let m): "database error: \(m)"
        case .invalidConfiguration(let m): "invalid store configuration: \(m)"
        }
    }
}

/// The projection store: the tables the processor builds from the command topics, the
/// consumed offsets stored with them, and the webhook outbox.
///
/// Writes happen only through `commit`, one transaction per consumed batch, so state,
/// offsets and outbox jobs change together or not at all. Implementations: `SQLiteProjectionStore`
/// (PostgreSQL follows behind this same protocol).
public protocol ProjectionStore: Sendable {
    /// Reads the rows a batch needs, in one read transaction.
    func load(_ query: StateQuery) async throws -> StateSnapshot
    /// Applies the mutations in order and moves the offsets, in one transaction.
    /// Throws `ProjectionStoreError.offsetConflict` (and writes nothing) when an expected offset
    /// does not match.
    func commit(mutations: [Mutation], offsets: [OffsetUpdate]) async throws
    /// The stored next-offset of every partition of these topics.
    func offsets(topics: [String]) async throws -> [PartitionKey: Int64]

    func app(_ appId: UUID) async throws -> AppRow?
    func apiTokens(app appId: UUID) async throws -> [ApiTokenRow]
    func devices(app appId: UUID, user userId: String) async throws -> [DeviceRow]
    func device(_ key: DeviceKey) async throws -> DeviceRow?
    /// Statuses of these requests that belong to the app; ids without a stored status are absent.
    func registrationStatuses(app appId: UUID, requestIds: [UUID]) async throws -> [UUID: RegistrationStatusRow]

    /// Takes up to `limit` pending jobs due at `now` whose lease is free or expired, and leases
    /// them until `leaseUntil` so that no other dispatcher takes them meanwhile. Oldest first.
    func claimOutboxJobs(now: Date, limit: Int, leaseUntil: Date) async throws -> [OutboxJob]
    /// Records an attempt: counts it, stores its result and releases the lease.
    func recordOutboxAttempt(jobId: String, result: OutboxAttemptResult) async throws
    func outboxJob(_ id: String) async throws -> OutboxJob?
    /// The earliest `nextAttemptAt` of pending jobs, if any.
    func nextOutboxDue() async throws -> Date?

    /// A deterministic text dump of the projected tables (apps, tokens, devices, statuses,
    /// outbox jobs without their delivery progress), for equality checks across runs.
    func dump() async throws -> String
}
