import Contracts
import Foundation

// The projection store, by role. Each client depends on the role it uses: the processor's
// batch loop on `BatchStore`, ingest on `ProjectionReader`, the webhook dispatcher on
// `OutboxStore`, the dead-letter commands on `DeadLetterStore`. `ProjectionStore` is all of them
// at once, plus `StoreInspection`: what `ProjectionStoreFactory.open` returns.

/// What the processor's apply loop needs: read the rows a batch needs, write its effects with its
/// offsets, and know where each partition stands.
///
/// Writes happen only through `commit`, one transaction per consumed batch, so state, offsets,
/// outbox jobs and dead letters change together or not at all (docs/ARCHITECTURE.md#offsets-move-with-the-state).
public protocol BatchStore: Sendable {
    /// Reads the rows a batch needs, in one read transaction.
    func load(_ query: StateQuery) async throws -> StateSnapshot
    /// Applies the mutations in order and moves the offsets, in one transaction.
    /// Throws `ProjectionStoreError.offsetConflict` (and writes nothing) when an expected offset
    /// does not match.
    func commit(mutations: [Mutation], offsets: [OffsetUpdate]) async throws
    /// Up to `limit` devices of the app whose tokens come after `after` (from the first when nil),
    /// in the tokens' byte order, as committed: an audience send reads its devices in such pages.
    /// `having`: only devices that may carry these tags and topics (a superset: the caller checks).
    func devices(app appId: UUID, after: String?, limit: Int, having: DeviceNames) async throws -> [DeviceRow]
    /// How many of the app's devices carry this tag or topic, as committed, counted up to `limit`.
    func deviceCount(app appId: UUID, name: DeviceName, upTo limit: Int) async throws -> Int
    /// The stored next-offset of every partition of these topics.
    func offsets(topics: [String]) async throws -> [PartitionKey: Int64]
    /// The stored event time (milliseconds since 1970) of every stored partition of these topics.
    func eventTimes(topics: [String]) async throws -> [PartitionKey: Int64]
    /// Where each app part held beside the loop stands on the lanes of these topics (`HeldLane`).
    func heldLanes(topics: [String]) async throws -> [HeldLane]
    /// Up to `limit` scheduled sends still waiting whose time is `dueBy` or before, the earliest
    /// first (then by app, delivery and part), those after `after`, as committed: a live
    /// processor appends their firings (`DueSends`).
    func waitingSends(dueBy: Date, after: DeliveryRow?, limit: Int) async throws -> [DeliveryRow]
    /// When the store was created; `Date(timeIntervalSince1970: 0)` for a store created before
    /// this was recorded. A live processor uses it to tell a log it has never consumed from
    /// records that arrived after the store existed.
    func createdAt() async throws -> Date
}

/// The reads of ingest's routes (authentication, statuses, pending lists, statistics, admin
/// `GET`s); ingest never writes.
extension BatchStore {
    /// Every device of the page, whatever it carries.
    public func devices(app appId: UUID, after: String?, limit: Int) async throws -> [DeviceRow] {
        try await devices(app: appId, after: after, limit: limit, having: DeviceNames())
    }

    /// `names` with the name of the fewest devices as its `lead`: each counted up to the fewest so
    /// far, so that the counts read no more than the lead's devices for each name.
    public func leading(_ names: DeviceNames, app appId: UUID) async throws -> DeviceNames {
        var names = names, fewest = Int.max
        guard names.all.count > 1 else { return names }
        for name in names.all {
            let count = try await deviceCount(app: appId, name: name, upTo: fewest)
            if count < fewest { (fewest, names.lead) = (count, name) }
        }
        return names
    }
}

public protocol ProjectionReader: Sendable {
    /// The next offset to apply of every stored partition of `topics`: what the processors have
    /// applied (ingest waits on it for admin changes).
    func offsets(topics: [String]) async throws -> [PartitionKey: Int64]
    /// Where each app part held beside a processor's loop stands (`HeldLane`): its records are
    /// applied up to there, whatever the partition's offset says.
    func heldLanes(topics: [String]) async throws -> [HeldLane]
    func app(_ appId: UUID) async throws -> AppRow?
    /// Up to `limit` apps with an id after `after` (all when nil), ordered by id.
    func apps(after: UUID?, limit: Int) async throws -> [AppRow]
    func apiTokens(app appId: UUID) async throws -> [ApiTokenRow]
    /// The token with this hash, of whichever app (revoked too).
    func apiToken(hash: String) async throws -> ApiTokenRow?
    /// Up to `limit` named admin tokens with an id after `after` (all when nil), ordered by id.
    func adminTokens(after: UUID?, limit: Int) async throws -> [AdminTokenRow]
    func adminToken(id: UUID) async throws -> AdminTokenRow?
    /// The named admin token with this hash (revoked too).
    func adminToken(hash: String) async throws -> AdminTokenRow?
    /// The first request of an idempotency key on an admin create (`IdempotencyKeyRow`).
    func idempotencyKey(scope: String, key: String) async throws -> IdempotencyKeyRow?
    /// One page of the audit trail, newest first (`AuditQuery`).
    func auditEntries(_ query: AuditQuery) async throws -> [AuditEntryRow]
    /// Statuses of these requests that belong to the app; ids without a stored status are absent.
    func registrationStatuses(app appId: UUID, requestIds: [UUID]) async throws -> [UUID: RegistrationStatusRow]
    /// The device's pending notifications, oldest first (by `sentAt`, then `notificationId`).
    func pendingNotifications(_ device: DeviceKey) async throws -> [PendingNotificationRow]
    /// The device's row (whose user it is), nil when the app has no such device.
    func device(_ key: DeviceKey) async throws -> DeviceRow?
    /// The app's delivery with its engagement counts; nil for an unknown delivery or one of
    /// another app.
    func deliveryStats(app appId: UUID, deliveryId: UUID) async throws -> DeliveryStatsRow?
    /// The app's devices counted by the properties an audience reads, one count per combination
    /// of them (`DevicePropertiesCount`).
    func devicePropertyCounts(app appId: UUID) async throws -> [DevicePropertiesCount]
    /// The app's delivery alone (no engagement counts); nil as for `deliveryStats`.
    func delivery(app appId: UUID, deliveryId: UUID) async throws -> DeliveryRow?
    /// A user's own settings as part 0 keeps them (every part applies every change); nil: none.
    func userSettings(app appId: UUID, userId: String) async throws -> UserSettingsRow?
    /// An app's scheduled sends in `state`, by time then delivery id, after `after`.
    func scheduledSends(app appId: UUID, state: ScheduleState, after: (sendAt: Date, deliveryId: UUID)?, limit: Int) async throws
        -> [DeliveryRow]
    /// One page of a delivery's per-device outcomes, in message index order after `after`,
    /// only those of `outcome` when it is given.
    func deliveryOutcomes(app appId: UUID, deliveryId: UUID, outcome: DeliveryOutcome?, after: Int?,
                          limit: Int) async throws -> [DeliveryOutcomeRow]
}

/// The webhook outbox as its dispatcher sees it: jobs are written by `BatchStore.commit`, then
/// claimed, attempted and recorded here.
public protocol OutboxStore: Sendable {
    /// Takes up to `limit` pending jobs due at `now` whose lease is free or expired, and leases
    /// them until `leaseUntil` so that no other dispatcher takes them meanwhile: jobs of no app
    /// first, then the apps in the turn `slots` says, each app's oldest first and no more of them
    /// than its slots left. A job's `leaseUntil` only grows from claim to claim, so it tells the
    /// lease holder from a dispatcher whose lease ran out.
    func claimOutboxJobs(now: Date, limit: Int, leaseUntil: Date, slots: OutboxSlots) async throws -> [OutboxJob]
    /// Records an attempt: counts it, stores its result and releases the lease — only while the
    /// job is still leased until `lease` (the claim's `leaseUntil`); nil records unconditionally.
    /// Returns false, recording nothing, when the lease was lost (it ran out and another
    /// dispatcher claimed the job, or a rebuild's switch-over restored it).
    func recordOutboxAttempt(jobId: String, lease: Date?, result: OutboxAttemptResult) async throws -> Bool
    /// Up to `limit` jobs with ids after `id` (all when nil), ordered by id in byte order: pages
    /// through every job, whatever its state.
    func outboxJobs(after id: String?, limit: Int) async throws -> [OutboxJob]
}

extension OutboxStore {
    public func claimOutboxJobs(now: Date, limit: Int, leaseUntil: Date) async throws -> [OutboxJob] {
        try await claimOutboxJobs(now: now, limit: limit, leaseUntil: leaseUntil, slots: .unbounded)
    }

    /// Records an attempt whoever holds the lease.
    public func recordOutboxAttempt(jobId: String, result: OutboxAttemptResult) async throws {
        _ = try await recordOutboxAttempt(jobId: jobId, lease: nil, result: result)
    }
}

/// The records the processor could not apply (docs/ARCHITECTURE.md#no-poison-record), for the
/// `pushline dead-letters` commands; they are written by `BatchStore.commit`.
public protocol DeadLetterStore: Sendable {
    /// Up to `limit` dead letters after `after` (all when nil), in `DeadLetterKey` order.
    func deadLetters(after: DeadLetterKey?, limit: Int) async throws -> [DeadLetterRow]
    func deadLetter(_ key: DeadLetterKey) async throws -> DeadLetterRow?
}

/// Reads no service makes: for tests, and for comparing two stores (a rebuild with the live one,
/// SQLite with PostgreSQL).
public protocol StoreInspection: Sendable {
    func devices(app appId: UUID, user userId: String) async throws -> [DeviceRow]
    func device(_ key: DeviceKey) async throws -> DeviceRow?
    func outboxJob(_ id: String) async throws -> OutboxJob?
    /// The earliest `nextAttemptAt` of pending jobs, if any.
    func nextOutboxDue() async throws -> Date?
    /// A deterministic text dump of the projected tables (apps, tokens, devices, statuses,
    /// pending notifications, acks, deliveries, tracking rows, outbox jobs without their delivery
    /// progress), for equality checks across runs and backends.
    func dump() async throws -> String
}

/// A whole projection store: the tables the processor builds from the command topics, the
/// consumed offsets stored with them, the webhook outbox and the dead letters.
///
/// Implementations: `SQLiteProjectionStore` (one file, one machine) and `PostgresProjectionStore`
/// (shared by several processes and machines); both behave the same for every method and
/// mutation, and dump the same text.
public protocol ProjectionStore: BatchStore, ProjectionReader, OutboxStore, DeadLetterStore, StoreInspection, ChangelogStore {
    /// Closes the store's connections or file; calls made afterwards fail. Idempotent.
    func close() async
}
