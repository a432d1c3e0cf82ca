import CRdKafka
import Logging

extension ConsumerCore {
    /// `rebalance_cb`: called by librdkafka inside `rd_kafka_consume_batch_queue` (or
    /// `rd_kafka_consumer_close`), so always on the consumer's poller thread.
    static let rebalanceCallback: @convention(c) (
        OpaquePointer?, rd_kafka_resp_err_t, UnsafeMutablePointer<rd_kafka_topic_partition_list_t>?, UnsafeMutableRawPointer?
    ) -> Void = { rk, code, list, opaque in
        guard let rk, let list, let opaque else { return }
        let core = unsafeDowncast(Unmanaged<ClientCallbacks>.fromOpaque(opaque).takeUnretainedValue(), to: ConsumerCore.self)
        core.rebalance(rk, code, list)
    }

    private func rebalance(
        _ rk: OpaquePointer,
        _ code: rd_kafka_resp_err_t,
        _ list: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>
    ) {
        let cooperative = String(cString: rd_kafka_rebalance_protocol(rk)) == "COOPERATIVE"
        let partitions = (0..<Int(list.pointee.cnt)).map { index in
            let element = list.pointee.elems[index]
            return TopicPartition(topic: String(cString: element.topic), partition: element.partition)
        }
        logger.info(
            "Kafka rebalance",
            metadata: ["event": "\(String(cString: rd_kafka_err2name(code)))", "partitions": "\(partitions)"]
        )
        switch code {
        case RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS:
            assign(rk, list, partitions, cooperative: cooperative)
        case RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS:
            revoke(rk, list, partitions, cooperative: cooperative)
        default:
            logger.error("Kafka rebalance failed", metadata: ["error": "\(KafkaError(code))"])
            revoke(rk, list, partitions, cooperative: cooperative)
        }
    }

    private func assign(
        _ rk: OpaquePointer,
        _ list: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>,
        _ partitions: [TopicPartition],
        cooperative: Bool
    ) {
        guard !handoff.hasFailed && !handoff.isCloseRequested else {
            // Nothing will be read any more: take no partitions and run no hook.
            apply(cooperative ? .incrementalAssign(list) : .assign(nil), rk)
            return
        }
        let offsets: [TopicPartition: Int64]
        do {
            let onAssign = rebalanceHandler.onAssign
            offsets = try DedicatedThread.awaitTask { try await onAssign(partitions) }
        } catch {
            logger.error("Kafka onAssign failed", metadata: ["error": "\(error)"])
            handoff.fail(error)
            apply(cooperative ? .incrementalAssign(list) : .assign(nil), rk)
            return
        }
        if let error = take(rk, list, partitions, startingAt: offsets, cooperative: cooperative) { handoff.fail(error) }
    }

    /// Assigns `partitions` (the elements of `list`, in order) starting at `offsets` (a partition
    /// missing there starts at its beginning) and records them as this consumer's.
    func take(
        _ rk: OpaquePointer,
        _ list: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>,
        _ partitions: [TopicPartition],
        startingAt offsets: [TopicPartition: Int64],
        cooperative: Bool
    ) -> KafkaError? {
        // Snapshot the high watermarks before fetching starts: any other value seen
        // later comes from a fetch response of this assignment.
        let known = Dictionary(uniqueKeysWithValues: partitions.map { ($0, Self.highWatermark($0, of: rk)) })
        for (index, partition) in partitions.enumerated() {
            list.pointee.elems[index].offset = offsets[partition] ?? Int64(RD_KAFKA_OFFSET_BEGINNING)
        }
        if let error = apply(cooperative ? .incrementalAssign(list) : .assign(list), rk) { return error }
        self.partitions.withLock { state in
            if !cooperative { state.assignment = [] }
            state.assignment.formUnion(partitions)
            for partition in partitions {
                if let offset = offsets[partition] {
                    state.logEnds.claimStored(offset, for: partition, knownHighWatermark: known[partition] ?? nil)
                }
            }
        }
        return nil
    }

    private func revoke(
        _ rk: OpaquePointer,
        _ list: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>,
        _ partitions: [TopicPartition],
        cooperative: Bool
    ) {
        let revoked = Set(partitions)
        handoff.drop(revoked)
        let owned = self.partitions.withLock { state in partitions.filter { state.assignment.contains($0) } }
        if !owned.isEmpty {
            let onRevoke = rebalanceHandler.onRevoke
            _ = try? DedicatedThread.awaitTask { await onRevoke(owned) }
        }
        apply(cooperative ? .incrementalUnassign(list) : .assign(nil), rk)
        self.partitions.withLock { state in
            if cooperative { state.assignment.subtract(revoked) } else { state.assignment = [] }
            state.logEnds.forget(revoked)
        }
    }

    private enum AssignmentChange {
        case assign(UnsafeMutablePointer<rd_kafka_topic_partition_list_t>?)
        case incrementalAssign(UnsafeMutablePointer<rd_kafka_topic_partition_list_t>)
        case incrementalUnassign(UnsafeMutablePointer<rd_kafka_topic_partition_list_t>)
    }

    @discardableResult
    private func apply(_ change: AssignmentChange, _ rk: OpaquePointer) -> KafkaError? {
        let error: KafkaError?
        switch change {
        case .assign(let list):
            let code = rd_kafka_assign(rk, list)
            error = code == RD_KAFKA_RESP_ERR_NO_ERROR ? nil : KafkaError(code)
        case .incrementalAssign(let list):
            error = rd_kafka_incremental_assign(rk, list).map { KafkaError(consuming: $0) }
        case .incrementalUnassign(let list):
            error = rd_kafka_incremental_unassign(rk, list).map { KafkaError(consuming: $0) }
        }
        if let error {
            logger.error("Kafka assignment change failed", metadata: ["error": "\(error)"])
        }
        return error
    }
}
