import CRdKafka
import Foundation
import Logging
import Synchronization

/// Everything a `KafkaConsumer` shares between its poller thread and the application:
/// the librdkafka handle, the batch handoff, the assignment and the log-end check.
///
/// One dedicated thread (started by `start`) does all consuming: it calls
/// `rd_kafka_consume_batch_queue`, which also runs the rebalance callback, so both
/// rebalance hooks run on that thread and it may block while awaiting them. The same
/// thread closes the handle, which is why `close()` only asks and then waits.
final class ConsumerCore: ClientCallbacks, @unchecked Sendable {
    // @unchecked: `handle` and `queue` are written once in `start`, before the poller
    // thread exists and before the consumer is visible to any other thread; every other
    // piece of shared state is a Sendable type that protects itself.
    private(set) var handle: UnsafeHandle!
    private var queue: OpaquePointer!

    let handoff = BatchHandoff()
    let handleGuard = HandleGuard()
    let partitions = Mutex(PartitionState())
    let rebalanceHandler: KafkaRebalanceHandler
    private let maxBatchSize: Int
    private let batchWaitMs: Int32
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
        maxBatchSize = max(1, configuration.maxBatchSize)
        batchWaitMs = Int32(clamping: max(0, configuration.batchWaitMs))
        super.init(logger: logger)
    }

    /// Takes ownership of a subscribed (or assigned) handle and starts the poller thread.
    func start(_ rk: OpaquePointer) {
        handle = UnsafeHandle(pointer: rk)
        queue = rd_kafka_queue_get_consumer(rk)
        DedicatedThread.start(name: "kafka-consumer-poll") { [self] in
            pollUntilClosed()
            closeHandle()
        }
    }

    override func didReceiveError(_ error: KafkaError, isFatal: Bool) {
        super.didReceiveError(error, isFatal: isFatal)
        if isFatal { handoff.fail(error) }
    }

    /// The high watermark the last fetch response reported, nil before the first one.
    func highWatermark(_ partition: TopicPartition) -> Int64? {
        Self.highWatermark(partition, of: handle.pointer)
    }

    static func highWatermark(_ partition: TopicPartition, of rk: OpaquePointer) -> Int64? {
        var low: Int64 = -1
        var high: Int64 = -1
        let code = rd_kafka_get_watermark_offsets(rk, partition.topic, partition.partition, &low, &high)
        return code == RD_KAFKA_RESP_ERR_NO_ERROR && high >= 0 ? high : nil
    }

    // MARK: Closing

    /// Asks the poller to close the consumer and returns at once.
    func requestClose() {
        handoff.requestClose()
        // Wakes a poller that waits inside rd_kafka_consume_batch_queue.
        _ = handleGuard.withHandle { rd_kafka_queue_yield(queue) }
    }

    /// Asks the poller to close the consumer and waits until the handle is destroyed.
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
        let buffer = UnsafeMutablePointer<UnsafeMutablePointer<rd_kafka_message_t>?>.allocate(capacity: maxBatchSize)
        defer { buffer.deallocate() }
        var conversion = MessageConversion()
        while !handoff.isCloseRequested {
            if handoff.hasFailed {
                // Nothing more is read after a failure; the handle stays until close().
                handoff.waitForCloseRequest()
                return
            }
            let fetchMark = handoff.fetchMark()
            // librdkafka's batch call waits for the whole timeout unless the batch fills, which would
            // delay a lone command by `batchWaitMs`: wait for one message, then take what is there.
            var count = rd_kafka_consume_batch_queue(queue, batchWaitMs, buffer, 1)
            if count == 1, maxBatchSize > 1 {
                count += max(0, rd_kafka_consume_batch_queue(queue, 0, buffer + 1, maxBatchSize - 1))
            }
            var batch: [KafkaConsumerMessage] = []
            if count > 0 {
                batch.reserveCapacity(count)
                for index in 0..<count {
                    let message = buffer[index]!
                    if message.pointee.err == RD_KAFKA_RESP_ERR_NO_ERROR {
                        batch.append(conversion.convert(message))
                    } else {
                        handleMessageError(message, conversion: &conversion)
                    }
                    rd_kafka_message_destroy(message)
                }
            }
            checkLogEnds(after: batch)
            if !batch.isEmpty {
                // A refused offer means closing or failed; the loop's checks handle both.
                _ = handoff.offer(batch, fetchMark: fetchMark)
            }
        }
    }

    /// Per-partition errors arrive as messages. Those that mean the partition cannot be
    /// read as the application expects end the sequence; the rest are transient and
    /// librdkafka retries them itself.
    private func handleMessageError(
        _ message: UnsafeMutablePointer<rd_kafka_message_t>,
        conversion: inout MessageConversion
    ) {
        let code = message.pointee.err
        let partition = conversion.topicPartition(of: message)
        let text = String(cString: rd_kafka_message_errstr(message))
        switch code {
        case RD_KAFKA_RESP_ERR__PARTITION_EOF:
            return
        case RD_KAFKA_RESP_ERR__AUTO_OFFSET_RESET, RD_KAFKA_RESP_ERR_OFFSET_OUT_OF_RANGE,
            RD_KAFKA_RESP_ERR__LOG_TRUNCATION:
            var error = KafkaError(
                RD_KAFKA_RESP_ERR_OFFSET_OUT_OF_RANGE,
                message: "the stored offset \(message.pointee.offset) of \(partition.map(String.init(describing:)) ?? "a partition") "
                    + "is out of range on the broker (\(text)): the log this state was built from no longer exists"
            )
            error.isRetriable = false
            handoff.fail(error)
        case RD_KAFKA_RESP_ERR__FATAL:
            handoff.fail(KafkaError.fatal(of: handle.pointer))
        case RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED, RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED,
            RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED, RD_KAFKA_RESP_ERR__AUTHENTICATION,
            RD_KAFKA_RESP_ERR_SASL_AUTHENTICATION_FAILED:
            handoff.fail(KafkaError(code, message: text))
        default:
            logger.warning(
                "Kafka consumer error",
                metadata: ["error": "\(KafkaError(code, message: text))", "partition": "\(partition.map(String.init(describing:)) ?? "-")"]
            )
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
            highWatermarks[partition] = highWatermark(partition)
        }
        if let error = partitions.withLock({ $0.logEnds.check(highWatermarks: highWatermarks) }) {
            logger.error("Kafka log vanished", metadata: ["error": "\(error)"])
            handoff.fail(error)
        }
    }

    /// Leaves the group (the revocation hook runs here, on the poller thread) and
    /// destroys the handle once no application call is using it.
    private func closeHandle() {
        let rk = handle.pointer
        leaveGroup(rk, within: .seconds(10))
        _ = handleGuard.close()
        rd_kafka_queue_destroy(queue)
        // Closed just above: destroying must not close (and wait on the group) a second time;
        // that second close was seen to wait forever after a failed first one.
        rd_kafka_destroy_flags(rk, Int32(RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE))
        handoff.finish()
        let waiters = closed.withLock { state in
            state.isClosed = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// `rd_kafka_consumer_close` with a time limit: the close is served from a queue of its own
    /// until librdkafka reports it done, or the limit passes and the handle is destroyed
    /// anyway (the group then expires the member after its session timeout). An unbounded
    /// close was seen, once, to spin for minutes against Tansu.
    private func leaveGroup(_ rk: OpaquePointer, within limit: Duration) {
        guard let closeQueue = rd_kafka_queue_new(rk) else { return }
        defer { rd_kafka_queue_destroy(closeQueue) }
        if let error = rd_kafka_consumer_close_queue(rk, closeQueue) {
            logger.warning("Kafka consumer close", metadata: ["error": "\(KafkaError(consuming: error))"])
            return
        }
        let deadline = ContinuousClock.now + limit
        // Serving the queue runs the revocation callback on this (the poller) thread.
        while rd_kafka_consumer_closed(rk) == 0 {
            guard ContinuousClock.now < deadline else {
                logger.error("Kafka consumer close did not finish in time; destroying the handle", metadata: ["limit": "\(limit)"])
                return
            }
            _ = rd_kafka_queue_poll_callback(closeQueue, 100)
        }
    }
}
