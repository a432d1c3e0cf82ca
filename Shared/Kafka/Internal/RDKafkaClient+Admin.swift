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

    /// One DescribeGroups request for `groupId`, answered within `timeout`: the group's state and
    /// each member's ids, host and assigned partitions (librdkafka reads the consumer protocol's
    /// assignment). A group nobody joined is described as dead, with no members. Blocks. *Any thread.*
    func describeGroup(_ groupId: String, timeout: Duration) throws(KafkaError) -> KafkaGroupDescription {
        let outcome: Result<KafkaGroupDescription, KafkaError>? = withHandle { rk in
            var errstr = [CChar](repeating: 0, count: 512)
            let milliseconds = timeout.timeoutMilliseconds
            let options = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_DESCRIBECONSUMERGROUPS)
            defer { rd_kafka_AdminOptions_destroy(options) }
            _ = rd_kafka_AdminOptions_set_request_timeout(options, milliseconds, &errstr, errstr.count)
            let queue = rd_kafka_queue_new(rk)
            defer { rd_kafka_queue_destroy(queue) }
            groupId.withCString { name in
                var names: [UnsafePointer<CChar>?] = [name]
                names.withUnsafeMutableBufferPointer { buffer in
                    rd_kafka_DescribeConsumerGroups(rk, buffer.baseAddress, buffer.count, options, queue)
                }
            }
            guard let event = rd_kafka_queue_poll(queue, milliseconds + 1000) else {
                return .failure(KafkaError(.timedOut, message: "DescribeGroups of \(groupId) got no answer"))
            }
            defer { rd_kafka_event_destroy(event) }
            let code = rd_kafka_event_error(event)
            guard code == RD_KAFKA_RESP_ERR_NO_ERROR else {
                return .failure(KafkaError(code, message: "DescribeGroups: \(String(cString: rd_kafka_event_error_string(event)))"))
            }
            var count = 0
            guard let result = rd_kafka_event_DescribeConsumerGroups_result(event),
                  let groups = rd_kafka_DescribeConsumerGroups_result_groups(result, &count), count == 1, let group = groups[0]
            else { return .failure(KafkaError(RD_KAFKA_RESP_ERR__BAD_MSG, message: "DescribeGroups of \(groupId): no description in the answer")) }
            if let error = rd_kafka_ConsumerGroupDescription_error(group) {
                return .failure(KafkaError(rd_kafka_error_code(error),
                                           message: "describing group \(groupId): \(String(cString: rd_kafka_error_string(error)))"))
            }
            var members: [KafkaGroupMember] = []
            for index in 0..<rd_kafka_ConsumerGroupDescription_member_count(group) {
                guard let member = rd_kafka_ConsumerGroupDescription_member(group, index) else { continue }
                var assigned: [TopicPartition] = []
                if let assignment = rd_kafka_MemberDescription_assignment(member),
                   let list = rd_kafka_MemberAssignment_partitions(assignment) {
                    for element in UnsafeBufferPointer(start: list.pointee.elems, count: Int(list.pointee.cnt)) {
                        assigned.append(TopicPartition(topic: String(cString: element.topic), partition: element.partition))
                    }
                }
                members.append(KafkaGroupMember(
                    memberId: String(cString: rd_kafka_MemberDescription_consumer_id(member)),
                    clientId: String(cString: rd_kafka_MemberDescription_client_id(member)),
                    host: String(cString: rd_kafka_MemberDescription_host(member)),
                    assignment: assigned.sorted { ($0.topic, $0.partition) < ($1.topic, $1.partition) }))
            }
            let state = String(cString: rd_kafka_consumer_group_state_name(rd_kafka_ConsumerGroupDescription_state(group)))
            return .success(KafkaGroupDescription(groupId: groupId, state: state,
                                                  members: members.sorted { ($0.clientId, $0.memberId) < ($1.clientId, $1.memberId) }))
        }
        guard let outcome else { throw KafkaError(.destroyed) }
        return try outcome.get()
    }
}
