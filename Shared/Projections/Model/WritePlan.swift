import Contracts
import Foundation

/// The mutations of one commit, grouped by table and key, with a result equal to applying the
/// mutations one by one in order: what both stores write (PostgreSQL each group as one
/// multi-row statement, SQLite row by row), and what a restore loads (`RestoredRows`). It is
/// the one place a `Mutation` is switched over for writing (`add`); the changelog's is
/// `ChangelogWriter.encode`.
///
/// Grouping is exact because mutations of different tables commute, and within a table the
/// final state of a key follows from a few facts about its mutations:
/// - upserts of apps and tokens: the last one of a key;
/// - devices, statuses and acks: the last mutation of a key (a put's row, or none after a delete);
/// - puts of deliveries: the last one of a key;
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
package struct WritePlan: Sendable {
    package struct TrackingKey: Hashable, Comparable, Sendable {
        package var deliveryId: UUID
        package var appId: UUID
        package var part: Int
        package var action: Int32
        package var messageIndex: Int64

        package init(_ pair: TrackingPair, _ action: TrackingAction, _ messageIndex: Int) {
            deliveryId = pair.deliveryId
            appId = pair.appId
            part = pair.part
            self.action = Int32(action.rawValue)
            self.messageIndex = Int64(messageIndex)
        }

        package var pair: TrackingPair { TrackingPair(deliveryId: deliveryId, appId: appId, part: part) }

        /// Primary key order.
        package static func < (a: Self, b: Self) -> Bool {
            let (pa, pb) = (a.pair, b.pair)
            return pa != pb ? KeyOrder.less(pa, pb) : (a.action, a.messageIndex) < (b.action, b.messageIndex)
        }
    }

    package struct TrackingPhase: Sendable {
        /// Pairs whose rows and mark go.
        package var drops: [TrackingPair] = []
        package var deletes: [TrackingKey] = []
        /// Reports per (delivery, app, action, device), summed over the phase.
        package var reports = LastByKey<TrackingKey, (key: TrackingKey, reports: Int64)>()
        package var counted: Set<TrackingPair> = []

        package var isEmpty: Bool { drops.isEmpty && deletes.isEmpty && reports.isEmpty }
    }

    package enum OutboxWrite: Sendable {
        case enqueue(OutboxJob)
        case restore(OutboxJob, lowestAttempts: Int)

        package var job: OutboxJob {
            switch self {
            case .enqueue(let job), .restore(let job, _): job
            }
        }
    }

    /// The key of an app's row or a token's: each part of the app has its own (`AppPart`).
    package struct PartID: Hashable, Sendable {
        package var id: UUID
        package var part: Int
    }

    /// Text keys compare by their bytes, as the database does (Swift's `String` equality would
    /// merge canonically equivalent spellings that are distinct keys in the table).
    package struct DeviceID: Hashable, Sendable {
        package var appId: UUID
        package var token: ExactText

        package init(_ key: DeviceKey) {
            appId = key.appId
            token = ExactText(key.deviceToken)
        }
    }

    package struct PendingID: Hashable, Sendable {
        package var device: DeviceID
        package var notificationId: ExactText

        package init(_ key: PendingKey) {
            device = DeviceID(key.device)
            notificationId = ExactText(key.notificationId)
        }
    }

    package var apps = LastByKey<PartID, AppRow>()
    package var tokens = LastByKey<PartID, ApiTokenRow>()
    /// nil: deleted.
    package var devices = LastByKey<DeviceID, (key: DeviceKey, row: DeviceRow?)>()
    /// nil: deleted.
    package var statuses = LastByKey<UUID, (id: UUID, row: RegistrationStatusRow?)>()
    package var outbox = LastByKey<ExactText, OutboxWrite>()
    /// nil: deleted.
    package var acks = LastByKey<PendingID, (key: PendingKey, row: AckRow?)>()
    package var pendingDeleted = LastByKey<PendingID, PendingKey>()
    package var pendingCleared = LastByKey<DeviceID, DeviceKey>()
    /// Rows to insert once the deletes ran.
    package var pendingPuts = LastByKey<PendingID, PendingNotificationRow>()
    /// Last row of each (app, delivery).
    package var deliveries = LastByKey<DeliveryKey, DeliveryRow>()
    /// Last outcome of each (app, delivery, device).
    package var outcomes = LastByKey<DeliveryOutcomeKey, DeliveryOutcomeRow>()
    package var phases: [TrackingPhase] = []
    /// Each pair's last park mark; nil: removed.
    package var parks = LastByKey<TrackingPair, (pair: TrackingPair, at: Date?)>()
    /// Dead letters put (a row) or deleted (nil), in order.
    package var deadLetters: [(key: DeadLetterKey, row: DeadLetterRow?)] = []
    package var adminTokens = LastByKey<UUID, AdminTokenRow>()
    package var audit = LastByKey<UUID, AuditEntryRow>()
    package var idempotencyKeys = LastByKey<IdempotencyKeyID, IdempotencyKeyRow>()
    /// nil: deleted.
    package var heldPushes = LastByKey<HeldPushKey, (key: HeldPushKey, row: HeldPushRow?)>()
    package var userSettings = LastByKey<UserPartKey, UserSettingsRow>()
    /// nil: deleted.
    package var countedSends = LastByKey<CountedSendKey, (key: CountedSendKey, row: CountedSendRow?)>()

    /// The outbox writes by kind: jobs inserted unless their id is stored, and jobs written whole
    /// with the attempt count above which their recorded attempts go.
    package var outboxByKind: (enqueued: [OutboxJob], restored: [(job: OutboxJob, lowestAttempts: Int)]) {
        var enqueued: [OutboxJob] = [], restored: [(job: OutboxJob, lowestAttempts: Int)] = []
        for write in outbox.values {
            switch write {
            case .enqueue(let job): enqueued.append(job)
            case .restore(let job, let lowest): restored.append((job, lowest))
            }
        }
        return (enqueued, restored)
    }

    /// The plan of `mutations`, sorted (`sortByKey`).
    package static func inKeyOrder(_ mutations: [Mutation]) -> WritePlan {
        var plan = WritePlan(mutations)
        plan.sortByKey()
        return plan
    }

    /// Puts every table's rows in primary key order (`KeyOrder`): the order PostgreSQL writes
    /// them in, and a restore loads them in. The last step: a sorted plan takes no more mutations.
    package mutating func sortByKey() {
        apps.sort { $0.appId != $1.appId ? KeyOrder.less($0.appId, $1.appId) : $0.part < $1.part }
        tokens.sort { $0.tokenId != $1.tokenId ? KeyOrder.less($0.tokenId, $1.tokenId) : $0.part < $1.part }
        devices.sort { KeyOrder.less(($0.key.appId, $0.key.deviceToken), ($1.key.appId, $1.key.deviceToken)) }
        statuses.sort { KeyOrder.less($0.id, $1.id) }
        outbox.sort { KeyOrder.less($0.job.id, $1.job.id) }
        pendingCleared.sort { KeyOrder.less(($0.appId, $0.deviceToken), ($1.appId, $1.deviceToken)) }
        pendingDeleted.sort { KeyOrder.less($0, $1) }
        pendingPuts.sort { KeyOrder.less($0.key, $1.key) }
        acks.sort { KeyOrder.less($0.key, $1.key) }
        deliveries.sort {
            $0.appId != $1.appId ? KeyOrder.less($0.appId, $1.appId)
                : $0.deliveryId != $1.deliveryId ? KeyOrder.less($0.deliveryId, $1.deliveryId) : $0.part < $1.part
        }
        outcomes.sort { KeyOrder.less($0.key, $1.key) }
        parks.sort { KeyOrder.less($0.pair, $1.pair) }
        adminTokens.sort { KeyOrder.less($0.adminTokenId, $1.adminTokenId) }
        audit.sort { KeyOrder.less($0.commandId, $1.commandId) }
        idempotencyKeys.sort(by: KeyOrder.less)
        heldPushes.sort {
            let (a, b) = ($0.key, $1.key)
            return a.delivery.appId != b.delivery.appId ? KeyOrder.less(a.delivery.appId, b.delivery.appId)
                : a.delivery.deliveryId != b.delivery.deliveryId ? KeyOrder.less(a.delivery.deliveryId, b.delivery.deliveryId)
                : a.delivery.part != b.delivery.part ? a.delivery.part < b.delivery.part : KeyOrder.less(a.deviceToken, b.deviceToken)
        }
        userSettings.sort {
            $0.appId != $1.appId ? KeyOrder.less($0.appId, $1.appId)
                : $0.userId != $1.userId ? KeyOrder.less($0.userId, $1.userId) : $0.part < $1.part
        }
    }

    package init(_ mutations: [Mutation]) {
        var fold = Fold()
        for (index, mutation) in mutations.enumerated() { add(mutation, at: index, alone: false, &fold) }
        finish(fold)
    }

    /// The plan of a chunk of whole groups (`ChangelogSorter`). A group of one mutation is the
    /// only one of its rows in the chunk, so its row is taken without a look-up; most are.
    package init(_ chunk: SortedChunk) {
        precondition(chunk.wholeGroups, "a chunk's plan needs every mutation of its rows")
        var fold = Fold()
        let ends = chunk.groupStarts.dropFirst() + [chunk.mutations.count]
        for (start, end) in zip(chunk.groupStarts, ends) {
            let alone = end - start == 1
            for index in start..<end { add(chunk.mutations[index], at: index, alone: alone, &fold) }
            // Groups share no rows: the keys of one are not asked for again, so the look-ups
            // stay the size of a group.
            if !alone { endGroup(&fold) }
        }
        finish(fold)
    }

    /// What the fold needs until its end.
    private struct Fold {
        /// Where the last covering delete of each pending key or device happened.
        var lastPendingDelete: [PendingID: Int] = [:]
        var lastPendingClear: [DeviceID: Int] = [:]
        var pendingPuts: [(index: Int, row: PendingNotificationRow)] = []
        var phase = TrackingPhase()
    }

    /// The one place a mutation is switched over for writing: both stores write a plan, and a
    /// restore's rows are a plan's. `alone`: no other mutation of the plan touches its rows.
    private mutating func add(_ mutation: Mutation, at index: Int, alone: Bool, _ fold: inout Fold) {
        switch mutation {
        case .upsertApp(let app): apps.put(app, at: PartID(id: app.appId, part: app.part), alone: alone)
        case .upsertApiToken(let token): tokens.put(token, at: PartID(id: token.tokenId, part: token.part), alone: alone)
        case .upsertDevice(let device): devices.put((device.key, device), at: DeviceID(device.key), alone: alone)
        case .deleteDevice(let key): devices.put((key, nil), at: DeviceID(key), alone: alone)
        case .putRegistrationStatus(let status): statuses.put((status.requestId, status), at: status.requestId, alone: alone)
        case .deleteRegistrationStatus(let id): statuses.put((id, nil), at: id, alone: alone)
        case .enqueueOutbox(let job):
            // An enqueue finds a job that was enqueued or restored before it, and leaves it.
            outbox.update(at: ExactText(job.id), default: .enqueue(job), alone: alone) { _ in }
        case .restoreOutbox(let job):
            outbox.update(at: ExactText(job.id), default: .restore(job, lowestAttempts: job.attempts), alone: alone) { write in
                var lowest = job.attempts
                if case .restore(_, let earlier) = write { lowest = min(lowest, earlier) }
                write = .restore(job, lowestAttempts: lowest)
            }
        case .putPending(let row):
            if alone { pendingPuts.put(row, at: PendingID(row.key), alone: true) } else { fold.pendingPuts.append((index, row)) }
        case .deletePending(let key):
            pendingDeleted.put(key, at: PendingID(key), alone: alone)
            if !alone { fold.lastPendingDelete[PendingID(key)] = index }
        case .clearPending(let device):
            pendingCleared.put(device, at: DeviceID(device), alone: alone)
            if !alone { fold.lastPendingClear[DeviceID(device)] = index }
        case .putAck(let ack): acks.put((ack.key, ack), at: PendingID(ack.key), alone: alone)
        case .deleteAck(let key): acks.put((key, nil), at: PendingID(key), alone: alone)
        case .putDelivery(let delivery):
            deliveries.put(delivery, at: delivery.key, alone: alone)
        case .putDeliveryOutcome(let outcome): outcomes.put(outcome, at: outcome.key, alone: alone)
        case .countTracking(let batch):
            let pair = batch.pair
            // Only a later delete or drop of the pair asks; none follows a count alone.
            if !alone { fold.phase.counted.insert(pair) }
            for count in batch.counts {
                let key = TrackingKey(pair, count.action, count.messageIndex)
                fold.phase.reports.update(at: key, default: (key, Int64(count.reports))) { $0.reports += Int64(count.reports) }
            }
            // No other mutation counts the pair: its keys are not asked for again.
            if alone { fold.phase.reports.forgetKeys() }
        case .deleteTracking(let pair, let keys):
            if fold.phase.counted.contains(pair) { phases.append(fold.phase); fold.phase = TrackingPhase() }
            fold.phase.deletes += keys.map { TrackingKey(pair, $0.action, $0.messageIndex) }
        case .dropTracking(let pair):
            if fold.phase.counted.contains(pair) { phases.append(fold.phase); fold.phase = TrackingPhase() }
            fold.phase.drops.append(pair)
            parks.put((pair, nil), at: pair, alone: alone)
        case .parkTracking(let pair, let at): parks.put((pair, at), at: pair, alone: alone)
        case .unparkTracking(let pair): parks.put((pair, nil), at: pair, alone: alone)
        case .putDeadLetter(let row): deadLetters.append((row.key, row))
        case .deleteDeadLetter(let key): deadLetters.append((key, nil))
        case .upsertAdminToken(let token): adminTokens.put(token, at: token.adminTokenId, alone: alone)
        case .putAuditEntry(let entry): audit.put(entry, at: entry.commandId, alone: alone)
        case .putIdempotencyKey(let row):
            // The newest first request wins, as in the stores (`CatalogTable.newerBy`).
            idempotencyKeys.update(at: IdempotencyKeyID(scope: row.scope, key: row.key), default: row, alone: alone) { stored in
                if row.firstAt > stored.firstAt { stored = row }
            }
        case .putHeldPush(let row): heldPushes.put((row.key, row), at: row.key, alone: alone)
        case .deleteHeldPush(let key): heldPushes.put((key, nil), at: key, alone: alone)
        case .putUserSettings(let row): userSettings.put(row, at: row.key, alone: alone)
        case .putCountedSend(let row): countedSends.put((row.key, row), at: row.key, alone: alone)
        case .deleteCountedSend(let key): countedSends.put((key, nil), at: key, alone: alone)
        }
    }

    private mutating func finish(_ fold: Fold) {
        if !fold.phase.isEmpty { phases.append(fold.phase) }
        putPending(fold)
    }

    /// The pending puts after the last delete covering them; of those, the last one of a key.
    private mutating func putPending(_ fold: Fold) {
        let deletes = !fold.lastPendingDelete.isEmpty || !fold.lastPendingClear.isEmpty
        for (index, row) in fold.pendingPuts {
            let id = PendingID(row.key)
            if deletes {
                let deletedAt = max(fold.lastPendingDelete[id] ?? -1, fold.lastPendingClear[id.device] ?? -1)
                guard index > deletedAt else { continue }
            }
            pendingPuts.put(row, at: id)
        }
    }

    /// Settles a group of a chunk and forgets its keys (`init(_: SortedChunk)`).
    private mutating func endGroup(_ fold: inout Fold) {
        putPending(fold)
        fold.pendingPuts.removeAll(keepingCapacity: true)
        fold.lastPendingDelete.removeAll(keepingCapacity: true)
        fold.lastPendingClear.removeAll(keepingCapacity: true)
        fold.phase.counted.removeAll(keepingCapacity: true)
        fold.phase.reports.forgetKeys()
        apps.forgetKeys(); tokens.forgetKeys(); devices.forgetKeys(); statuses.forgetKeys(); outbox.forgetKeys()
        acks.forgetKeys(); pendingDeleted.forgetKeys(); pendingCleared.forgetKeys(); pendingPuts.forgetKeys()
        deliveries.forgetKeys(); outcomes.forgetKeys(); parks.forgetKeys(); adminTokens.forgetKeys(); audit.forgetKeys()
        idempotencyKeys.forgetKeys(); heldPushes.forgetKeys(); userSettings.forgetKeys()
    }
}

/// The last value put under each key, in the order the keys first came: the rows of a restore's
/// chunk, which comes in key order, are then in key order already.
package struct LastByKey<Key: Hashable, Value> {
    private var slots: [Key: Int] = [:]
    package private(set) var values: [Value] = []

    package init() {}

    package var isEmpty: Bool { values.isEmpty }

    /// Puts `value` as the last of `key`. `alone`: no other put of the plan names its key, which
    /// is then not kept (nor made).
    package mutating func put(_ value: Value, at key: @autoclosure () -> Key, alone: Bool = false) {
        guard !alone else { return values.append(value) }
        let slot = slot(key())
        if slot < values.count { values[slot] = value } else { values.append(value) }
    }

    /// Changes the value of `key` if it has one, else puts `initial` (`alone`: as `put`).
    package mutating func update(at key: @autoclosure () -> Key, default initial: @autoclosure () -> Value, alone: Bool = false,
                                 _ change: (inout Value) -> Void) {
        guard !alone else { return values.append(initial()) }
        let slot = slot(key())
        if slot < values.count { change(&values[slot]) } else { values.append(initial()) }
    }

    /// The slot of `key`; a new key is given the next one (`values.count`). One look-up.
    private mutating func slot(_ key: Key) -> Int {
        Self.read(&slots[key, default: values.count])
    }

    private static func read(_ slot: inout Int) -> Int { slot }
}

extension LastByKey: Sendable where Key: Sendable, Value: Sendable {}

extension LastByKey {
    /// Orders the values; their keys are forgotten, so no put may follow.
    package mutating func sort(by less: (Value, Value) -> Bool) {
        slots = [:]
        values.sort(by: less)
    }

    /// Forgets the keys put so far, keeping their values: a later put of one of them would add
    /// a second value.
    package mutating func forgetKeys() {
        if !slots.isEmpty { slots.removeAll(keepingCapacity: true) }
    }
}

/// A text key that equals another only byte for byte, as PostgreSQL compares `COLLATE "C"` text.
package struct ExactText: Hashable, Sendable {
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

    /// (delivery, app, part) keys of tracking rows and park marks.
    package static func less(_ a: TrackingPair, _ b: TrackingPair) -> Bool {
        a.deliveryId != b.deliveryId ? less(a.deliveryId, b.deliveryId) : a.appId != b.appId ? less(a.appId, b.appId) : a.part < b.part
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

    /// Keys of pending rows and acks: (app, token, notification).
    package static func less(_ a: PendingKey, _ b: PendingKey) -> Bool {
        less((a.appId, a.deviceToken, a.notificationId), (b.appId, b.deviceToken, b.notificationId))
    }

    /// (UUID, text, text) keys, e.g. pending rows by (app, token, notification).
    package static func less(_ a: (UUID, String, String), _ b: (UUID, String, String)) -> Bool {
        if a.0 != b.0 { return less(a.0, b.0) }
        let order = compare(a.1, b.1)
        return order == 0 ? less(a.2, b.2) : order < 0
    }
}

/// The key of an `idempotency_keys` row.
package struct IdempotencyKeyID: Hashable, Sendable {
    package var scope: String
    package var key: String
}
