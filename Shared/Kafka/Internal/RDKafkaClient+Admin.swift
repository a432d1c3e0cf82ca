import CRdKafka

extension RDKafkaClient {
    /// A topic as broker metadata lists it.
    struct TopicMetadata {
        var name: String
        var partitions: [Int32]
    }

    /// The topics of one all-topics metadata answer that the broker lists without an error.
    /// Throws when no answer came within `timeout`. *Any thread.*
    func topicMetadata(timeout: Duration) throws(KafkaError) -> [TopicMetadata] {
        let outcome: Result<[TopicMetadata], KafkaError>? = withHandle { rk in
            var metadata: UnsafePointer<rd_kafka_metadata>?
            let code = rd_kafka_metadata(rk, 1, nil, &metadata, max(1, timeout.timeoutMilliseconds))
            guard code == RD_KAFKA_RESP_ERR_NO_ERROR, let metadata else {
                if let metadata { rd_kafka_metadata_destroy(metadata) }
                return .failure(KafkaError(code, message: "no topic metadata: \(String(cString: rd_kafka_err2str(code)))"))
            }
            defer { rd_kafka_metadata_destroy(metadata) }
            let topics = UnsafeBufferPointer(start: metadata.pointee.topics, count: Int(metadata.pointee.topic_cnt))
            return .success(topics.filter { $0.err == RD_KAFKA_RESP_ERR_NO_ERROR }.map { topic in
                TopicMetadata(name: String(cString: topic.topic),
                              partitions: UnsafeBufferPointer(start: topic.partitions, count: Int(topic.partition_cnt)).map(\.id))
            })
        }
        guard let outcome else { throw KafkaError(.destroyed) }
        return try outcome.get()
    }

    /// One CreateTopics request, answered within `timeout`; a topic that already exists is
    /// not an error. Blocks. *Any thread.*
    func createTopics(_ topics: [(name: String, partitions: Int)], replicationFactor: Int, timeout: Duration) throws(KafkaError) {
        let outcome: KafkaError?? = withHandle { rk in
            var errstr = [CChar](repeating: 0, count: 512)
            var newTopics: [OpaquePointer?] = []
            defer { newTopics.forEach { rd_kafka_NewTopic_destroy($0) } }
            for topic in topics {
                guard let newTopic = rd_kafka_NewTopic_new(
                    topic.name, Int32(clamping: topic.partitions), Int32(clamping: replicationFactor), &errstr, errstr.count
                ) else {
                    return KafkaError.configuration("topic \(topic.name): \(Self.string(errstr))")
                }
                newTopics.append(newTopic)
            }
            let milliseconds = timeout.timeoutMilliseconds
            let options = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS)
            defer { rd_kafka_AdminOptions_destroy(options) }
            _ = rd_kafka_AdminOptions_set_request_timeout(options, milliseconds, &errstr, errstr.count)
            _ = rd_kafka_AdminOptions_set_operation_timeout(options, milliseconds, &errstr, errstr.count)
            let queue = rd_kafka_queue_new(rk)
            defer { rd_kafka_queue_destroy(queue) }
            newTopics.withUnsafeMutableBufferPointer { buffer in
                rd_kafka_CreateTopics(rk, buffer.baseAddress, buffer.count, options, queue)
            }
            // librdkafka answers by the request timeout at the latest; the margin only covers
            // its own bookkeeping.
            guard let event = rd_kafka_queue_poll(queue, milliseconds + 1000) else {
                return KafkaError(.timedOut, message: "CreateTopics got no answer")
            }
            defer { rd_kafka_event_destroy(event) }
            let code = rd_kafka_event_error(event)
            guard code == RD_KAFKA_RESP_ERR_NO_ERROR else {
                return KafkaError(code, message: "CreateTopics: \(String(cString: rd_kafka_event_error_string(event)))")
            }
            var count = 0
            guard let result = rd_kafka_event_CreateTopics_result(event),
                  let results = rd_kafka_CreateTopics_result_topics(result, &count)
            else { return nil }
            for topicResult in UnsafeBufferPointer(start: results, count: count) {
                let code = rd_kafka_topic_result_error(topicResult)
                guard code != RD_KAFKA_RESP_ERR_NO_ERROR, code != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS else { continue }
                let name = String(cString: rd_kafka_topic_result_name(topicResult))
                let text = rd_kafka_topic_result_error_string(topicResult).map { String(cString: $0) } ?? ""
                return KafkaError(code, message: "creating topic \(name): \(text)")
            }
            return nil
        }
        guard let outcome else { throw KafkaError(.destroyed) }
        if let error = outcome { throw error }
    }
}
