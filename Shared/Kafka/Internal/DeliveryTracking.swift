import CRdKafka
import Synchronization

// How a delivery report finds its waiting caller.
//
// Each produced message carries an opaque pointer that librdkafka hands back in the
// delivery report, on the producer's poller thread:
// - `send(_ record:)` passes a retained `SingleDelivery`; the report resumes its
//   continuation and releases it.
// - `send(_ records:)` allocates one `BatchDelivery` for all N records (no per-record
//   object): record i's opaque points at slot i of the batch, tagged with the low bit so
//   the callback can tell it from a `SingleDelivery` (objects and slots are at least
//   8-byte aligned, so the bit is otherwise always zero). The slot leads back to the
//   batch and its position is the record's index; the last of the N reports resumes the
//   batch's single continuation.

/// The waiting caller of a single-record send.
final class SingleDelivery {
    let topic: String
    let continuation: UnsafeContinuation<KafkaDeliveryReport, any Error>

    init(topic: String, continuation: UnsafeContinuation<KafkaDeliveryReport, any Error>) {
        self.topic = topic
        self.continuation = continuation
    }
}

/// The waiting caller of a batch send: collects N outcomes, resumes once.
final class BatchDelivery {
    struct Slot {
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
    ) -> BatchDelivery {
        let batch = BatchDelivery(records: records, continuation: continuation)
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
        UnsafeMutableRawPointer(bitPattern: Int(bitPattern: slots + index) | 1)!
    }

    /// Records the outcome of record `index`. Each index is completed exactly once, by the
    /// delivery report or by the enqueuing caller when librdkafka refused the record.
    func complete(_ index: Int, _ outcome: Result<KafkaDeliveryReport, KafkaError>) {
        slots[index].outcome = outcome
        release()
    }

    /// Called by the enqueuing caller once it has tried every record.
    func enqueueFinished() {
        release()
    }

    func topic(at index: Int) -> String {
        records[index].topic
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

    /// The batch and record index a tagged opaque stands for, or nil for a `SingleDelivery`.
    static func slot(from opaque: UnsafeMutableRawPointer) -> (BatchDelivery, Int)? {
        let bits = Int(bitPattern: opaque)
        guard bits & 1 == 1 else { return nil }
        let slot = UnsafeMutablePointer<Slot>(bitPattern: bits & ~1)!
        let batch = Unmanaged<BatchDelivery>.fromOpaque(slot.pointee.owner).takeUnretainedValue()
        return (batch, slot - batch.slots)
    }
}

enum DeliveryReports {
    /// `dr_msg_cb`: runs on the thread that polls the producer (its poller thread, or a
    /// flush during shutdown) and hands the outcome to the waiting caller.
    static let callback: @convention(c) (OpaquePointer?, UnsafePointer<rd_kafka_message_t>?, UnsafeMutableRawPointer?) -> Void = {
        rk, message, _ in
        guard let message, let opaque = message.pointee._private else { return }
        let failure: KafkaError?
        let code = message.pointee.err
        if code == RD_KAFKA_RESP_ERR_NO_ERROR {
            failure = nil
        } else if code == RD_KAFKA_RESP_ERR__FATAL, let rk {
            failure = KafkaError.fatal(of: rk)
        } else {
            // Not rd_kafka_message_errstr: for a delivery report it returns the record's
            // payload (not NUL-terminated) as the "error string".
            failure = KafkaError(code)
        }
        let partition = message.pointee.partition
        let offset = message.pointee.offset

        if let (batch, index) = BatchDelivery.slot(from: opaque) {
            if let failure {
                batch.complete(index, .failure(failure))
            } else {
                let report = KafkaDeliveryReport(topic: batch.topic(at: index), partition: partition, offset: offset)
                batch.complete(index, .success(report))
            }
        } else {
            let single = Unmanaged<SingleDelivery>.fromOpaque(opaque).takeRetainedValue()
            if let failure {
                single.continuation.resume(throwing: failure)
            } else {
                single.continuation.resume(
                    returning: KafkaDeliveryReport(topic: single.topic, partition: partition, offset: offset)
                )
            }
        }
    }
}
