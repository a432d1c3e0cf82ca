import CRdKafka
import Foundation

extension RDKafkaClient {
    /// Joins the client's group as a member subscribed to `topics`. *Owner*, before reading.
    func subscribe(_ topics: [String]) throws(KafkaError) {
        let list = rd_kafka_topic_partition_list_new(Int32(topics.count))!
        defer { rd_kafka_topic_partition_list_destroy(list) }
        for topic in topics {
            rd_kafka_topic_partition_list_add(list, topic, RD_KAFKA_PARTITION_UA)
        }
        let code = rd_kafka_subscribe(handle, list)
        guard code == RD_KAFKA_RESP_ERR_NO_ERROR else {
            throw KafkaError(code, message: "subscribing to \(topics): \(String(cString: rd_kafka_err2str(code)))")
        }
    }

    /// Reads exactly `partitions`, each from `offsets` (a partition missing there from its
    /// beginning), without a group. *Owner.*
    func assign(_ partitions: [TopicPartition], startingAt offsets: [TopicPartition: Int64]) -> KafkaError? {
        let list = Self.partitionList(partitions)
        defer { rd_kafka_topic_partition_list_destroy(list) }
        return apply(.assign(Self.setting(offsets, of: partitions, in: list)))
    }

    /// Stops reading every partition. *Owner.*
    func unassignAll() {
        apply(.assign(nil))
    }

    /// Serves the consumer for up to `timeout` and drops the record it returns, if any: lets
    /// the fetches of an assignment go on when only their high watermarks are wanted. *Owner.*
    func serveDiscarding(timeout: Duration) {
        if let message = rd_kafka_consumer_poll(handle, timeout.timeoutMilliseconds) { rd_kafka_message_destroy(message) }
    }

    /// Moves the fetch position of an assigned partition without waiting. *Any thread.*
    func seek(_ partition: TopicPartition, to offset: Int64) throws(KafkaError) {
        let outcome: KafkaError?? = withHandle { rk in
            let list = Self.partitionList([partition])
            defer { rd_kafka_topic_partition_list_destroy(list) }
            list.pointee.elems[0].offset = offset
            if let error = rd_kafka_seek_partitions(rk, list, 0) {
                return KafkaError(consuming: error)
            }
            // An asynchronous seek reports _IN_PROGRESS for a partition it started.
            let code = list.pointee.elems[0].err
            guard code != RD_KAFKA_RESP_ERR_NO_ERROR, code != RD_KAFKA_RESP_ERR__IN_PROGRESS else { return nil }
            return KafkaError(code, message: "seek \(partition): \(String(cString: rd_kafka_err2str(code)))")
        }
        switch outcome {
        case .none: throw KafkaError(.destroyed, message: "cannot seek \(partition): the consumer is closed")
        case .some(.some(let error)): throw error
        case .some(.none): return
        }
    }

    /// Starts an asynchronous commit of group offsets; a failure to start is logged. *Any thread.*
    func commit(_ offsets: [TopicPartition: Int64]) {
        _ = withHandle { rk in
            let partitions = Array(offsets.keys)
            let list = Self.partitionList(partitions)
            defer { rd_kafka_topic_partition_list_destroy(list) }
            let code = rd_kafka_commit(rk, Self.setting(offsets, of: partitions, in: list), 1)
            if code != RD_KAFKA_RESP_ERR_NO_ERROR {
                logger.debug("Kafka offset commit not started", metadata: ["error": "\(KafkaError(code))"])
            }
        }
    }

    /// Commits group offsets and waits for the broker's answer. *Any thread*; blocks.
    func commitAndWait(_ offsets: [TopicPartition: Int64]) throws(KafkaError) {
        let outcome: KafkaError?? = withHandle { rk in
            let partitions = Array(offsets.keys)
            let list = Self.partitionList(partitions)
            defer { rd_kafka_topic_partition_list_destroy(list) }
            let code = rd_kafka_commit(rk, Self.setting(offsets, of: partitions, in: list), 0)
            return code == RD_KAFKA_RESP_ERR_NO_ERROR ? nil : KafkaError(code, message: "committing offsets: \(String(cString: rd_kafka_err2str(code)))")
        }
        switch outcome {
        case .none: throw KafkaError(.destroyed, message: "cannot commit: the consumer is closed")
        case .some(.some(let error)): throw error
        case .some(.none): return
        }
    }

    /// The group's committed offsets of `partitions` (`rd_kafka_committed`); a partition the
    /// group committed nothing for is missing from the answer. *Any thread*; blocks up to `timeout`.
    func committed(_ partitions: [TopicPartition], timeout: Duration) throws(KafkaError) -> [TopicPartition: Int64] {
        let outcome: Result<[TopicPartition: Int64], KafkaError>? = withHandle { rk in
            let list = Self.partitionList(partitions)
            defer { rd_kafka_topic_partition_list_destroy(list) }
            let code = rd_kafka_committed(rk, list, timeout.timeoutMilliseconds)
            guard code == RD_KAFKA_RESP_ERR_NO_ERROR else {
                return .failure(KafkaError(code, message: "reading committed offsets: \(String(cString: rd_kafka_err2str(code)))"))
            }
            var offsets: [TopicPartition: Int64] = [:]
            for index in 0..<Int(list.pointee.cnt) {
                let element = list.pointee.elems[index]
                guard element.err == RD_KAFKA_RESP_ERR_NO_ERROR else {
                    return .failure(KafkaError(element.err, message: "reading the committed offset of \(String(cString: element.topic))/\(element.partition)"))
                }
                if element.offset >= 0 {
                    offsets[TopicPartition(topic: String(cString: element.topic), partition: element.partition)] = element.offset
                }
            }
            return .success(offsets)
        }
        guard let outcome else { throw KafkaError(.destroyed, message: "cannot read committed offsets: the consumer is closed") }
        return try outcome.get()
    }

    /// Wakes a reader waiting in `MessageBatchReader.read`. *Any thread.*
    func wakeReader() {
        _ = withHandle { _ in rd_kafka_queue_yield(consumerQueue) }
    }

    /// Leaves the group within `limit` (the revocation callback runs here), bars every later
    /// call and destroys the handle. *Owner* (the poller thread).
    ///
    /// `rd_kafka_consumer_close_queue` is served from a queue of its own until librdkafka reports it
    /// done, or the limit passes and the handle is destroyed anyway (the group then expires the
    /// member after its session timeout). An unbounded close was seen, once, to spin for minutes
    /// against Tansu.
    func closeConsumer(leaveGroupWithin limit: Duration) {
        leaveGroup(within: limit)
        _ = barCalls()
        destroy()
    }

    private func leaveGroup(within limit: Duration) {
        guard let closeQueue = rd_kafka_queue_new(handle) else { return }
        defer { rd_kafka_queue_destroy(closeQueue) }
        if let error = rd_kafka_consumer_close_queue(handle, closeQueue) {
            logger.warning("Kafka consumer close", metadata: ["error": "\(KafkaError(consuming: error))"])
            return
        }
        let deadline = ContinuousClock.now + limit
        while rd_kafka_consumer_closed(handle) == 0 {
            guard ContinuousClock.now < deadline else {
                logger.error("Kafka consumer close did not finish in time; destroying the handle", metadata: ["limit": "\(limit)"])
                return
            }
            // Closing forwards the consumer queue here, records fetched ahead included. Served
            // as a consumer's queue, callbacks (revocation, errors) run and records come back to
            // be dropped, as in librdkafka's blocking close; `rd_kafka_queue_poll_callback`
            // cannot take a record back and aborts the process.
            if let message = rd_kafka_consume_queue(closeQueue, 100) { rd_kafka_message_destroy(message) }
        }
    }

    // MARK: Partition lists and assignment changes

    private static func partitionList(_ partitions: [TopicPartition]) -> UnsafeMutablePointer<rd_kafka_topic_partition_list_t> {
        let list = rd_kafka_topic_partition_list_new(Int32(partitions.count))!
        for partition in partitions {
            rd_kafka_topic_partition_list_add(list, partition.topic, partition.partition)
        }
        return list
    }

    /// Sets the offset of each element of `list` (the elements of `partitions`, in order) from
    /// `offsets`, the beginning for a partition missing there.
    fileprivate static func setting(
        _ offsets: [TopicPartition: Int64],
        of partitions: [TopicPartition],
        in list: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>
    ) -> UnsafeMutablePointer<rd_kafka_topic_partition_list_t> {
        for (index, partition) in partitions.enumerated() {
            list.pointee.elems[index].offset = offsets[partition] ?? Int64(RD_KAFKA_OFFSET_BEGINNING)
        }
        return list
    }

    fileprivate enum AssignmentChange {
        case assign(UnsafeMutablePointer<rd_kafka_topic_partition_list_t>?)
        case incrementalAssign(UnsafeMutablePointer<rd_kafka_topic_partition_list_t>)
        case incrementalUnassign(UnsafeMutablePointer<rd_kafka_topic_partition_list_t>)
    }

    @discardableResult
    fileprivate func apply(_ change: AssignmentChange) -> KafkaError? {
        let error: KafkaError?
        switch change {
        case .assign(let list):
            let code = rd_kafka_assign(handle, list)
            error = code == RD_KAFKA_RESP_ERR_NO_ERROR ? nil : KafkaError(code)
        case .incrementalAssign(let list):
            error = rd_kafka_incremental_assign(handle, list).map { KafkaError(consuming: $0) }
        case .incrementalUnassign(let list):
            error = rd_kafka_incremental_unassign(handle, list).map { KafkaError(consuming: $0) }
        }
        if let error {
            logger.error("Kafka assignment change failed", metadata: ["error": "\(error)"])
        }
        return error
    }

    // MARK: Rebalances

    /// `rebalance_cb`: called by librdkafka inside a read (or the group leave of
    /// `closeConsumer`), so always on the consumer's poller thread.
    static let rebalanceCallback: @convention(c) (
        OpaquePointer?, rd_kafka_resp_err_t, UnsafeMutablePointer<rd_kafka_topic_partition_list_t>?, UnsafeMutableRawPointer?
    ) -> Void = { rk, code, list, opaque in
        guard rk != nil, let list, let opaque else { return }
        let callbacks = Unmanaged<Callbacks>.fromOpaque(opaque).takeUnretainedValue()
        guard let onRebalance = callbacks.onRebalance else { return }
        let event: Rebalance.Event = switch code {
        case RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS: .assign
        case RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS: .revoke
        default: .failed(KafkaError(code))
        }
        onRebalance(Rebalance(event: event, list: list, rk: rk!))
    }
}

/// One rebalance event of a consumer group member, valid only while its callback runs.
struct Rebalance {
    enum Event: CustomStringConvertible {
        case assign, revoke
        case failed(KafkaError)

        var description: String {
            switch self {
            case .assign: "_ASSIGN_PARTITIONS"
            case .revoke: "_REVOKE_PARTITIONS"
            case .failed(let error): error.name
            }
        }
    }

    let event: Event
    /// The partitions the event assigns or revokes.
    let partitions: [TopicPartition]
    /// Whether the group uses the cooperative protocol: an event then adds or removes these
    /// partitions, instead of replacing the whole assignment.
    let isCooperative: Bool
    private let list: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>

    fileprivate init(event: Event, list: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>, rk: OpaquePointer) {
        self.event = event
        self.list = list
        isCooperative = String(cString: rd_kafka_rebalance_protocol(rk)) == "COOPERATIVE"
        partitions = (0..<Int(list.pointee.cnt)).map { index in
            let element = list.pointee.elems[index]
            return TopicPartition(topic: String(cString: element.topic), partition: element.partition)
        }
    }

    /// Takes the event's partitions, each from `offsets` (a partition missing there from its
    /// beginning).
    func assign(startingAt offsets: [TopicPartition: Int64], on client: RDKafkaClient) -> KafkaError? {
        let list = RDKafkaClient.setting(offsets, of: partitions, in: list)
        return client.apply(isCooperative ? .incrementalAssign(list) : .assign(list))
    }

    /// Answers an assignment without taking its partitions for reading (nothing will be read
    /// any more).
    @discardableResult
    func decline(on client: RDKafkaClient) -> KafkaError? {
        client.apply(isCooperative ? .incrementalAssign(list) : .assign(nil))
    }

    /// Gives the event's partitions up.
    @discardableResult
    func revoke(on client: RDKafkaClient) -> KafkaError? {
        client.apply(isCooperative ? .incrementalUnassign(list) : .assign(nil))
    }
}

/// A per-partition condition librdkafka reported in place of a record.
struct ConsumeError {
    var error: KafkaError
    /// The partition it is about, if it names one.
    var partition: TopicPartition?
    var offset: Int64
}

/// Reads batches from a consumer client's queue, for the one thread that reads (never
/// shared), copying librdkafka's messages into `KafkaConsumerMessage`s.
final class MessageBatchReader {
    private let client: RDKafkaClient
    private let capacity: Int
    private let buffer: UnsafeMutablePointer<UnsafeMutablePointer<rd_kafka_message_t>?>
    /// The name of the last topic handle, so a batch does not build the same string for
    /// every message.
    private var lastTopic: (handle: OpaquePointer, name: String)?

    init(client: RDKafkaClient, maxBatchSize: Int) {
        self.client = client
        capacity = max(1, maxBatchSize)
        buffer = .allocate(capacity: capacity)
    }

    deinit {
        buffer.deallocate()
    }

    /// Waits up to `firstWait` for one message, then takes what has already arrived, up to
    /// the batch size. librdkafka's batch call would wait for the whole timeout unless the
    /// batch fills, delaying a lone command by `firstWait`.
    func read(firstWait: Duration) -> (records: [KafkaConsumerMessage], errors: [ConsumeError]) {
        let queue = client.consumerQueue!
        var count = rd_kafka_consume_batch_queue(queue, firstWait.timeoutMilliseconds, buffer, 1)
        if count == 1, capacity > 1 {
            count += max(0, rd_kafka_consume_batch_queue(queue, 0, buffer + 1, capacity - 1))
        }
        guard count > 0 else { return ([], []) }
        var records: [KafkaConsumerMessage] = []
        records.reserveCapacity(count)
        var errors: [ConsumeError] = []
        for index in 0..<count {
            let message = buffer[index]!
            let code = message.pointee.err
            if code == RD_KAFKA_RESP_ERR_NO_ERROR {
                records.append(convert(message))
            } else {
                let partition = message.pointee.rkt == nil
                    ? nil : TopicPartition(topic: topicName(message.pointee.rkt), partition: message.pointee.partition)
                let error = KafkaError.reported(code, on: client.handle, message: String(cString: rd_kafka_message_errstr(message)))
                errors.append(ConsumeError(error: error, partition: partition, offset: message.pointee.offset))
            }
            rd_kafka_message_destroy(message)
        }
        return (records, errors)
    }

    private func convert(_ message: UnsafeMutablePointer<rd_kafka_message_t>) -> KafkaConsumerMessage {
        let raw = message.pointee
        return KafkaConsumerMessage(
            topic: topicName(raw.rkt),
            partition: raw.partition,
            offset: raw.offset,
            key: raw.key.map { String(decoding: UnsafeRawBufferPointer(start: $0, count: raw.key_len), as: UTF8.self) },
            value: raw.payload.map { Data(bytes: $0, count: raw.len) } ?? Data(),
            headers: Self.headers(of: message),
            timestamp: Self.timestamp(of: message)
        )
    }

    private func topicName(_ rkt: OpaquePointer?) -> String {
        guard let rkt else { return "" }
        if let lastTopic, lastTopic.handle == rkt { return lastTopic.name }
        let name = String(cString: rd_kafka_topic_name(rkt))
        lastTopic = (rkt, name)
        return name
    }

    private static func headers(of message: UnsafeMutablePointer<rd_kafka_message_t>) -> [KafkaHeader] {
        var list: OpaquePointer?
        guard rd_kafka_message_headers(message, &list) == RD_KAFKA_RESP_ERR_NO_ERROR, let list else { return [] }
        var headers: [KafkaHeader] = []
        var index = 0
        var name: UnsafePointer<CChar>?
        var value: UnsafeRawPointer?
        var size = 0
        while rd_kafka_header_get_all(list, index, &name, &value, &size) == RD_KAFKA_RESP_ERR_NO_ERROR {
            let text = value.map { String(decoding: UnsafeRawBufferPointer(start: $0, count: size), as: UTF8.self) } ?? ""
            headers.append(KafkaHeader(name: name.map { String(cString: $0) } ?? "", value: text))
            index += 1
        }
        return headers
    }

    private static func timestamp(of message: UnsafeMutablePointer<rd_kafka_message_t>) -> Date? {
        var type = RD_KAFKA_TIMESTAMP_NOT_AVAILABLE
        let milliseconds = rd_kafka_message_timestamp(message, &type)
        guard type != RD_KAFKA_TIMESTAMP_NOT_AVAILABLE, milliseconds >= 0 else { return nil }
        return Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }
}
