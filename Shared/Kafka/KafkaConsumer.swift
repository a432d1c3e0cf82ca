import Logging

/// Group member (or, assigned its partitions by hand, a lone reader) consuming batches; no
/// auto-commit of offsets.
///
/// Where reading starts is decided by the application on every assignment
/// (`KafkaRebalanceHandler.onAssign`, or the offsets given with the partitions), not by
/// committed group offsets. Batches come from one dedicated poller thread that prefetches
/// at most one batch ahead of the application. If a partition's log no longer reaches a
/// start offset (a broker restart emptied it, or retention removed it), the batches end with
/// a `KafkaError` whose code is `OFFSET_OUT_OF_RANGE` (1) instead of waiting forever.
public final class KafkaConsumer: Sendable {
    private let core: ConsumerCore

    /// A member of the group `configuration.groupId` subscribed to `topics`: the group shares
    /// their partitions out, and `rebalance` decides where each assigned one starts.
    public convenience init(
        configuration: KafkaConsumerConfiguration,
        topics: [String],
        rebalance: KafkaRebalanceHandler,
        logger: Logger
    ) throws {
        try self.init(configuration: configuration, rebalance: rebalance, logger: logger) { client, _ throws(KafkaError) in
            try client.subscribe(topics)
        }
    }

    /// A consumer of exactly `partitions`, each from `offsets` (a partition missing there starts
    /// at its beginning), that joins no group: there is no rebalance, no other member, and no
    /// wait for a group to form. For a process that owns the partitions alone (a rebuild).
    public convenience init(
        configuration: KafkaConsumerConfiguration,
        partitions: [TopicPartition],
        startingAt offsets: [TopicPartition: Int64],
        logger: Logger
    ) throws {
        try self.init(configuration: configuration, rebalance: nil, logger: logger) { client, core throws(KafkaError) in
            if let error = core.take(partitions, startingAt: offsets, replacing: true, assign: {
                client.assign(partitions, startingAt: offsets)
            }) {
                throw error
            }
        }
    }

    /// Makes the client, lets `join` subscribe or assign it, then starts polling. Without a
    /// `rebalance` handler, the client gets no rebalance callback.
    private init(
        configuration: KafkaConsumerConfiguration,
        rebalance: KafkaRebalanceHandler?,
        logger: Logger,
        join: (RDKafkaClient, ConsumerCore) throws(KafkaError) -> Void
    ) throws {
        let core = ConsumerCore(configuration: configuration, rebalance: rebalance ?? .none, logger: logger)
        // The callbacks hold the core weakly: it owns the client, which owns them.
        var onRebalance: (@Sendable (Rebalance) -> Void)?
        if rebalance != nil {
            onRebalance = { [weak core] event in core?.rebalance(event) }
        }
        let callbacks = RDKafkaClient.Callbacks(logger: logger, onFatalError: { [weak core] error in core?.handoff.fail(error) },
                                                onRebalance: onRebalance)
        let client = try RDKafkaClient(.consumer, properties: configuration.librdkafkaProperties, callbacks: callbacks)
        core.attach(client)
        do {
            try join(client, core)
        } catch {
            client.destroy()
            throw error
        }
        core.start()
        self.core = core
    }

    deinit {
        // Safety net for a consumer dropped without `close()`: the poller thread leaves
        // the group and destroys the handle on its own.
        core.requestClose()
    }

    /// The batches as an AsyncSequence (element [KafkaConsumerMessage]), to be iterated by one task.
    /// A batch is empty only when `wake()` asked for a turn while no messages were ready.
    /// Throws KafkaError on fatal errors. Ends after close().
    ///
    /// Also throws whatever `onAssign` throws. Cancelling the iterating task ends the
    /// sequence (`nil`) without closing the consumer.
    public func batches() -> KafkaConsumerBatches {
        KafkaConsumerBatches(consumer: self, handoff: core.handoff)
    }

    /// Gives the task iterating `batches()` a turn now, with an empty batch if no messages are
    /// ready (see `BatchHandoff.wake`): for work that something other than a fetch made
    /// possible, such as a progress mark that freed waiting records. Never blocks.
    public func wake() {
        core.handoff.wake()
    }

    /// The partitions currently assigned to this member (those `onAssign` accepted).
    public var assignment: Set<TopicPartition> {
        core.partitions.withLock { $0.assignment }
    }

    /// Moves the read position of an assigned partition (used after a conflict to re-read from a stored offset).
    ///
    /// The next batch holds no message of the partition read before the seek; the first
    /// one of that partition it does hold is the message at `offset`.
    public func seek(_ partition: TopicPartition, to offset: Int64) throws {
        try core.seek(partition, to: offset)
    }

    /// The high watermark last reported by a fetch response for the partition (rd_kafka_get_watermark_offsets), nil if unknown.
    public func highWatermark(_ partition: TopicPartition) -> Int64? {
        core.client.highWatermark(partition)
    }

    /// Best-effort asynchronous commit of group offsets (only for lag tools; the store holds the truth).
    ///
    /// Offsets follow Kafka's convention: the next offset to read (last processed + 1).
    public func commit(_ offsets: [TopicPartition: Int64]) {
        guard !offsets.isEmpty else { return }
        core.client.commit(offsets)
    }

    /// Commits group offsets and returns once the broker stored them: for a member whose
    /// committed offsets are where the next owner resumes (the sender), when it gives
    /// partitions up. Blocks the calling thread up to the commit's round trip.
    public func commitAndWait(_ offsets: [TopicPartition: Int64]) throws {
        guard !offsets.isEmpty else { return }
        try core.client.commitAndWait(offsets)
    }

    /// The offsets the group committed for `partitions`, to resume from on assignment; a
    /// partition without one is missing from the answer. Blocks the calling thread up to `timeout`.
    public func committedOffsets(_ partitions: [TopicPartition], timeout: Duration = .seconds(10)) throws -> [TopicPartition: Int64] {
        guard !partitions.isEmpty else { return [:] }
        return try core.client.committed(partitions, timeout: timeout)
    }

    /// Leaves the group (revocation hook runs) and destroys the handle; idempotent.
    ///
    /// Returns once the handle is destroyed; every call waits for that.
    public func close() async {
        await core.close()
    }
}

/// The batches of a `KafkaConsumer`: each element is a non-empty array of messages in
/// partition order. It holds the consumer, which therefore stays open while iterated.
public struct KafkaConsumerBatches: AsyncSequence, Sendable {
    public typealias Element = [KafkaConsumerMessage]
    public typealias Failure = any Error

    private let consumer: KafkaConsumer
    private let handoff: BatchHandoff

    init(consumer: KafkaConsumer, handoff: BatchHandoff) {
        self.consumer = consumer
        self.handoff = handoff
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(consumer: consumer, handoff: handoff)
    }

    /// Hands out the batches one `next()` at a time; only one task may wait in `next()`.
    public struct AsyncIterator: AsyncIteratorProtocol {
        private let consumer: KafkaConsumer
        private let handoff: BatchHandoff

        init(consumer: KafkaConsumer, handoff: BatchHandoff) {
            self.consumer = consumer
            self.handoff = handoff
        }

        public mutating func next() async throws -> [KafkaConsumerMessage]? {
            try await handoff.next()
        }
    }
}
