import Contracts
import Foundation

/// The rows that mutations leave in an empty store, each table's in primary key order: what a
/// restore loads with plain inserts (docs/ARCHITECTURE.md#changelog-and-restore).
///
/// Exact only for mutations that hold every mutation of each row they touch — whole groups of
/// `ChangelogSorter` — written into tables that hold none of those rows yet. The final state of
/// each key is the `WritePlan`'s, applied to nothing.
public struct RestoredRows: Sendable {
    /// One row of `tracking_events`.
    public struct TrackingRow: Sendable, Equatable {
        public var deliveryId: UUID
        public var appId: UUID
        public var action: Int32
        public var messageIndex: Int64
        /// Reports after the first.
        public var repeats: Int64
    }

    public var apps: [AppRow] = []
    public var tokens: [ApiTokenRow] = []
    public var devices: [DeviceRow] = []
    public var statuses: [RegistrationStatusRow] = []
    /// Jobs as the last restore of each id wrote them, else as its first enqueue.
    public var outbox: [OutboxJob] = []
    public var pending: [PendingNotificationRow] = []
    public var acks: [AckRow] = []
    public var deliveries: [DeliveryRow] = []
    public var outcomes: [DeliveryOutcomeRow] = []
    public var tracking: [TrackingRow] = []
    public var parks: [(pair: TrackingPair, at: Date)] = []
    public var deadLetters: [DeadLetterRow] = []
    public var adminTokens: [AdminTokenRow] = []
    public var audit: [AuditEntryRow] = []
    public var idempotencyKeys: [IdempotencyKeyRow] = []

    /// Rows in all.
    public var count: Int {
        apps.count + tokens.count + devices.count + statuses.count + outbox.count + pending.count + acks.count
            + deliveries.count + outcomes.count + tracking.count + parks.count + deadLetters.count + adminTokens.count + audit.count
            + idempotencyKeys.count
    }

    /// The rows of a chunk of whole groups in group order: the rows of a group that one
    /// mutation leaves are taken as they are, in the chunk's order, which is key order; a group of
    /// several mutations is folded on its own (`init(_:)`).
    public init(_ chunk: SortedChunk) {
        precondition(chunk.wholeGroups, "final rows need every mutation of their rows")
        for group in chunk.groups {
            guard group.count == 1 else {
                append(RestoredRows(Array(group)))
                continue
            }
            switch group.first! {
            case .upsertApp(let app): apps.append(app)
            case .upsertApiToken(let token): tokens.append(token)
            case .upsertDevice(let device): devices.append(device)
            case .putRegistrationStatus(let status): statuses.append(status)
            case .enqueueOutbox(let job), .restoreOutbox(let job): outbox.append(job)
            case .putPending(let row): pending.append(row)
            case .putAck(let ack): acks.append(ack)
            case .putDelivery(let delivery): deliveries.append(delivery)
            case .putDeliveryOutcome(let outcome): outcomes.append(outcome)
            case .parkTracking(let pair, let at): parks.append((pair, at))
            case .putDeadLetter(let letter): deadLetters.append(letter)
            case .upsertAdminToken(let token): adminTokens.append(token)
            case .putAuditEntry(let entry): audit.append(entry)
            case .putIdempotencyKey(let row): idempotencyKeys.append(row)
            // Its counts in key order, a repeated key summed.
            case .countTracking: append(RestoredRows(Array(group)))
            case .deleteDevice, .deletePending, .clearPending, .deleteTracking, .unparkTracking, .dropTracking, .deleteDeadLetter:
                break
            }
        }
    }

    private mutating func append(_ other: RestoredRows) {
        apps += other.apps
        tokens += other.tokens
        devices += other.devices
        statuses += other.statuses
        outbox += other.outbox
        pending += other.pending
        acks += other.acks
        deliveries += other.deliveries
        outcomes += other.outcomes
        tracking += other.tracking
        parks += other.parks
        deadLetters += other.deadLetters
        adminTokens += other.adminTokens
        audit += other.audit
        idempotencyKeys += other.idempotencyKeys
    }

    public init(_ mutations: [Mutation]) {
        let plan = WritePlan(mutations)
        apps = plan.apps.values.sorted { KeyOrder.less($0.appId, $1.appId) }
        tokens = plan.tokens.values.sorted { KeyOrder.less($0.tokenId, $1.tokenId) }
        devices = plan.devices.values.compactMap(\.row).sorted { KeyOrder.less(($0.appId, $0.deviceToken), ($1.appId, $1.deviceToken)) }
        statuses = plan.statuses.values.sorted { KeyOrder.less($0.requestId, $1.requestId) }
        outbox = plan.outbox.values.map { write in
            switch write {
            case .enqueue(let job), .restore(let job, _): job
            }
        }.sorted { KeyOrder.less($0.id, $1.id) }
        // Deletes and clears remove nothing from an empty table: the puts after them remain.
        pending = plan.pendingPuts.values.sorted {
            KeyOrder.less(($0.appId, $0.deviceToken, $0.notificationId), ($1.appId, $1.deviceToken, $1.notificationId))
        }
        acks = plan.acks.values.sorted {
            KeyOrder.less(($0.appId, $0.deviceToken, $0.notificationId), ($1.appId, $1.deviceToken, $1.notificationId))
        }
        deliveries = plan.deliveries.values.sorted {
            $0.appId != $1.appId ? KeyOrder.less($0.appId, $1.appId) : KeyOrder.less($0.deliveryId, $1.deliveryId)
        }
        outcomes = plan.outcomes.values.sorted { KeyOrder.less($0.key, $1.key) }
        tracking = Self.tracking(plan.phases)
        parks = plan.parks.compactMap { pair, at in at.map { (pair, $0) } }.sorted { KeyOrder.less($0.pair, $1.pair) }
        var letters: [DeadLetterKey: DeadLetterRow] = [:]
        for (key, row) in plan.deadLetters {
            // A put leaves an existing row as it is; a delete removes it.
            if let row { if letters[key] == nil { letters[key] = row } } else { letters[key] = nil }
        }
        deadLetters = letters.values.sorted { $0.key < $1.key }
        adminTokens = plan.adminTokens.values.sorted { KeyOrder.less($0.adminTokenId, $1.adminTokenId) }
        audit = plan.audit.values.sorted { KeyOrder.less($0.commandId, $1.commandId) }
        idempotencyKeys = plan.idempotencyKeys.values.sorted(by: KeyOrder.less)
    }

    /// Mutations that write these rows into an empty store.
    public var mutations: [Mutation] {
        var mutations: [Mutation] = apps.map { .upsertApp($0) } + tokens.map { .upsertApiToken($0) } + devices.map { .upsertDevice($0) }
        mutations += statuses.map { .putRegistrationStatus($0) } + outbox.map { .restoreOutbox($0) } + pending.map { .putPending($0) }
        mutations += acks.map { .putAck($0) } + deliveries.map { .putDelivery($0) } + outcomes.map { .putDeliveryOutcome($0) }
        mutations += tracking.map { row in
            .countTracking(TrackingCounts(appId: row.appId, deliveryId: row.deliveryId, counts: [
                TrackingCount(action: TrackingAction(rawValue: Int(row.action))!, messageIndex: Int(row.messageIndex), reports: Int(row.repeats) + 1),
            ]))
        }
        mutations += parks.map { .parkTracking($0.pair, at: $0.at) } + deadLetters.map { .putDeadLetter($0) }
        mutations += adminTokens.map { .upsertAdminToken($0) } + audit.map { .putAuditEntry($0) }
        mutations += idempotencyKeys.map { .putIdempotencyKey($0) }
        return mutations
    }

    /// The tracking phases applied one after the other to no rows: a drop removes its pair's
    /// rows, a delete its keys, and a count stores a new key with its reports less one, or adds
    /// its reports to a key counted before.
    private static func tracking(_ phases: [WritePlan.TrackingPhase]) -> [TrackingRow] {
        var repeats: [WritePlan.TrackingKey: Int64] = [:]
        for phase in phases {
            if !phase.drops.isEmpty {
                let dropped = Set(phase.drops)
                repeats = repeats.filter { !dropped.contains(TrackingPair(deliveryId: $0.key.deliveryId, appId: $0.key.appId)) }
            }
            for key in phase.deletes { repeats[key] = nil }
            for (key, reports) in phase.reports { repeats[key] = repeats[key].map { $0 + reports } ?? reports - 1 }
        }
        return repeats.sorted { $0.key < $1.key }.map {
            TrackingRow(deliveryId: $0.key.deliveryId, appId: $0.key.appId, action: $0.key.action, messageIndex: $0.key.messageIndex,
                        repeats: $0.value)
        }
    }
}

/// A part of a sorter's mutations, in group order (`ChangelogSorter.drain`).
public struct SortedChunk: Sendable {
    public var mutations: [Mutation]
    /// Where each group begins in `mutations` (the first one, where a chunk begins inside a group).
    public var groupStarts: [Int]
    /// Whether the chunk holds every mutation of each group in it.
    public var wholeGroups: Bool

    package init(mutations: [Mutation], groupStarts: [Int], wholeGroups: Bool) {
        self.mutations = mutations
        self.groupStarts = groupStarts
        self.wholeGroups = wholeGroups
    }

    /// The mutations of each group, in order.
    public var groups: [ArraySlice<Mutation>] {
        zip(groupStarts, groupStarts.dropFirst() + [mutations.count]).map { mutations[$0..<$1] }
    }
}
