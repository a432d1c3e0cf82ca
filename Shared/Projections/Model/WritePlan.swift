import Contracts
import Foundation

/// The mutations of one commit, grouped by kind so that each group is written by one
/// multi-row statement, with a result equal to applying the mutations one by one in order.
///
/// Grouping is exact because mutations of different tables commute, and within a table the
/// final state of a key follows from a few facts about its mutations:
/// - upserts of apps, tokens and statuses: the last one of a key;
/// - devices: the last mutation of a key (an upsert's row, or none after a delete);
/// - puts of acks and deliveries: the last one of a key;
/// - admin tokens and audit entries: the last one of a key;
/// - outbox jobs: the last restore of an id if any (an enqueue after it finds the row), else
///   the first enqueue; attempt history goes above the smallest restored attempt count;
/// - pending rows: any delete or clear covering a key removes the stored row; what remains is
///   the last put after the last covering delete, if any;
/// - tracking rows: a count adds to what the deletes before it left, so tracking goes in phases,
///   a new phase starting where a delete or drop follows a count of the same pair; within a
///   phase the drops and deletes go first, then the summed counts. A processor's batch writes
///   its counts last, so it is one phase;
/// - park marks: the last mutation of a pair (a park's time, or none after an unpark or drop).
package struct WritePlan {
    package struct TrackingKey: Hashable, Comparable {
        package var deliveryId: UUID
        package var appId: UUID
        package var action: Int32
        package var messageIndex: Int64

        package init(_ pair: TrackingPair, _ action: TrackingAction, _ messageIndex: Int) {
            deliveryId = pair.deliveryId
            appId = pair.appId
            self.action = Int32(action.rawValue)
            self.messageIndex = Int64(messageIndex)
        }

        /// Primary key order.
        package static func < (a: Self, b: Self) -> Bool {
            let (pa, pb) = (TrackingPair(deliveryId: a.deliveryId, appId: a.appId), TrackingPair(deliveryId: b.deliveryId, appId: b.appId))
            return pa != pb ? KeyOrder.less(pa, pb) : (a.action, a.messageIndex) < (b.action, b.messageIndex)
        }
    }

    package struct TrackingPhase {
        /// Pairs whose rows and mark go.
        package var drops: [TrackingPair] = []
        package var deletes: [TrackingKey] = []
        /// Reports per (delivery, app, action, device), summed over the phase.
        package var reports: [TrackingKey: Int64] = [:]
        package var counted: Set<TrackingPair> = []

        package var isEmpty: Bool { drops.isEmpty && deletes.isEmpty && reports.isEmpty }
    }

    package enum OutboxWrite {
        case enqueue(OutboxJob)
        case restore(OutboxJob, lowestAttempts: Int)
    }

    /// Text keys compare by their bytes, as the database does (Swift's `String` equality would
    /// merge canonically equivalent spellings that are distinct keys in the table).
    package struct DeviceID: Hashable {
        package var appId: UUID
        package var token: ExactText

        package init(_ key: DeviceKey) {
            appId = key.appId
            token = ExactText(key.deviceToken)
        }
    }

    package struct PendingID: Hashable {
        package var device: DeviceID
        package var notificationId: ExactText

        package init(_ key: PendingKey) {
            device = DeviceID(key.device)
            notificationId = ExactText(key.notificationId)
        }
    }

    package var apps: [UUID: AppRow] = [:]
    package var tokens: [UUID: ApiTokenRow] = [:]
    /// nil: deleted.
    package var devices: [DeviceID: (key: DeviceKey, row: DeviceRow?)] = [:]
    package var statuses: [UUID: RegistrationStatusRow] = [:]
    package var outbox: [ExactText: OutboxWrite] = [:]
    package var acks: [PendingID: AckRow] = [:]
    package var pendingDeleted: [PendingID: PendingKey] = [:]
    package var pendingCleared: [DeviceID: DeviceKey] = [:]
    /// Rows to insert once the deletes ran.
    package var pendingPuts: [PendingID: PendingNotificationRow] = [:]
    /// Last row of each (app, delivery).
    package var deliveries: [TrackingPair: DeliveryRow] = [:]
    /// Last outcome of each (app, delivery, device).
    package var outcomes: [DeliveryOutcomeKey: DeliveryOutcomeRow] = [:]
    package var phases: [TrackingPhase] = []
    /// Each pair's last park mark; nil: removed.
    package var parks: [TrackingPair: Date?] = [:]
    /// Dead letters put (a row) or deleted (nil), in order.
    package var deadLetters: [(key: DeadLetterKey, row: DeadLetterRow?)] = []
    package var adminTokens: [UUID: AdminTokenRow] = [:]
    package var audit: [UUID: AuditEntryRow] = [:]
    package var idempotencyKeys: [IdempotencyKeyID: IdempotencyKeyRow] = [:]

    package init(_ mutations: [Mutation]) {
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
            case .putAck(let ack): acks[PendingID(ack.key)] = ack
            case .putDelivery(let delivery): deliveries[TrackingPair(deliveryId: delivery.deliveryId, appId: delivery.appId)] = delivery
            case .putDeliveryOutcome(let outcome): outcomes[outcome.key] = outcome
            case .countTracking(let batch):
                let pair = TrackingPair(deliveryId: batch.deliveryId, appId: batch.appId)
                phase.counted.insert(pair)
                for count in batch.counts {
                    phase.reports[TrackingKey(pair, count.action, count.messageIndex), default: 0] += Int64(count.reports)
                }
            case .deleteTracking(let pair, let keys):
                if phase.counted.contains(pair) { phases.append(phase); phase = TrackingPhase() }
                phase.deletes += keys.map { TrackingKey(pair, $0.action, $0.messageIndex) }
            case .dropTracking(let pair):
                if phase.counted.contains(pair) { phases.append(phase); phase = TrackingPhase() }
                phase.drops.append(pair)
                parks[pair] = .some(nil)
            case .parkTracking(let pair, let at): parks[pair] = at
            case .unparkTracking(let pair): parks[pair] = .some(nil)
            case .putDeadLetter(let row): deadLetters.append((row.key, row))
            case .deleteDeadLetter(let key): deadLetters.append((key, nil))
            case .upsertAdminToken(let token): adminTokens[token.adminTokenId] = token
            case .putAuditEntry(let entry): audit[entry.commandId] = entry
            case .putIdempotencyKey(let row): idempotencyKeys[IdempotencyKeyID(scope: row.scope, key: row.key)] = row
            }
        }
        if !phase.isEmpty { phases.append(phase) }

        for (index, row) in pendingPutsInOrder {
            let id = PendingID(row.key)
            let deletedAt = max(lastPendingDelete[id] ?? -1, lastPendingClear[id.device] ?? -1)
            // Only puts after the last covering delete survive it; of those, the last one.
            guard index > deletedAt else { continue }
            pendingPuts[id] = row
        }
    }

}

/// A text key that equals another only byte for byte, as PostgreSQL compares `COLLATE "C"` text.
package struct ExactText: Hashable {
    package var value: String

    package init(_ value: String) {
        self.value = value
    }

    package static func == (a: Self, b: Self) -> Bool {
        KeyOrder.compare(a.value, b.value) == 0
    }

    package func hash(into hasher: inout Hasher) {
        var text = value
        text.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }
}

/// The order of primary keys in PostgreSQL (`uuid` bytes, `COLLATE "C"` text bytes), in which
/// multi-row statements write their rows: two transactions writing overlapping keys then take
/// their row locks in the same order and do not deadlock on each other.
package enum KeyOrder {
    package static func less(_ a: UUID, _ b: UUID) -> Bool {
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

    package static func less(_ a: String, _ b: String) -> Bool {
        compare(a, b) < 0
    }

    package static func less(_ a: IdempotencyKeyRow, _ b: IdempotencyKeyRow) -> Bool {
        a.scope != b.scope ? less(a.scope, b.scope) : less(a.key, b.key)
    }

    /// Compares the UTF-8 bytes (`memcmp`, a shorter prefix first): the generic comparison of
    /// two `UTF8View`s goes byte by byte, and was most of a restore's sorting.
    package static func compare(_ a: String, _ b: String) -> Int {
        var (a, b) = (a, b)
        return a.withUTF8 { x in
            b.withUTF8 { y in
                let common = min(x.count, y.count)
                let order = common == 0 ? 0 : memcmp(x.baseAddress!, y.baseAddress!, common)
                return order != 0 ? Int(order) : x.count - y.count
            }
        }
    }

    /// (delivery, app) keys of tracking rows and park marks.
    package static func less(_ a: TrackingPair, _ b: TrackingPair) -> Bool {
        a.deliveryId != b.deliveryId ? less(a.deliveryId, b.deliveryId) : less(a.appId, b.appId)
    }

    /// (app, delivery, message index) keys of delivery outcomes.
    package static func less(_ a: DeliveryOutcomeKey, _ b: DeliveryOutcomeKey) -> Bool {
        if a.appId != b.appId { return less(a.appId, b.appId) }
        if a.deliveryId != b.deliveryId { return less(a.deliveryId, b.deliveryId) }
        return a.messageIndex < b.messageIndex
    }

    /// (UUID, text) keys, e.g. devices by (app, token).
    package static func less(_ a: (UUID, String), _ b: (UUID, String)) -> Bool {
        a.0 != b.0 ? less(a.0, b.0) : less(a.1, b.1)
    }

    /// (UUID, text, text) keys, e.g. pending rows by (app, token, notification).
    package static func less(_ a: (UUID, String, String), _ b: (UUID, String, String)) -> Bool {
        if a.0 != b.0 { return less(a.0, b.0) }
        let order = compare(a.1, b.1)
        return order == 0 ? less(a.2, b.2) : order < 0
    }
}

/// The key of an `idempotency_keys` row.
package struct IdempotencyKeyID: Hashable {
    package var scope: String
    package var key: String
}
