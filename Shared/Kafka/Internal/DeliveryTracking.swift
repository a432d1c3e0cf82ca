import Synchronization

/// The waiting sender of N records (one for a single send): collects N outcomes and resumes
/// its continuation once, with no object per record.
///
/// Record i is produced with the address of slot i as its opaque; librdkafka hands that back
/// with the record's delivery report, on the producer's poller thread. The slot leads back to
/// its batch, and its position is the record's index.
final class DeliveryBatch {
    private struct Slot {
        /// The owning batch, unretained (the batch retains itself until it finishes).
        let owner: UnsafeMutableRawPointer
        var outcome: Result<KafkaDeliveryReport, KafkaError>?
    }

    private let records: [KafkaProducerRecord]
    private let slots: UnsafeMutablePointer<Slot>
    /// Outcomes still missing, plus one held by the enqueuing caller until it has tried
    /// every record, so the batch cannot finish while it is still being enqueued.
    private let remaining: Atomic<Int>
    private let continuation: UnsafeContinuation<[KafkaDeliveryReport], any Error>

    /// Creates the batch retained once; it releases itself when it finishes.
    static func start(
        records: [KafkaProducerRecord],
        continuation: UnsafeContinuation<[KafkaDeliveryReport], any Error>
    ) -> DeliveryBatch {
        let batch = DeliveryBatch(records: records, continuation: continuation)
        _ = Unmanaged.passRetained(batch)
        return batch
    }

    private init(records: [KafkaProducerRecord], continuation: UnsafeContinuation<[KafkaDeliveryReport], any Error>) {
        self.records = records
        self.continuation = continuation
        remaining = Atomic(records.count + 1)
        slots = .allocate(capacity: records.count)
        let owner = Unmanaged.passUnretained(self).toOpaque()
        for index in 0..<records.count {
            (slots + index).initialize(to: Slot(owner: owner, outcome: nil))
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

    /// The delivery report of the record produced with `opaque`: its partition and offset, or
    /// why it failed.
    static func complete(_ opaque: UnsafeMutableRawPointer, _ report: Result<(partition: Int32, offset: Int64), KafkaError>) {
        let slot = opaque.assumingMemoryBound(to: Slot.self)
        let batch = Unmanaged<DeliveryBatch>.fromOpaque(slot.pointee.owner).takeUnretainedValue()
        let index = slot - batch.slots
        let topic = batch.records[index].topic
        batch.complete(index, report.map { KafkaDeliveryReport(topic: topic, partition: $0.partition, offset: $0.offset) })
    }

    /// Called by the enqueuing caller once it has tried every record.
    func enqueueFinished() {
        release()
    }

    private func release() {
        // Acquire-release: the finisher sees every slot written by the other threads.
        guard remaining.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 else { return }
        finish()
    }

    private func finish() {
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
        Unmanaged.passUnretained(self).release()
    }
}
