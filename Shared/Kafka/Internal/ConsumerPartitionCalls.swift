import CRdKafka
import Logging

extension ConsumerCore {
    /// Repositions librdkafka's fetcher without waiting (timeout 0), inside the handoff's
    /// seek barrier so no batch fetched earlier delivers the old position afterwards.
    func seek(_ partition: TopicPartition, to offset: Int64) throws {
        guard partitions.withLock({ $0.assignment.contains(partition) }) else {
            throw KafkaError(RD_KAFKA_RESP_ERR__STATE, message: "cannot seek \(partition): it is not assigned to this consumer")
        }
        let outcome: KafkaError?? = handleGuard.withHandle {
            let known = highWatermark(partition)
            let error = handoff.seeking(partition) { () -> KafkaError? in
                let list = rd_kafka_topic_partition_list_new(1)!
                defer { rd_kafka_topic_partition_list_destroy(list) }
                let element = rd_kafka_topic_partition_list_add(list, partition.topic, partition.partition)!
                element.pointee.offset = offset
                if let error = rd_kafka_seek_partitions(handle.pointer, list, 0) {
                    return KafkaError(consuming: error)
                }
                // An asynchronous seek reports _IN_PROGRESS for a partition it started.
                let code = element.pointee.err
                return code == RD_KAFKA_RESP_ERR_NO_ERROR || code == RD_KAFKA_RESP_ERR__IN_PROGRESS ? nil : KafkaError(code, message: "seek \(partition): \(String(cString: rd_kafka_err2str(code)))")
            }
            if error == nil {
                partitions.withLock { $0.logEnds.claimStored(offset, for: partition, knownHighWatermark: known) }
            }
            return error
        }
        switch outcome {
        case .none:
            throw KafkaError(RD_KAFKA_RESP_ERR__DESTROY, message: "cannot seek \(partition): the consumer is closed")
        case .some(.some(let error)):
            throw error
        case .some(.none):
            return
        }
    }

    func commit(_ offsets: [TopicPartition: Int64]) {
        guard !offsets.isEmpty else { return }
        _ = handleGuard.withHandle {
            let list = rd_kafka_topic_partition_list_new(Int32(offsets.count))!
            defer { rd_kafka_topic_partition_list_destroy(list) }
            for (partition, offset) in offsets {
                rd_kafka_topic_partition_list_add(list, partition.topic, partition.partition)!.pointee.offset = offset
            }
            let code = rd_kafka_commit(handle.pointer, list, 1)
            if code != RD_KAFKA_RESP_ERR_NO_ERROR {
                logger.debug("Kafka offset commit not started", metadata: ["error": "\(KafkaError(code))"])
            }
        }
    }
}
