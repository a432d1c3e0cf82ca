import CRdKafka
import Foundation

/// Cluster administration Pushline needs at startup: making sure its topics exist.
public enum KafkaAdmin {
    /// Creates the missing ones; a topic that already exists is not an error.
    ///
    /// Returns only once broker metadata lists every topic, so producers and consumers
    /// started afterwards see them (Tansu may need a moment). An existing topic keeps its
    /// partition count. Throws `KafkaError` on refusal or when `timeout` passes.
    public static func createTopics(
        _ topics: [(name: String, partitions: Int)],
        replicationFactor: Int = 1,
        bootstrapServers: String,
        properties: [String: String] = [:],
        timeout: Duration = .seconds(15)
    ) async throws {
        guard !topics.isEmpty else { return }
        let request = TopicCreation(
            topics: topics.map { TopicCreation.Topic(name: $0.name, partitions: $0.partitions) },
            replicationFactor: replicationFactor,
            properties: [("bootstrap.servers", bootstrapServers)] + properties.sorted { $0.key < $1.key },
            timeout: timeout
        )
        try await BlockingPool.run { Result { try request.run() } }.get()
    }
}

extension KafkaAdmin {
    /// The end offset (high watermark: the offset the next record will get) of every partition
    /// of `topics`. A topic the broker does not know is left out.
    ///
    /// Read from fetch responses, not asked with ListOffsets: Tansu answers ListOffsets(latest)
    /// wrongly for batches of several records. A group-less consumer is assigned
    /// every partition from its beginning with the smallest fetches, and each partition's high
    /// watermark is taken from the first fetch response that names it.
    public static func endOffsets(
        topics: [String],
        bootstrapServers: String,
        properties: [String: String] = [:],
        timeout: Duration = .seconds(30)
    ) async throws -> [TopicPartition: Int64] {
        let query = EndOffsetQuery(topics: topics,
                                   properties: [("bootstrap.servers", bootstrapServers), ("fetch.wait.max.ms", "50"),
                                                ("fetch.message.max.bytes", "1024"), ("enable.auto.commit", "false"),
                                                // assign() wants a group id; nothing joins it or commits to it.
                                                ("group.id", "pushline-end-offsets")]
                                       + properties.sorted { $0.key < $1.key },
                                   timeout: timeout)
        return try await BlockingPool.run { Result { try query.run() } }.get()
    }
}

/// Partition counts from one metadata request, then fetches until every partition's high
/// watermark is known.
private struct EndOffsetQuery: Sendable {
    var topics: [String]
    var properties: [(String, String)]
    var timeout: Duration

    func run() throws(KafkaError) -> [TopicPartition: Int64] {
        let deadline = ContinuousClock.now + timeout
        return try RDKafkaHandle.withTemporary(RD_KAFKA_CONSUMER, properties: properties) { rk throws(KafkaError) in
            try read(on: rk, deadline: deadline)
        }
    }

    private func read(on rk: OpaquePointer, deadline: ContinuousClock.Instant) throws(KafkaError) -> [TopicPartition: Int64] {
        var partitions: [TopicPartition] = []
        var metadata: UnsafePointer<rd_kafka_metadata>?
        let code = rd_kafka_metadata(rk, 1, nil, &metadata, max(1, (deadline - ContinuousClock.now).timeoutMilliseconds))
        guard code == RD_KAFKA_RESP_ERR_NO_ERROR, let metadata else {
            throw KafkaError(code, message: "metadata for end offsets")
        }
        let wanted = Set(topics)
        for topic in UnsafeBufferPointer(start: metadata.pointee.topics, count: Int(metadata.pointee.topic_cnt)) {
            let name = String(cString: topic.topic)
            guard wanted.contains(name), topic.err == RD_KAFKA_RESP_ERR_NO_ERROR else { continue }
            for partition in UnsafeBufferPointer(start: topic.partitions, count: Int(topic.partition_cnt)) {
                partitions.append(TopicPartition(topic: name, partition: partition.id))
            }
        }
        rd_kafka_metadata_destroy(metadata)
        guard !partitions.isEmpty else { return [:] }

        let list = rd_kafka_topic_partition_list_new(Int32(partitions.count))!
        defer { rd_kafka_topic_partition_list_destroy(list) }
        for partition in partitions {
            rd_kafka_topic_partition_list_add(list, partition.topic, partition.partition).pointee.offset = Int64(RD_KAFKA_OFFSET_BEGINNING)
        }
        let assigned = rd_kafka_assign(rk, list)
        guard assigned == RD_KAFKA_RESP_ERR_NO_ERROR else { throw KafkaError(assigned, message: "assigning partitions to read end offsets") }
        defer { rd_kafka_assign(rk, nil) }

        var ends: [TopicPartition: Int64] = [:]
        while ends.count < partitions.count {
            // The records themselves are not wanted: polling only lets the fetches go on.
            if let message = rd_kafka_consumer_poll(rk, 50) { rd_kafka_message_destroy(message) }
            for partition in partitions where ends[partition] == nil {
                var low: Int64 = 0, high: Int64 = 0
                if rd_kafka_get_watermark_offsets(rk, partition.topic, partition.partition, &low, &high) == RD_KAFKA_RESP_ERR_NO_ERROR,
                   high >= 0 {
                    ends[partition] = high
                }
            }
            guard ContinuousClock.now < deadline else {
                throw KafkaError(RD_KAFKA_RESP_ERR__TIMED_OUT,
                                 message: "end offsets of \(partitions.count - ends.count) partitions not known in time")
            }
        }
        return ends
    }
}

/// One blocking CreateTopics round trip on a temporary handle, then a wait for metadata.
private struct TopicCreation: Sendable {
    struct Topic: Sendable {
        var name: String
        var partitions: Int
    }

    var topics: [Topic]
    var replicationFactor: Int
    var properties: [(String, String)]
    var timeout: Duration

    func run() throws(KafkaError) {
        let deadline = ContinuousClock.now + timeout
        // The admin API needs a client handle; a producer handle joins no group.
        try RDKafkaHandle.withTemporary(RD_KAFKA_PRODUCER, properties: properties) { rk throws(KafkaError) in
            try create(on: rk, deadline: deadline)
            try waitForMetadata(on: rk, deadline: deadline)
        }
    }

    private func create(on rk: OpaquePointer, deadline: ContinuousClock.Instant) throws(KafkaError) {
        var errstr = [CChar](repeating: 0, count: 512)
        var newTopics: [OpaquePointer?] = []
        defer { newTopics.forEach { rd_kafka_NewTopic_destroy($0) } }
        for topic in topics {
            // librdkafka passes 0 through and Tansu then creates a topic with no
            // partitions at all, which nothing can use.
            guard topic.partitions >= 1 else {
                throw KafkaError.configuration("topic \(topic.name): partition count \(topic.partitions) is not at least 1")
            }
            guard let newTopic = rd_kafka_NewTopic_new(
                topic.name, Int32(clamping: topic.partitions), Int32(clamping: replicationFactor), &errstr, errstr.count
            ) else {
                throw KafkaError.configuration("topic \(topic.name): \(Self.string(errstr))")
            }
            newTopics.append(newTopic)
        }
        let milliseconds = (deadline - ContinuousClock.now).timeoutMilliseconds
        let options = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS)
        defer { rd_kafka_AdminOptions_destroy(options) }
        _ = rd_kafka_AdminOptions_set_request_timeout(options, milliseconds, &errstr, errstr.count)
        _ = rd_kafka_AdminOptions_set_operation_timeout(options, milliseconds, &errstr, errstr.count)
        let queue = rd_kafka_queue_new(rk)
        defer { rd_kafka_queue_destroy(queue) }
        newTopics.withUnsafeMutableBufferPointer { buffer in
            rd_kafka_CreateTopics(rk, buffer.baseAddress, buffer.count, options, queue)
        }
        // librdkafka answers by the request timeout at the latest; the margin only
        // covers its own bookkeeping.
        guard let event = rd_kafka_queue_poll(queue, milliseconds + 1000) else {
            throw KafkaError(RD_KAFKA_RESP_ERR__TIMED_OUT, message: "CreateTopics got no answer")
        }
        defer { rd_kafka_event_destroy(event) }
        let code = rd_kafka_event_error(event)
        guard code == RD_KAFKA_RESP_ERR_NO_ERROR else {
            throw KafkaError(code, message: "CreateTopics: \(String(cString: rd_kafka_event_error_string(event)))")
        }
        var count = 0
        guard let result = rd_kafka_event_CreateTopics_result(event),
              let results = rd_kafka_CreateTopics_result_topics(result, &count)
        else { return }
        for index in 0..<count {
            let topicResult = results[index]
            let code = rd_kafka_topic_result_error(topicResult)
            guard code != RD_KAFKA_RESP_ERR_NO_ERROR, code != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS else { continue }
            let name = String(cString: rd_kafka_topic_result_name(topicResult))
            let text = rd_kafka_topic_result_error_string(topicResult).map { String(cString: $0) } ?? ""
            throw KafkaError(code, message: "creating topic \(name): \(text)")
        }
    }

    /// Polls all-topic metadata until every requested topic is listed with partitions.
    private func waitForMetadata(on rk: OpaquePointer, deadline: ContinuousClock.Instant) throws(KafkaError) {
        var missing = Set(topics.map(\.name))
        var lastCode = RD_KAFKA_RESP_ERR_NO_ERROR
        while true {
            let milliseconds = (deadline - ContinuousClock.now).timeoutMilliseconds
            var metadata: UnsafePointer<rd_kafka_metadata>?
            lastCode = rd_kafka_metadata(rk, 1, nil, &metadata, max(1, milliseconds))
            if let metadata {
                let listed = UnsafeBufferPointer(start: metadata.pointee.topics, count: Int(metadata.pointee.topic_cnt))
                for topic in listed where topic.err == RD_KAFKA_RESP_ERR_NO_ERROR && topic.partition_cnt > 0 {
                    missing.remove(String(cString: topic.topic))
                }
                rd_kafka_metadata_destroy(metadata)
            }
            if missing.isEmpty { return }
            guard ContinuousClock.now < deadline else {
                throw KafkaError(
                    RD_KAFKA_RESP_ERR__TIMED_OUT,
                    message: "topics \(missing.sorted()) not in broker metadata in time (last metadata answer: "
                        + "\(String(cString: rd_kafka_err2str(lastCode))))"
                )
            }
            usleep(100_000)
        }
    }

    private static func string(_ buffer: [CChar]) -> String {
        buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }
}
