import Synchronization

/// Where a record's delivery report goes: the record is produced with the address of a
/// `DeliverySlot` as its opaque, librdkafka hands that back with the report on the producer's
/// poller thread, and the slot leads to its waiter.
struct DeliverySlot {
    /// The waiter, unretained (a waiter retains itself until it finishes).
    let owner: Unmanaged<DeliveryWaiter>
    var outcome: Result<KafkaDeliveryReport, KafkaError>?
}

/// Waits for the delivery reports of the records of one send and resumes its caller once, when
/// the last is in. Subclasses say what they keep of each report.
class DeliveryWaiter {
    /// Outcomes still missing, plus one held by the enqueuing caller until it has tried
    /// every record, so the waiter cannot finish while it is still being enqueued.
    private let remaining: Atomic<Int>

    init(records: Int) {
        remaining = Atomic(records + 1)
        _ = Unmanaged.passRetained(self)
    }

    /// The delivery report of the record produced with `opaque`: its partition and offset, or
    /// why it failed.
    static func complete(_ opaque: UnsafeMutableRawPointer, _ report: Result<(partition: Int32, offset: Int64), KafkaError>) {
        let slot = opaque.assumingMemoryBound(to: DeliverySlot.self)
        slot.pointee.owner.takeUnretainedValue().delivered(slot, report)
    }

    /// Keeps what it needs of one report, then calls `release()`.
    func delivered(_ slot: UnsafeMutablePointer<DeliverySlot>, _ report: Result<(partition: Int32, offset: Int64), KafkaError>) {
        fatalError("subclass")
    }

    /// Resumes the caller with everything kept.
    func finish() {
        fatalError("subclass")
    }

    /// Called by the enqueuing caller once it has tried every record.
    final func enqueueFinished() {
        release()
    }

    final func release() {
        // Acquire-release: the finisher sees everything the other threads wrote.
        guard remaining.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 else { return }
        finish()
        Unmanaged.passUnretained(self).release()
    }
}

/// The waiting sender of N records (one for a single send): collects the N delivery reports,
/// in record order, with no object per record. Record i is produced with slot i as its opaque;
/// the slot's position is the record's index.
final class DeliveryBatch: DeliveryWaiter {
    private let records: [KafkaProducerRecord]
    private let slots: UnsafeMutablePointer<DeliverySlot>
    private let continuation: UnsafeContinuation<[KafkaDeliveryReport], any Error>

    /// Creates the batch retained once; it releases itself when it finishes.
    init(records: [KafkaProducerRecord], continuation: UnsafeContinuation<[KafkaDeliveryReport], any Error>) {
        self.records = records
        self.continuation = continuation
        slots = .allocate(capacity: records.count)
        super.init(records: records.count)
        let owner = Unmanaged<DeliveryWaiter>.passUnretained(self)
        for index in 0..<records.count {
            (slots + index).initialize(to: DeliverySlot(owner: owner, outcome: nil))
        }
    }

    deinit {
        slots.deinitialize(count: records.count)
        slots.deallocate()
    }

    /// The opaque to produce record `index` with.
    func opaque(for index: Int) -> UnsafeMutableRawPointer {
        UnsafeMutableRawPointer(slots + index)
    }

    /// Records the outcome of record `index`. Each index is completed exactly once, by the
    /// delivery report or by the enqueuing caller when librdkafka refused the record.
    func complete(_ index: Int, _ outcome: Result<KafkaDeliveryReport, KafkaError>) {
        slots[index].outcome = outcome
        release()
    }

    override func delivered(_ slot: UnsafeMutablePointer<DeliverySlot>, _ report: Result<(partition: Int32, offset: Int64), KafkaError>) {
        let index = slot - slots
        let topic = records[index].topic
        complete(index, report.map { KafkaDeliveryReport(topic: topic, partition: $0.partition, offset: $0.offset) })
    }

    override func finish() {
        var reports: [KafkaDeliveryReport] = []
        reports.reserveCapacity(records.count)
        var firstFailure: KafkaError?
        for index in 0..<records.count {
            switch slots[index].outcome! {
            case .success(let report): reports.append(report)
            case .failure(let error): if firstFailure == nil { firstFailure = error }
            }
        }
        if let firstFailure {
            continuation.resume(throwing: firstFailure)
        } else {
            continuation.resume(returning: reports)
        }
    }
}

/// The waiting sender of N records that needs only to know whether all were acknowledged:
/// every record carries the one slot, and a report costs a decrement (and a lock on failure).
final class DeliveryCount: DeliveryWaiter {
    private let slot: UnsafeMutablePointer<DeliverySlot>
    private let firstFailure = Mutex<KafkaError?>(nil)
    private let continuation: UnsafeContinuation<Void, any Error>

    /// Creates the count retained once; it releases itself when it finishes.
    init(records: Int, continuation: UnsafeContinuation<Void, any Error>) {
        self.continuation = continuation
        slot = .allocate(capacity: 1)
        super.init(records: records)
        slot.initialize(to: DeliverySlot(owner: .passUnretained(self), outcome: nil))
    }

    deinit {
        slot.deinitialize(count: 1)
        slot.deallocate()
    }

    /// The opaque to produce every record with.
    var opaque: UnsafeMutableRawPointer { UnsafeMutableRawPointer(slot) }

    /// A record that failed, by its report or because librdkafka refused it.
    func failed(_ error: KafkaError) {
        firstFailure.withLock { if $0 == nil { $0 = error } }
        release()
    }

    override func delivered(_ slot: UnsafeMutablePointer<DeliverySlot>, _ report: Result<(partition: Int32, offset: Int64), KafkaError>) {
        if case .failure(let error) = report {
            failed(error)
        } else {
            release()
        }
    }

    override func finish() {
        if let error = firstFailure.withLock({ $0 }) {
            continuation.resume(throwing: error)
        } else {
            continuation.resume()
        }
    }
}
