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

/// Identifies a notification of an app by its `nid` (its delivery id).
public struct NotificationKey: Hashable, Sendable, Codable {
    public var appId: UUID
    public var notificationId: String

    public init(appId: UUID, notificationId: String) {
        self.appId = appId
        self.notificationId = notificationId
    }
}

/// Identifies one managed notification pending on one device.
public struct PendingKey: Hashable, Sendable, Codable {
    public var appId: UUID
    public var deviceToken: String
    public var notificationId: String

    public init(appId: UUID, deviceToken: String, notificationId: String) {
        self.appId = appId
        self.deviceToken = deviceToken
        self.notificationId = notificationId
    }

    public var device: DeviceKey { DeviceKey(appId: appId, deviceToken: deviceToken) }
}

/// A managed notification a device has not acknowledged yet. The device's badge is the number of
/// these rows.
public struct PendingNotificationRow: Sendable, Equatable, Codable {
    public var appId: UUID
    public var deviceToken: String
    public var notificationId: String
    public var deliveryId: UUID
    /// When the notification was sent (its command's time); `ns` lists oldest first.
    public var sentAt: Date
    /// The alert text (text, else body, else title).
    public var text: String
    public var businessId: String?

    public init(appId: UUID, deviceToken: String, notificationId: String, deliveryId: UUID, sentAt: Date, text: String,
                businessId: String?) {
        self.appId = appId
        self.deviceToken = deviceToken
        self.notificationId = notificationId
        self.deliveryId = deliveryId
        self.sentAt = sentAt
        self.text = text
        self.businessId = businessId
    }

    public var key: PendingKey { PendingKey(appId: appId, deviceToken: deviceToken, notificationId: notificationId) }
}

/// A device's acknowledgement of a notification. Kept whether or not the notification was
/// pending when the ack was applied, so that a notification applied after its ack (they
/// travel on different partitions) is not made pending, and so that the final tables do not
/// depend on which came first.
public struct AckRow: Sendable, Equatable, Codable {
    public var appId: UUID
    public var deviceToken: String
    public var notificationId: String
    public var businessId: String?
    public var ackedAt: Date

    public init(appId: UUID, deviceToken: String, notificationId: String, businessId: String?, ackedAt: Date) {
        self.appId = appId
        self.deviceToken = deviceToken
        self.notificationId = notificationId
        self.businessId = businessId
        self.ackedAt = ackedAt
    }

    public var key: PendingKey { PendingKey(appId: appId, deviceToken: deviceToken, notificationId: notificationId) }
}

/// One applied send request: what it was and how many devices it reached.
public struct DeliveryRow: Sendable, Equatable, Codable {
    public var appId: UUID
    public var deliveryId: UUID
    public var kind: NotificationKind
    public var managed: Bool
    public var tracking: Bool
    /// Outbound records written (one per resolved device).
    public var sent: Int
    public var createdAt: Date

    public init(appId: UUID, deliveryId: UUID, kind: NotificationKind, managed: Bool, tracking: Bool, sent: Int, createdAt: Date) {
        self.appId = appId
        self.deliveryId = deliveryId
        self.kind = kind
        self.managed = managed
        self.tracking = tracking
        self.sent = sent
        self.createdAt = createdAt
    }
}

/// A device's report of an action, and how many times a batch saw it. The device is named by
/// its message index: a broadlogId is checked against the delivery and reduced to its index
/// before it is stored (`MessageId`), so the key is small and one device cannot be counted twice
/// under two spellings.
public struct TrackingCount: Hashable, Sendable, Codable {
    public var action: TrackingAction
    public var messageIndex: Int
    /// Reports in the batch (≥ 1).
    public var reports: Int

    public init(action: TrackingAction, messageIndex: Int, reports: Int = 1) {
        self.action = action
        self.messageIndex = messageIndex
        self.reports = reports
    }
}

/// The reports of one batch about one delivery of one app.
public struct TrackingCounts: Sendable, Equatable, Codable {
    public var appId: UUID
    public var deliveryId: UUID
    public var counts: [TrackingCount]

    public init(appId: UUID, deliveryId: UUID, counts: [TrackingCount]) {
        self.appId = appId
        self.deliveryId = deliveryId
        self.counts = counts
    }
}

/// A stored tracking row, as a send finds the rows reported before it was applied.
public struct TrackedEvent: Sendable, Equatable, Codable {
    public var appId: UUID
    public var action: TrackingAction
    public var messageIndex: Int
    /// Reports of the same (device, action) after the first.
    public var repeats: Int

    public init(appId: UUID, action: TrackingAction, messageIndex: Int, repeats: Int) {
        self.appId = appId
        self.action = action
        self.messageIndex = messageIndex
        self.repeats = repeats
    }
}

/// A delivery with its engagement counts (docs/API.md#delivery-statistics): each count is the
/// number of distinct devices that reported the action, among the devices the delivery was sent to,
/// and zero for a delivery sent with tracking off.
public struct DeliveryStatsRow: Sendable, Equatable {
    public var delivery: DeliveryRow
    public var impressions: Int
    public var clicks: Int
    public var opens: Int
    public var repeatsIgnored: Int

    public init(delivery: DeliveryRow, impressions: Int = 0, clicks: Int = 0, opens: Int = 0, repeatsIgnored: Int = 0) {
        self.delivery = delivery
        self.impressions = impressions
        self.clicks = clicks
        self.opens = opens
        self.repeatsIgnored = repeatsIgnored
    }
}

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

/// The rows a batch of commands needs to decide its outcomes, loaded in one read.
public struct StateQuery: Sendable, Equatable {
    public var appIds: Set<UUID> = []
    public var deviceKeys: Set<DeviceKey> = []
    /// Every device of each of these users is loaded.
    public var userKeys: Set<UserKey> = []
    /// Pending rows are loaded for those of these keys that exist.
    public var pendingKeys: Set<PendingKey> = []
    /// Every ack of each of these notifications is loaded.
    public var ackedNotifications: Set<NotificationKey> = []
    /// The pending counts (badges) of the loaded devices among these, and of the loaded devices
    /// of these users, are loaded. Counting costs a lookup per device, so a send that does not
    /// need badges (an unmanaged one) does not ask.
    public var pendingCountDevices: Set<DeviceKey> = []
    public var pendingCountUsers: Set<UserKey> = []
    /// The delivery rows of these delivery ids, whichever app sent them.
    public var deliveryIds: Set<UUID> = []
    /// The tracking rows already stored for these deliveries (reported before their send).
    public var trackedDeliveries: Set<UUID> = []

    public init(appIds: Set<UUID> = [], deviceKeys: Set<DeviceKey> = [], userKeys: Set<UserKey> = [],
                pendingKeys: Set<PendingKey> = [], ackedNotifications: Set<NotificationKey> = [],
                pendingCountDevices: Set<DeviceKey> = [], pendingCountUsers: Set<UserKey> = [],
                deliveryIds: Set<UUID> = [], trackedDeliveries: Set<UUID> = []) {
        self.appIds = appIds
        self.deviceKeys = deviceKeys
        self.userKeys = userKeys
        self.pendingKeys = pendingKeys
        self.ackedNotifications = ackedNotifications
        self.pendingCountDevices = pendingCountDevices
        self.pendingCountUsers = pendingCountUsers
        self.deliveryIds = deliveryIds
        self.trackedDeliveries = trackedDeliveries
    }
}

/// The answer to a `StateQuery`.
public struct StateSnapshot: Sendable, Equatable {
    public var apps: [UUID: AppRow] = [:]
    /// Every token (revoked too) of each loaded app, by app.
    public var tokens: [UUID: [ApiTokenRow]] = [:]
    /// Every device row matching a requested device key or belonging to a requested user.
    public var devices: [DeviceKey: DeviceRow] = [:]
    /// The number of pending notifications of every loaded device the query asked counts for
    /// (`pendingCountDevices`, `pendingCountUsers`); absent: none.
    public var pendingCounts: [DeviceKey: Int] = [:]
    /// The requested pending rows that exist.
    public var pending: [PendingKey: PendingNotificationRow] = [:]
    /// The acks of the requested notifications, as (app, device, nid) keys.
    public var acks: Set<PendingKey> = []
    /// The requested deliveries that exist, by delivery id.
    public var deliveries: [UUID: DeliveryRow] = [:]
    /// The stored tracking rows of the requested `trackedDeliveries` that have any.
    public var trackedEvents: [UUID: [TrackedEvent]] = [:]

    public init(apps: [UUID: AppRow] = [:], tokens: [UUID: [ApiTokenRow]] = [:], devices: [DeviceKey: DeviceRow] = [:],
                pendingCounts: [DeviceKey: Int] = [:], pending: [PendingKey: PendingNotificationRow] = [:], acks: Set<PendingKey> = [],
                deliveries: [UUID: DeliveryRow] = [:], trackedEvents: [UUID: [TrackedEvent]] = [:]) {
        self.apps = apps
        self.tokens = tokens
        self.devices = devices
        self.pendingCounts = pendingCounts
        self.pending = pending
        self.acks = acks
        self.deliveries = deliveries
        self.trackedEvents = trackedEvents
    }
}

/// One change to the projections, decided by a command handler.
public enum Mutation: Sendable, Equatable {
    case upsertApp(AppRow)
    case upsertApiToken(ApiTokenRow)
    case upsertDevice(DeviceRow)
    /// Removes the device row only; its pending notifications stay until a `.clearPending`
    /// (which the processor emits alongside).
    case deleteDevice(DeviceKey)
    case putRegistrationStatus(RegistrationStatusRow)
    /// Inserts the job; a job whose id already exists is left as it is.
    case enqueueOutbox(OutboxJob)
    /// Writes the whole job row: inserts it, or overwrites every column of the job with that id
    /// (its lease is released). Carries an old store's delivery progress into a rebuilt one.
    /// Recorded attempts numbered above the restored `attempts` are dropped, so that the next
    /// attempt's number is free.
    case restoreOutbox(OutboxJob)
    /// Inserts the pending row; an existing one is left as it is.
    case putPending(PendingNotificationRow)
    case deletePending(PendingKey)
    /// Removes every pending notification of the device (it was deleted or changed hands).
    case clearPending(DeviceKey)
    /// Inserts the ack; an existing one is left as it is.
    case putAck(AckRow)
    /// Inserts the delivery; an existing one is left as it is.
    case putDelivery(DeliveryRow)
    /// Counts reports: a new (device, action) is stored with `reports - 1` repeats, a known one
    /// gets `reports` more. Needs no loaded row, so it cannot count on a stale read.
    ///
    /// Then, in the same transaction, settles against the delivery rows stored at that point:
    /// when a delivery row with this delivery id exists, this (delivery, app)'s rows that it
    /// cannot own are deleted, by the rule of `.discardTracking` (another app's delivery, tracking
    /// off, or `messageIndex` ≥ sent). Without a delivery row the rows stay (parked). So a report
    /// batch that loaded "no delivery yet" while another processor committed the send cannot
    /// leave rows behind that the send's own discard did not see.
    case countTracking(TrackingCounts)
    /// Deletes the delivery's tracking rows that it cannot own: those of any other app and
    /// those at or past `validBelow` (the delivery's sent count; 0 when tracking was off).
    case discardTracking(deliveryId: UUID, appId: UUID, validBelow: Int)
    /// Marks reports of a (delivery, app) stored before their delivery's send as parked since
    /// `at` (the first report's command time); an existing mark is left as it is.
    case parkTracking(deliveryId: UUID, appId: UUID, at: Date)
    /// Deletes the tracking rows of (delivery, app) pairs parked before `before` whose delivery
    /// still has no row (the send never came), and the marks older than `before`.
    case expireParkedTracking(before: Date)
    /// Sets a record aside that the store refused for good; an existing row is left as it is.
    case putDeadLetter(DeadLetterRow)
    /// Removes a dead letter (it was applied again).
    case deleteDeadLetter(DeadLetterKey)
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

extension ProjectionStore {
    public func claimOutboxJobs(now: Date, limit: Int, leaseUntil: Date) async throws -> [OutboxJob] {
        try await claimOutboxJobs(now: now, limit: limit, leaseUntil: leaseUntil, excludingApps: [])
    }

    /// Records an attempt whoever holds the lease.
    public func recordOutboxAttempt(jobId: String, result: OutboxAttemptResult) async throws {
        _ = try await recordOutboxAttempt(jobId: jobId, lease: nil, result: result)
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
    /// Transient: the database could not be reached, or aborted the transaction for reasons
    /// unrelated to the data (connection refused or lost, server shutting down, deadlock,
    /// serialization failure, SQLite busy or locked). Nothing was written; retrying the same
    /// call later is right.
    case unavailable(String)

    public var description: String {
        switch self {
        case .offsetConflict(let p): "stored offsets changed underneath for \(p.map(\.description).joined(separator: ", "))"
        case .unsupportedSchemaVersion(let found, let supported): "store schema version \(found) is newer than supported \(supported)"
        case .database(let m): "database error: \(m)"
        case .invalidConfiguration(let m): "invalid store configuration: \(m)"
        case .unavailable(let m): "store unavailable: \(m)"
        }
    }
}

/// The projection store: the tables the processor builds from the command topics, the
/// consumed offsets stored with them, and the webhook outbox.
///
/// Writes happen only through `commit`, one transaction per consumed batch, so state,
/// offsets and outbox jobs change together or not at all. Implementations: `SQLiteProjectionStore`
/// (one file, one machine) and `PostgresProjectionStore` (shared by several processes and
/// machines); both behave the same for every method and mutation, and dump the same text.
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
    /// Up to `limit` apps with an id after `after` (all when nil), ordered by id.
    func apps(after: UUID?, limit: Int) async throws -> [AppRow]
    func apiTokens(app appId: UUID) async throws -> [ApiTokenRow]
    func devices(app appId: UUID, user userId: String) async throws -> [DeviceRow]
    func device(_ key: DeviceKey) async throws -> DeviceRow?
    /// Statuses of these requests that belong to the app; ids without a stored status are absent.
    func registrationStatuses(app appId: UUID, requestIds: [UUID]) async throws -> [UUID: RegistrationStatusRow]
    /// The token with this hash, of whichever app (revoked too).
    func apiToken(hash: String) async throws -> ApiTokenRow?
    /// The device's pending notifications, oldest first (by `sentAt`, then `notificationId`).
    func pendingNotifications(_ device: DeviceKey) async throws -> [PendingNotificationRow]
    /// The app's delivery with its engagement counts; nil for an unknown delivery or one of
    /// another app.
    func deliveryStats(app appId: UUID, deliveryId: UUID) async throws -> DeliveryStatsRow?

    /// Takes up to `limit` pending jobs due at `now` whose lease is free or expired, of apps other
    /// than `excludingApps`, and leases them until `leaseUntil` so that no other dispatcher takes
    /// them meanwhile. Oldest first. A job's `leaseUntil` only grows from claim to claim, so it
    /// tells the lease holder from a dispatcher whose lease ran out.
    func claimOutboxJobs(now: Date, limit: Int, leaseUntil: Date, excludingApps: Set<UUID>) async throws -> [OutboxJob]
    /// Records an attempt: counts it, stores its result and releases the lease — only while the
    /// job is still leased until `lease` (the claim's `leaseUntil`); nil records unconditionally.
    /// Returns false, recording nothing, when the lease was lost (it ran out and another
    /// dispatcher claimed the job, or a rebuild's switch-over restored it).
    func recordOutboxAttempt(jobId: String, lease: Date?, result: OutboxAttemptResult) async throws -> Bool
    /// Gives a claimed job back unattempted, if it is still leased until `lease`.
    func releaseOutboxLease(jobId: String, lease: Date) async throws
    func outboxJob(_ id: String) async throws -> OutboxJob?
    /// Up to `limit` jobs with ids after `id` (all when nil), ordered by id in byte order: pages
    /// through every job, whatever its state.
    func outboxJobs(after id: String?, limit: Int) async throws -> [OutboxJob]
    /// The earliest `nextAttemptAt` of pending jobs, if any.
    func nextOutboxDue() async throws -> Date?

    /// When the store was created; `Date(timeIntervalSince1970: 0)` for a store created before
    /// this was recorded. A live processor uses it to tell a log it has never consumed from
    /// records that arrived after the store existed.
    func createdAt() async throws -> Date
    /// Up to `limit` dead letters after `after` (all when nil), in `DeadLetterKey` order.
    func deadLetters(after: DeadLetterKey?, limit: Int) async throws -> [DeadLetterRow]
    func deadLetter(_ key: DeadLetterKey) async throws -> DeadLetterRow?

    /// A deterministic text dump of the projected tables (apps, tokens, devices, statuses,
    /// pending notifications, acks, deliveries, tracking rows, outbox jobs without their delivery progress),
    /// for equality checks across runs.
    func dump() async throws -> String
}
