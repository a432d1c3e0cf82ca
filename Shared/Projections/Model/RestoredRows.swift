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
        public var part: Int = 0

        public var pair: TrackingPair { TrackingPair(deliveryId: deliveryId, appId: appId, part: part) }
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
    public var heldPushes: [HeldPushRow] = []
    public var userSettings: [UserSettingsRow] = []
    public var countedSends: [CountedSendRow] = []

    /// Rows in all.
    public var count: Int {
        apps.count + tokens.count + devices.count + statuses.count + outbox.count + pending.count + acks.count
            + deliveries.count + outcomes.count + tracking.count + parks.count + deadLetters.count + adminTokens.count + audit.count
            + idempotencyKeys.count + heldPushes.count + userSettings.count + countedSends.count
    }

    /// The rows of a chunk of whole groups. The chunk comes in group order, which is key order,
    /// so the plan's rows (`LastByKey`: in the order their keys first came) are in order but for
    /// the keys inside a group; its sort is then about one comparison a row.
    public init(_ chunk: SortedChunk) {
        var plan = WritePlan(chunk)
        plan.sortByKey()
        self.init(sorted: plan)
    }

    public init(_ mutations: [Mutation]) {
        self.init(sorted: WritePlan.inKeyOrder(mutations))
    }

    private init(sorted plan: borrowing WritePlan) {
        apps = plan.apps.values
        tokens = plan.tokens.values
        devices = plan.devices.values.compactMap(\.row)
        statuses = plan.statuses.values.compactMap(\.row)
        outbox = plan.outbox.values.map(\.job)
        // Deletes and clears remove nothing from an empty table: the puts after them remain.
        pending = plan.pendingPuts.values
        acks = plan.acks.values.compactMap(\.row)
        deliveries = plan.deliveries.values
        outcomes = plan.outcomes.values
        tracking = Self.tracking(plan.phases)
        parks = plan.parks.values.compactMap { park in park.at.map { (park.pair, $0) } }
        var letters: [DeadLetterKey: DeadLetterRow] = [:]
        for (key, row) in plan.deadLetters {
            // A put leaves an existing row as it is; a delete removes it.
            if let row { if letters[key] == nil { letters[key] = row } } else { letters[key] = nil }
        }
        deadLetters = letters.values.sorted { $0.key < $1.key }
        adminTokens = plan.adminTokens.values
        audit = plan.audit.values
        idempotencyKeys = plan.idempotencyKeys.values
        heldPushes = plan.heldPushes.values.compactMap(\.row)
        userSettings = plan.userSettings.values
        countedSends = plan.countedSends.values.compactMap(\.row)
    }

    /// Mutations that write these rows into an empty store.
    public var mutations: [Mutation] {
        var mutations: [Mutation] = apps.map { .upsertApp($0) } + tokens.map { .upsertApiToken($0) } + devices.map { .upsertDevice($0) }
        mutations += statuses.map { .putRegistrationStatus($0) } + outbox.map { .restoreOutbox($0) } + pending.map { .putPending($0) }
        mutations += acks.map { .putAck($0) } + deliveries.map { .putDelivery($0) } + outcomes.map { .putDeliveryOutcome($0) }
        mutations += tracking.map { row in
            .countTracking(TrackingCounts(appId: row.appId, deliveryId: row.deliveryId, counts: [
                TrackingCount(action: TrackingAction(rawValue: Int(row.action))!, messageIndex: Int(row.messageIndex), reports: Int(row.repeats) + 1),
            ], part: row.part))
        }
        mutations += parks.map { .parkTracking($0.pair, at: $0.at) } + deadLetters.map { .putDeadLetter($0) }
        mutations += adminTokens.map { .upsertAdminToken($0) } + audit.map { .putAuditEntry($0) }
        mutations += idempotencyKeys.map { .putIdempotencyKey($0) } + heldPushes.map { .putHeldPush($0) }
        mutations += userSettings.map { .putUserSettings($0) } + countedSends.map { .putCountedSend($0) }
        return mutations
    }

    /// The tracking phases applied one after the other to no rows: a drop removes its pair's
    /// rows, a delete its keys, and a count stores a new key with its reports less one, or adds
    /// its reports to a key counted before.
    private static func tracking(_ phases: [WritePlan.TrackingPhase]) -> [TrackingRow] {
        // One phase (a restore's chunk has one unless a pair is counted, then deleted): its
        // drops and deletes, which go first, find nothing.
        if phases.count == 1 {
            return rows(phases[0].reports.values.map { ($0.key, $0.reports - 1) })
        }
        var repeats: [WritePlan.TrackingKey: Int64] = [:]
        // The keys in the order they were first counted: a chunk's are in order but within a pair.
        var order: [WritePlan.TrackingKey] = []
        for phase in phases {
            if !phase.drops.isEmpty {
                let dropped = Set(phase.drops)
                repeats = repeats.filter { !dropped.contains($0.key.pair) }
            }
            for key in phase.deletes { repeats[key] = nil }
            for (key, reports) in phase.reports.values {
                if let counted = repeats[key] {
                    repeats[key] = counted + reports
                } else {
                    repeats[key] = reports - 1
                    order.append(key)
                }
            }
        }
        // A key dropped and counted again is listed twice: its row goes at the first.
        return rows(order.compactMap { key in repeats.removeValue(forKey: key).map { (key, $0) } })
    }

    /// Rows of (key, repeats) in key order.
    private static func rows(_ repeats: [(WritePlan.TrackingKey, Int64)]) -> [TrackingRow] {
        repeats.sorted { $0.0 < $1.0 }.map { key, repeats in
            TrackingRow(deliveryId: key.deliveryId, appId: key.appId, action: key.action, messageIndex: key.messageIndex, repeats: repeats,
                        part: key.part)
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
