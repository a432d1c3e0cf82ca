import Foundation

/// The one-slot meeting point between the consumer's poller thread and the task
/// iterating the batches.
///
/// Backpressure: the poller offers a batch; if the iterator is already waiting it gets it
/// at once, otherwise the batch waits in the slot (the one prefetched batch) and the
/// poller blocks until the iterator takes it. So at most one batch is being processed
/// and one is ready, and nothing else is fetched meanwhile.
///
/// It also keeps batches consistent with seeks and revocations: a ready batch loses the
/// messages of a partition that is revoked or sought, and a batch fetched before a seek
/// loses that partition's messages when it is offered (librdkafka already discards what
/// it still held for the old position).
///
/// The poller blocks on the condition; the iterator never blocks a thread.
final class BatchHandoff: @unchecked Sendable {
    // @unchecked: every stored var below is read and written only with `condition` locked.
    private let condition = NSCondition()
    private var ready: [KafkaConsumerMessage]?
    private var waiter: UnsafeContinuation<[KafkaConsumerMessage]?, any Error>?
    private var failure: (any Error)?
    private var failureDelivered = false
    private var closeRequested = false
    private var seekGeneration = 0
    /// The application asked for a turn without new messages (`wake()`), not taken yet.
    private var wakeRequested = false
    private var lastSeek: [TopicPartition: Int] = [:]

    // MARK: Poller side

    var isCloseRequested: Bool {
        condition.withLock { closeRequested }
    }

    /// True once the sequence has a failure; the poller then fetches nothing more.
    var hasFailed: Bool {
        condition.withLock { failure != nil }
    }

    /// Marks the start of a fetch: batches are offered with this mark so that the
    /// messages of partitions sought after it can be dropped.
    func fetchMark() -> Int {
        condition.withLock { seekGeneration }
    }

    /// Hands a non-empty batch to the iterator, waiting while the previous one is still
    /// unclaimed. Returns false if the consumer is closing (the batch is dropped).
    func offer(_ batch: [KafkaConsumerMessage], fetchMark: Int) -> Bool {
        condition.lock()
        while ready != nil && !closeRequested && failure == nil {
            condition.wait()
        }
        guard !closeRequested && failure == nil else {
            condition.unlock()
            return false
        }
        // Filtered only now: the application may have sought while this thread waited.
        var batch = batch
        if seekGeneration != fetchMark {
            batch.removeAll { (lastSeek[$0.topicPartition] ?? 0) > fetchMark }
        }
        guard !batch.isEmpty else {
            condition.unlock()
            return true
        }
        if let waiter {
            self.waiter = nil
            condition.unlock()
            waiter.resume(returning: batch)
        } else {
            ready = batch
            condition.unlock()
        }
        return true
    }

    /// Ends the sequence with `error` (thrown once by the iterator, then it ends).
    /// A later failure does not replace the first.
    func fail(_ error: any Error) {
        condition.lock()
        guard failure == nil else {
            condition.unlock()
            return
        }
        failure = error
        ready = nil
        condition.broadcast()
        let waiter = self.waiter
        self.waiter = nil
        if waiter != nil { failureDelivered = true }
        condition.unlock()
        waiter?.resume(throwing: error)
    }

    /// Drops the ready batch's messages of `partitions` (they were revoked).
    func drop(_ partitions: Set<TopicPartition>) {
        condition.withLock {
            removeFromReady { partitions.contains($0.topicPartition) }
        }
    }

    /// Blocks until the consumer is asked to close.
    func waitForCloseRequest() {
        condition.withLock {
            while !closeRequested { condition.wait() }
        }
    }

    /// The consumer is closed: a waiting iterator ends (or gets a failure it has not seen).
    func finish() {
        condition.lock()
        closeRequested = true
        ready = nil
        let waiter = self.waiter
        self.waiter = nil
        let undelivered = failureDelivered ? nil : failure
        if undelivered != nil && waiter != nil { failureDelivered = true }
        condition.broadcast()
        condition.unlock()
        if let undelivered {
            waiter?.resume(throwing: undelivered)
        } else {
            waiter?.resume(returning: nil)
        }
    }

    // MARK: Application side

    /// Gives the iterator a turn now, with an empty batch when no messages are ready: for work
    /// that something other than new messages made possible. A waiting iterator gets `[]` at
    /// once; otherwise its next `next()` does, unless a batch is ready by then (which serves as
    /// the turn). Several wakes before the iterator's next turn count as one.
    func wake() {
        condition.lock()
        guard let waiter else {
            wakeRequested = true
            condition.unlock()
            return
        }
        self.waiter = nil
        condition.unlock()
        waiter.resume(returning: [])
    }

    /// Asks the poller to stop; it closes the consumer and then calls `finish()`.
    func requestClose() {
        condition.withLock {
            closeRequested = true
            condition.broadcast()
        }
    }

    /// Runs `seek` (which repositions librdkafka's fetcher) so that no batch fetched
    /// before it delivers messages of `partition` afterwards.
    func seeking<T>(_ partition: TopicPartition, _ seek: () throws -> T) rethrows -> T {
        try condition.withLock {
            seekGeneration += 1
            lastSeek[partition] = seekGeneration
            removeFromReady { $0.topicPartition == partition }
            return try seek()
        }
    }

    /// The next batch: the ready one, or the next the poller offers. nil once the
    /// consumer is closed or when the calling task is cancelled.
    func next() async throws -> [KafkaConsumerMessage]? {
        try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { continuation in
                condition.lock()
                if let failure, !failureDelivered {
                    failureDelivered = true
                    condition.unlock()
                    continuation.resume(throwing: failure)
                } else if failure != nil || Task.isCancelled {
                    condition.unlock()
                    continuation.resume(returning: nil)
                } else if let batch = ready {
                    ready = nil
                    wakeRequested = false
                    condition.broadcast()
                    condition.unlock()
                    continuation.resume(returning: batch)
                } else if closeRequested {
                    condition.unlock()
                    continuation.resume(returning: nil)
                } else if wakeRequested {
                    wakeRequested = false
                    condition.unlock()
                    continuation.resume(returning: [])
                } else {
                    precondition(waiter == nil, "KafkaConsumer batches must be iterated by one task")
                    waiter = continuation
                    condition.unlock()
                }
            }
        } onCancel: {
            // The task's cancelled flag is already set, so a `next` that has not stored
            // its continuation yet sees it under the lock; one that has is resumed here.
            condition.lock()
            let waiter = self.waiter
            self.waiter = nil
            condition.unlock()
            waiter?.resume(returning: nil)
        }
    }

    /// Must be called with `condition` locked.
    private func removeFromReady(where shouldRemove: (KafkaConsumerMessage) -> Bool) {
        guard var batch = ready else { return }
        batch.removeAll(where: shouldRemove)
        ready = batch.isEmpty ? nil : batch
        if ready == nil { condition.broadcast() }
    }
}
