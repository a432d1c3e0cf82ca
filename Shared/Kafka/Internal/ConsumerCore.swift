import Foundation
import Logging
import Synchronization

/// Everything a `KafkaConsumer` shares between its poller thread and the application:
/// the client, the batch handoff, the assignment and the log-end check.
///
/// One dedicated thread (started by `start()`) does all reading: `MessageBatchReader.read`,
/// which also runs the rebalance callback, so both rebalance hooks run on that thread and it
/// may block while awaiting them. The same thread closes the client, which is why `close()`
/// only asks and then waits.
final class ConsumerCore: Sendable {
    // Written once in `attach`, before the poller thread exists and before the consumer is
    // visible to any other thread.
    nonisolated(unsafe) private(set) var client: RDKafkaClient!

    let handoff = BatchHandoff()
    let partitions = Mutex(PartitionState())
    let rebalanceHandler: KafkaRebalanceHandler
    let logger: Logger
    private let maxBatchSize: Int
    private let batchWait: Duration
    private let closed = Mutex(CloseState())

    struct PartitionState {
        var assignment: Set<TopicPartition> = []
        var logEnds = LogEndCheck()
    }

    private struct CloseState {
        var isClosed = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    init(configuration: KafkaConsumerConfiguration, rebalance: KafkaRebalanceHandler, logger: Logger) {
        rebalanceHandler = rebalance
        self.logger = logger
        maxBatchSize = max(1, configuration.maxBatchSize)
        batchWait = max(.zero, configuration.batchWait)
    }

    /// Takes ownership of the client, before it subscribes or is assigned partitions.
    func attach(_ client: RDKafkaClient) {
        self.client = client
    }

    /// Starts the poller thread, once the client is subscribed (or assigned).
    func start() {
        DedicatedThread.start(name: "kafka-consumer-poll") { [self] in
            pollUntilClosed()
            closeClient()
        }
    }

    // MARK: Closing

    /// Asks the poller to close the consumer and returns at once.
    func requestClose() {
        handoff.requestClose()
        client.wakeReader()
    }

    /// Asks the poller to close the consumer and waits until the client is destroyed.
    func close() async {
        requestClose()
        await withCheckedContinuation { continuation in
            let alreadyClosed = closed.withLock { state in
                if !state.isClosed { state.waiters.append(continuation) }
                return state.isClosed
            }
            if alreadyClosed { continuation.resume() }
        }
    }

    // MARK: Poller thread

    private func pollUntilClosed() {
        let reader = MessageBatchReader(client: client, maxBatchSize: maxBatchSize)
        while !handoff.isCloseRequested {
            if handoff.hasFailed {
                // Nothing more is read after a failure; the client stays until close().
                handoff.waitForCloseRequest()
                return
            }
            let fetchMark = handoff.fetchMark()
            let (batch, errors) = reader.read(firstWait: batchWait)
            errors.forEach(handle)
            checkLogEnds(after: batch)
            if !batch.isEmpty {
                // A refused offer means closing or failed; the loop's checks handle both.
                _ = handoff.offer(batch, fetchMark: fetchMark)
            }
        }
    }

    /// Per-partition errors arrive in place of records. Those that mean the partition cannot
    /// be read as the application expects end the sequence; the rest are transient and
    /// librdkafka retries them itself.
    private func handle(_ consumeError: ConsumeError) {
        let error = consumeError.error
        let partition = consumeError.partition.map(String.init(describing:))
        switch error.code {
        case .partitionEOF:
            return
        case .autoOffsetReset, .offsetOutOfRange, .logTruncation:
            var vanished = KafkaError(
                .offsetOutOfRange,
                message: "the stored offset \(consumeError.offset) of \(partition ?? "a partition") "
                    + "is out of range on the broker (\(error.message)): the log this state was built from no longer exists"
            )
            vanished.isRetriable = false
            handoff.fail(vanished)
        case .fatal, .topicAuthorizationFailed, .groupAuthorizationFailed, .clusterAuthorizationFailed,
             .authentication, .saslAuthenticationFailed:
            handoff.fail(error)
        default:
            logger.warning("Kafka consumer error", metadata: ["error": "\(error)", "partition": "\(partition ?? "-")"])
        }
    }

    /// Records what the batch proves about each partition's end, then compares every
    /// claim with the high watermarks the fetch responses reported.
    private func checkLogEnds(after batch: [KafkaConsumerMessage]) {
        var lastRead: [TopicPartition: Int64] = [:]
        for message in batch {
            lastRead[message.topicPartition] = message.offset
        }
        let tracked = partitions.withLock { state in
            for (partition, offset) in lastRead where state.assignment.contains(partition) {
                state.logEnds.claimRead(offset, for: partition)
            }
            return state.logEnds.partitions
        }
        guard !tracked.isEmpty else { return }
        var highWatermarks: [TopicPartition: Int64] = [:]
        for partition in tracked {
            highWatermarks[partition] = client.highWatermark(partition)
        }
        if let error = partitions.withLock({ $0.logEnds.check(highWatermarks: highWatermarks) }) {
            logger.error("Kafka log vanished", metadata: ["error": "\(error)"])
            handoff.fail(error)
        }
    }

    /// Leaves the group (the revocation hook runs here, on the poller thread) and destroys
    /// the client once no application call is using it.
    private func closeClient() {
        client.closeConsumer(leaveGroupWithin: .seconds(10))
        handoff.finish()
        let waiters = closed.withLock { state in
            state.isClosed = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    // MARK: Rebalances (on the poller thread)

    func rebalance(_ rebalance: Rebalance) {
        logger.info("Kafka rebalance", metadata: ["event": "\(rebalance.event)", "partitions": "\(rebalance.partitions)"])
        switch rebalance.event {
        case .assign:
            assign(rebalance)
        case .revoke:
            revoke(rebalance)
        case .failed(let error):
            logger.error("Kafka rebalance failed", metadata: ["error": "\(error)"])
            revoke(rebalance)
        }
    }

    private func assign(_ rebalance: Rebalance) {
        guard !handoff.hasFailed && !handoff.isCloseRequested else {
            // Nothing will be read any more: take no partitions and run no hook.
            rebalance.decline(on: client)
            return
        }
        let offsets: [TopicPartition: Int64]
        do {
            let onAssign = rebalanceHandler.onAssign
            let partitions = rebalance.partitions
            offsets = try DedicatedThread.awaitTask { try await onAssign(partitions) }
        } catch {
            logger.error("Kafka onAssign failed", metadata: ["error": "\(error)"])
            handoff.fail(error)
            rebalance.decline(on: client)
            return
        }
        let error = take(rebalance.partitions, startingAt: offsets, replacing: !rebalance.isCooperative) {
            rebalance.assign(startingAt: offsets, on: client)
        }
        if let error { handoff.fail(error) }
    }

    /// Assigns `partitions` with `assign` and records them as this consumer's, each with the
    /// claim that its log reaches its start offset in `offsets`. `replacing`: they are the whole
    /// assignment, not an addition to it.
    func take(
        _ partitions: [TopicPartition],
        startingAt offsets: [TopicPartition: Int64],
        replacing: Bool,
        assign: () -> KafkaError?
    ) -> KafkaError? {
        // Snapshot the high watermarks before fetching starts: any other value seen
        // later comes from a fetch response of this assignment.
        let known = Dictionary(uniqueKeysWithValues: partitions.map { ($0, client.highWatermark($0)) })
        if let error = assign() { return error }
        self.partitions.withLock { state in
            if replacing { state.assignment = [] }
            state.assignment.formUnion(partitions)
            for partition in partitions {
                if let offset = offsets[partition] {
                    state.logEnds.claimStored(offset, for: partition, knownHighWatermark: known[partition] ?? nil)
                }
            }
        }
        return nil
    }

    private func revoke(_ rebalance: Rebalance) {
        let revoked = Set(rebalance.partitions)
        handoff.drop(revoked)
        let owned = partitions.withLock { state in rebalance.partitions.filter { state.assignment.contains($0) } }
        if !owned.isEmpty {
            let onRevoke = rebalanceHandler.onRevoke
            _ = try? DedicatedThread.awaitTask { await onRevoke(owned) }
        }
        rebalance.revoke(on: client)
        partitions.withLock { state in
            if rebalance.isCooperative { state.assignment.subtract(revoked) } else { state.assignment = [] }
            state.logEnds.forget(revoked)
        }
    }

    // MARK: Application calls

    /// Repositions the fetcher without waiting, inside the handoff's seek barrier so no batch
    /// fetched earlier delivers the old position afterwards.
    func seek(_ partition: TopicPartition, to offset: Int64) throws {
        guard partitions.withLock({ $0.assignment.contains(partition) }) else {
            throw KafkaError(.state, message: "cannot seek \(partition): it is not assigned to this consumer")
        }
        let known = client.highWatermark(partition)
        try handoff.seeking(partition) { try client.seek(partition, to: offset) }
        partitions.withLock { $0.logEnds.claimStored(offset, for: partition, knownHighWatermark: known) }
    }
}
