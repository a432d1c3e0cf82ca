import Foundation

/// One change to the projections, decided by a command handler. The stores write what it says
/// and decide nothing (docs/ARCHITECTURE.md#handlers-decide-stores-write): a pending row is put
/// whether or not an ack exists, an ack deletes nothing, a tracking count settles nothing, a
/// put replaces what its key held. Outbox enqueues and dead letters are the exceptions: their
/// rows also change outside the log (deliveries of jobs, re-applies), so an existing one stays;
/// and the commit that enqueues a delivery's last app callback share merges the shares
/// (`CallbackShare.merge`, written into the same commit and its changelog entry).
public enum Mutation: Sendable, Equatable {
    case upsertApp(AppRow)
    case upsertApiToken(ApiTokenRow)
    case upsertDevice(DeviceRow)
    /// Removes the device row only; its pending notifications stay until a `.clearPending`
    /// (which the processor emits alongside).
    case deleteDevice(DeviceKey)
    case putRegistrationStatus(RegistrationStatusRow)
    /// Removes the registration status of this request id (pruned: older than its time to live).
    case deleteRegistrationStatus(UUID)
    /// Inserts the job; a job whose id already exists is left as it is.
    case enqueueOutbox(OutboxJob)
    /// Writes the whole job row: inserts it, or overwrites every column of the job with that id
    /// (its lease is released). Carries an old store's delivery progress into a rebuilt one.
    /// Recorded attempts numbered above the restored `attempts` are dropped, so that the next
    /// attempt's number is free.
    case restoreOutbox(OutboxJob)
    /// Writes the pending row (inserts it, or replaces the row of its key).
    case putPending(PendingNotificationRow)
    case deletePending(PendingKey)
    /// Removes every pending notification of the device (it was deleted or changed hands).
    case clearPending(DeviceKey)
    /// Writes the ack (inserts it, or replaces the row of its key).
    case putAck(AckRow)
    /// Removes the ack of this key (pruned: older than its time to live).
    case deleteAck(PendingKey)
    /// Writes the delivery (inserts it, or replaces the row of its key).
    case putDelivery(DeliveryRow)
    /// Writes a device's outcome of a delivery (inserts it, or replaces the row of its key).
    case putDeliveryOutcome(DeliveryOutcomeRow)
    /// Counts reports: a new (device, action) is stored with `reports - 1` repeats, a known one
    /// gets `reports` more. Needs no loaded row, so it cannot count on a stale read.
    case countTracking(TrackingCounts)
    /// Deletes these rows of the pair (reports its delivery cannot own).
    case deleteTracking(TrackingPair, [TrackingRowKey])
    /// Marks the pair's reports as parked since `at`: stored before their delivery's send.
    case parkTracking(TrackingPair, at: Date)
    /// Removes the pair's park mark: its send was applied and its rows are its delivery's.
    case unparkTracking(TrackingPair)
    /// Deletes every row of the pair and its park mark (expired, or refused whole by its send).
    case dropTracking(TrackingPair)
    /// Sets a record aside that the store refused for good; an existing row is left as it is.
    case putDeadLetter(DeadLetterRow)
    /// Removes a dead letter (it was applied again).
    case deleteDeadLetter(DeadLetterKey)
    /// Writes the named admin token (inserts it, or replaces the row of its id).
    case upsertAdminToken(AdminTokenRow)
    /// Writes an audit trail entry (inserts it, or replaces the row of its command id).
    case putAuditEntry(AuditEntryRow)
    /// The first request of an idempotency key on an admin create (a later one of its key replaces it).
    case putIdempotencyKey(IdempotencyKeyRow)
    /// Writes a held push (inserts it, or replaces the row of its key).
    case putHeldPush(HeldPushRow)
    /// Removes a held push (released, cancelled).
    case deleteHeldPush(HeldPushKey)
    /// Writes a user's settings in one part (inserts them, or replaces the row of its key).
    case putUserSettings(UserSettingsRow)
    /// Writes the users a send to an audience reached, as caps count them (inserts the row, or
    /// replaces the row of its key).
    case putCountedSend(CountedSendRow)
    /// Removes a counted send (past every cap's window).
    case deleteCountedSend(CountedSendKey)
}

/// Moves the stored consumed offset of a partition from `expected` (nil: none stored yet) to
/// `next` (the offset of the next record to read). A mismatch means another processor
/// applied this partition meanwhile, and the whole commit is refused.
public struct OffsetUpdate: Sendable, Equatable {
    public var partition: PartitionKey
    public var expected: Int64?
    public var next: Int64
    /// The event time, in milliseconds since 1970, of the partition's applied records up to
    /// `next` (docs/ARCHITECTURE.md#state-is-a-function-of-the-log); nil keeps the stored one.
    public var eventTime: Int64?

    public init(partition: PartitionKey, expected: Int64?, next: Int64, eventTime: Int64? = nil) {
        self.partition = partition
        self.expected = expected
        self.next = next
        self.eventTime = eventTime
    }
}

extension Mutation {
    /// The mutation as a rebuild writes it: outbox jobs in the `replayed` state, which no
    /// dispatcher sends (they were the previous store's to send); anything else as it is.
    public var replayed: Mutation {
        switch self {
        case .enqueueOutbox(var job):
            job.state = .replayed
            return .enqueueOutbox(job)
        case .restoreOutbox(var job):
            job.state = .replayed
            return .restoreOutbox(job)
        default:
            return self
        }
    }
}
