import Foundation

/// One change to the projections, decided by a command handler. The stores write what it says
/// and decide nothing (docs/ARCHITECTURE.md#handlers-decide-stores-write): a pending row is put
/// whether or not an ack exists, an ack deletes nothing. Tracking is still the exception:
/// `.countTracking` settles against stored deliveries and `.discardTracking` and
/// `.expireParkedTracking` delete by a rule.
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
