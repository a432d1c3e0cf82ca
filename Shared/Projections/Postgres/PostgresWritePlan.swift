import Foundation

/// The mutations of one commit, grouped by kind so that each group is written by one
/// multi-row statement, with a result equal to applying the mutations one by one in order.
///
/// Grouping is exact because mutations of different tables commute, and within a table the
/// final state of a key follows from a few facts about its mutations:
/// - upserts of apps, tokens and statuses: the last one of a key;
/// - devices: the last mutation of a key (an upsert's row, or none after a delete);
/// - "first one stays" inserts (acks, deliveries): the first one of a key;
/// - outbox jobs: the last restore of an id if any (an enqueue after it finds the row), else
///   the first enqueue; attempt history goes above the smallest restored attempt count;
/// - pending rows: any delete or clear covering a key removes the stored row; what remains is
///   the first put after the last covering delete (after none: the first put, which yields to
///   a stored row).
/// Tracking is the exception: a count settles against the delivery rows of its delivery id
/// stored at that point, and a discard deletes what earlier counts of its delivery id wrote.
/// So tracking mutations and deliveries go in phases, a new phase starting where a delivery or
/// discard follows a count of the same delivery id; within a phase, deliveries are written
/// first, then discards, then the summed counts, then the settle. A processor's batch writes
/// its counts last, so it is one phase.
struct PostgresWritePlan {
    struct TrackingKey: Hashable, Comparable {
        var deliveryId: UUID
        var appId: UUID
        var action: Int32
        var messageIndex: Int64

        /// Primary key order.
        static func < (a: Self, b: Self) -> Bool {
            if a.deliveryId != b.deliveryId { return KeyOrder.less(a.deliveryId, b.deliveryId) }
            if a.appId != b.appId { return KeyOrder.less(a.appId, b.appId) }
            return (a.action, a.messageIndex) < (b.action, b.messageIndex)
        }
    }

    struct Pair: Hashable {
        var deliveryId: UUID
        var appId: UUID
    }

    struct Discard: Hashable {
        var deliveryId: UUID
        var appId: UUID
        var validBelow: Int64
    }

    struct TrackingPhase {
        /// First row of each (app, delivery).
        var deliveries: [Pair: DeliveryRow] = [:]
        var discards: [Discard] = []
        /// Reports per (delivery, app, action, device), summed over the phase.
        var reports: [TrackingKey: Int64] = [:]
        var settled: [Pair] = []
        var settledSet: Set<Pair> = []
        var countedDeliveries: Set<UUID> = []

        /// Whether writing a delivery or discard of this id within the phase (before its counts)
        /// would change what the counts of the phase write: only if they counted that delivery.
        func countedBefore(_ deliveryId: UUID) -> Bool { countedDeliveries.contains(deliveryId) }

        var isEmpty: Bool { deliveries.isEmpty && discards.isEmpty && settled.isEmpty }
    }

    enum OutboxWrite {
        case enqueue(OutboxJob)
        case restore(OutboxJob, lowestAttempts: Int)
    }

    /// Text keys compare by their bytes, as the database does (Swift's `String` equality would
    /// merge canonically equivalent spellings that are distinct keys in the table).
    struct DeviceID: Hashable {
        var appId: UUID
        var token: ExactText

        init(_ key: DeviceKey) {
            appId = key.appId
            token = ExactText(key.deviceToken)
        }
    }

    struct PendingID: Hashable {
        var device: DeviceID
        var notificationId: ExactText

        init(_ key: PendingKey) {
            device = DeviceID(key.device)
            notificationId = ExactText(key.notificationId)
        }
    }

    var apps: [UUID: AppRow] = [:]
    var tokens: [UUID: ApiTokenRow] = [:]
    /// nil: deleted.
    var devices: [DeviceID: (key: DeviceKey, row: DeviceRow?)] = [:]
    var statuses: [UUID: RegistrationStatusRow] = [:]
    var outbox: [ExactText: OutboxWrite] = [:]
    var acks: [PendingID: AckRow] = [:]
    var pendingDeleted: [PendingID: PendingKey] = [:]
    var pendingCleared: [DeviceID: DeviceKey] = [:]
    /// Rows to insert once the deletes ran.
    var pendingPuts: [PendingID: PendingNotificationRow] = [:]
    var phases: [TrackingPhase] = []
    /// Tracking parked by this commit: the first mark of each (delivery, app).
    var parkedTracking: [(deliveryId: UUID, appId: UUID, at: Date)] = []
    /// The latest expiry of parked tracking asked for (one is the same as several: the latest cutoff covers the others).
    var expireParkedBefore: Date?
    /// Dead letters put (a row) or deleted (nil), in order.
    var deadLetters: [(key: DeadLetterKey, row: DeadLetterRow?)] = []

    init(_ mutations: [Mutation]) {
        // Where the last covering delete of each pending key or device happened.
        var lastPendingDelete: [PendingID: Int] = [:]
        var lastPendingClear: [DeviceID: Int] = [:]
        var pendingPutsInOrder: [(index: Int, row: PendingNotificationRow)] = []
        var phase = TrackingPhase()

        for (index, mutation) in mutations.enumerated() {
            switch mutation {
            case .upsertApp(let app): apps[app.appId] = app
            case .upsertApiToken(let token): tokens[token.tokenId] = token
            case .upsertDevice(let device): devices[DeviceID(device.key)] = (device.key, device)
            case .deleteDevice(let key): devices[DeviceID(key)] = (key, nil)
            case .putRegistrationStatus(let status): statuses[status.requestId] = status
            case .enqueueOutbox(let job):
                if outbox[ExactText(job.id)] == nil { outbox[ExactText(job.id)] = .enqueue(job) }
            case .restoreOutbox(let job):
                var lowest = job.attempts
                if case .restore(_, let earlier) = outbox[ExactText(job.id)] { lowest = min(lowest, earlier) }
                outbox[ExactText(job.id)] = .restore(job, lowestAttempts: lowest)
            case .putPending(let row): pendingPutsInOrder.append((index, row))
            case .deletePending(let key):
                pendingDeleted[PendingID(key)] = key
                lastPendingDelete[PendingID(key)] = index
            case .clearPending(let device):
                pendingCleared[DeviceID(device)] = device
                lastPendingClear[DeviceID(device)] = index
            case .putAck(let ack):
                if acks[PendingID(ack.key)] == nil { acks[PendingID(ack.key)] = ack }
            case .putDelivery(let delivery):
                if phase.countedBefore(delivery.deliveryId) { phases.append(phase); phase = TrackingPhase() }
                let pair = Pair(deliveryId: delivery.deliveryId, appId: delivery.appId)
                if phase.deliveries[pair] == nil { phase.deliveries[pair] = delivery }
            case .discardTracking(let deliveryId, let appId, let validBelow):
                if phase.countedBefore(deliveryId) { phases.append(phase); phase = TrackingPhase() }
                phase.discards.append(Discard(deliveryId: deliveryId, appId: appId, validBelow: Int64(validBelow)))
            case .parkTracking(let deliveryId, let appId, let at):
                if !parkedTracking.contains(where: { $0.deliveryId == deliveryId && $0.appId == appId }) {
                    parkedTracking.append((deliveryId, appId, at))
                }
            case .expireParkedTracking(let before): expireParkedBefore = max(expireParkedBefore ?? before, before)
            case .putDeadLetter(let row): deadLetters.append((row.key, row))
            case .deleteDeadLetter(let key): deadLetters.append((key, nil))
            case .countTracking(let batch):
                let pair = Pair(deliveryId: batch.deliveryId, appId: batch.appId)
                if phase.settledSet.insert(pair).inserted { phase.settled.append(pair) }
                phase.countedDeliveries.insert(batch.deliveryId)
                for count in batch.counts {
                    let key = TrackingKey(deliveryId: batch.deliveryId, appId: batch.appId, action: Int32(count.action.rawValue),
                                          messageIndex: Int64(count.messageIndex))
                    phase.reports[key, default: 0] += Int64(count.reports)
                }
            }
        }
        if !phase.isEmpty { phases.append(phase) }

        for (index, row) in pendingPutsInOrder {
            let id = PendingID(row.key)
            let deletedAt = max(lastPendingDelete[id] ?? -1, lastPendingClear[id.device] ?? -1)
            // Only puts after the last covering delete survive it; of those, the first one.
            guard index > deletedAt, pendingPuts[id] == nil else { continue }
            pendingPuts[id] = row
        }
    }

    /// Delivery ids whose tracking rows this commit writes or whose deliveries it stores: their
    /// locks order concurrent sends and reports of one delivery (see `PostgresMutationWriter`).
    var trackingLockedDeliveries: Set<UUID> {
        var ids: Set<UUID> = []
        for phase in phases {
            for pair in phase.deliveries.keys { ids.insert(pair.deliveryId) }
            for discard in phase.discards { ids.insert(discard.deliveryId) }
            for pair in phase.settled { ids.insert(pair.deliveryId) }
        }
        return ids
    }
}

/// A text key that equals another only byte for byte, as PostgreSQL compares `COLLATE "C"` text.
struct ExactText: Hashable {
    var value: String

    init(_ value: String) {
        self.value = value
    }

    static func == (a: Self, b: Self) -> Bool {
        a.value.utf8.elementsEqual(b.value.utf8)
    }

    func hash(into hasher: inout Hasher) {
        var text = value
        text.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }
}

/// The order of primary keys in PostgreSQL (`uuid` bytes, `COLLATE "C"` text bytes), in which
/// multi-row statements write their rows: two transactions writing overlapping keys then take
/// their row locks in the same order and do not deadlock on each other.
enum KeyOrder {
    static func less(_ a: UUID, _ b: UUID) -> Bool {
        let (x, y) = (words(a), words(b))
        return x.0 != y.0 ? x.0 < y.0 : x.1 < y.1
    }

    /// The 16 bytes as two big-endian words, which compare as the bytes do.
    private static func words(_ id: UUID) -> (UInt64, UInt64) {
        let b = id.uuid
        let high = UInt64(b.0) << 56 | UInt64(b.1) << 48 | UInt64(b.2) << 40 | UInt64(b.3) << 32
            | UInt64(b.4) << 24 | UInt64(b.5) << 16 | UInt64(b.6) << 8 | UInt64(b.7)
        let low = UInt64(b.8) << 56 | UInt64(b.9) << 48 | UInt64(b.10) << 40 | UInt64(b.11) << 32
            | UInt64(b.12) << 24 | UInt64(b.13) << 16 | UInt64(b.14) << 8 | UInt64(b.15)
        return (high, low)
    }

    static func less(_ a: String, _ b: String) -> Bool {
        a.utf8.lexicographicallyPrecedes(b.utf8)
    }

    /// (UUID, text) keys, e.g. devices by (app, token).
    static func less(_ a: (UUID, String), _ b: (UUID, String)) -> Bool {
        a.0 != b.0 ? less(a.0, b.0) : less(a.1, b.1)
    }

    /// (UUID, text, text) keys, e.g. pending rows by (app, token, notification).
    static func less(_ a: (UUID, String, String), _ b: (UUID, String, String)) -> Bool {
        if a.0 != b.0 { return less(a.0, b.0) }
        return a.1.utf8.elementsEqual(b.1.utf8) ? less(a.2, b.2) : less(a.1, b.1)
    }
}
