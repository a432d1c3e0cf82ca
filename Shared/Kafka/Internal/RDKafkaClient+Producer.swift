import CRdKafka
import Foundation

extension RDKafkaClient {
    /// Hands `records` to librdkafka without waiting (key, value and headers are copied, so
    /// nothing must outlive the call). Record `i` carries `opaque(i)`, which comes back with its
    /// delivery report; a record librdkafka refuses (e.g. `_QUEUE_FULL` when the local queue is
    /// at its limit, or every record once closing started) is passed to `refused` instead and
    /// gets no report. *Any thread.*
    func produce(
        _ records: [KafkaProducerRecord],
        opaque: (Int) -> UnsafeMutableRawPointer,
        refused: (Int, KafkaError) -> Void
    ) {
        let enqueued: Void? = withHandle { rk in
            for index in records.indices {
                let code = Self.enqueue(records[index], on: rk, opaque: opaque(index))
                if code != RD_KAFKA_RESP_ERR_NO_ERROR {
                    refused(index, Self.refusal(code, topic: records[index].topic, rk: rk))
                }
            }
        }
        if enqueued == nil {
            for index in records.indices {
                refused(index, Self.shutDown(records[index].topic))
            }
        }
    }

    /// Hands `count` records of `topic` to librdkafka without waiting, each written by `write`
    /// into `buffer` (librdkafka copies it before the next is written), all with the same
    /// `opaque`. A record librdkafka refuses is passed to `refused` and gets no report. *Any thread.*
    func produce(
        count: Int, topic: String, buffer: inout KafkaRecordBuffer, opaque: UnsafeMutableRawPointer,
        write: (Int, inout KafkaRecordBuffer) -> Void, refused: (KafkaError) -> Void
    ) {
        let enqueued: Void? = withHandle { rk in
            topic.utf8CString.withUnsafeBufferPointer { topicName in
                for index in 0..<count {
                    buffer.value.removeAll(keepingCapacity: true)
                    write(index, &buffer)
                    let code = Self.enqueue(topic: topicName.baseAddress!, partition: RD_KAFKA_PARTITION_UA, key: &buffer.key,
                                            value: buffer.value, headers: buffer.headers, on: rk, opaque: opaque)
                    if code != RD_KAFKA_RESP_ERR_NO_ERROR { refused(Self.refusal(code, topic: topic, rk: rk)) }
                }
            }
        }
        if enqueued == nil {
            for _ in 0..<count {
                refused(Self.shutDown(topic))
            }
        }
    }

    /// Serves delivery reports (and log and error events) for up to `timeout`. *Owner* (the
    /// producer's poller thread), never after `destroy()`.
    func pollEvents(timeout: Duration) {
        _ = rd_kafka_poll(handle, timeout.timeoutMilliseconds)
    }

    /// Waits until every record handed over so far has its delivery report, or `timeout`
    /// passed. Blocks. *Any thread.*
    func flush(timeout: Duration) {
        _ = withHandle { rk in rd_kafka_flush(rk, timeout.timeoutMilliseconds) }
    }

    /// Bars new records, flushes for at most `flushTimeout`, fails whatever is left (so every
    /// pending record gets its report), stops the poller with `stopPolling` and destroys the
    /// handle. Blocks. *Owner*; only the first call does anything.
    func closeProducer(flushTimeout: Duration, stopPolling: () -> Void) {
        guard barCalls() else { return }
        _ = rd_kafka_flush(handle, flushTimeout.timeoutMilliseconds)
        // Whatever is left fails with _PURGE_QUEUE/_PURGE_INFLIGHT instead of leaving its
        // sender waiting forever; the flush serves those reports.
        _ = rd_kafka_purge(handle, Int32(RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT))
        _ = rd_kafka_flush(handle, 500)
        stopPolling()
        _ = rd_kafka_poll(handle, 0)
        destroy()
    }

    private static func enqueue(_ record: KafkaProducerRecord, on rk: OpaquePointer, opaque: UnsafeMutableRawPointer) -> rd_kafka_resp_err_t {
        var key = record.key
        return record.topic.withCString { topic in
            enqueue(topic: topic, partition: record.partition ?? RD_KAFKA_PARTITION_UA, key: &key, value: record.value,
                    headers: record.headers, on: rk, opaque: opaque)
        }
    }

    private static func enqueue(
        topic: UnsafePointer<CChar>, partition: Int32, key: inout String?, value: some ContiguousBytes, headers: [KafkaHeader],
        on rk: OpaquePointer, opaque: UnsafeMutableRawPointer
    ) -> rd_kafka_resp_err_t {
        let headers = headers.isEmpty ? nil : makeHeaders(headers)
        let code = value.withUnsafeBytes { value in
            if key == nil {
                return pushline_produce(rk, topic, partition, nil, 0, value.baseAddress, value.count, headers, opaque)
            }
            return key!.withUTF8 { keyBytes in
                pushline_produce(rk, topic, partition, keyBytes.baseAddress, keyBytes.count, value.baseAddress, value.count, headers, opaque)
            }
        }
        if code != RD_KAFKA_RESP_ERR_NO_ERROR, let headers {
            // librdkafka takes the headers only when it accepts the message.
            rd_kafka_headers_destroy(headers)
        }
        return code
    }

    private static func shutDown(_ topic: String) -> KafkaError {
        KafkaError(.destroyed, message: "record for \(topic) not sent: the producer is shut down")
    }

    private static func refusal(_ code: rd_kafka_resp_err_t, topic: String, rk: OpaquePointer) -> KafkaError {
        KafkaError.reported(code, on: rk, message: "record for \(topic) not enqueued: \(String(cString: rd_kafka_err2str(code)))")
    }

    private static func makeHeaders(_ headers: [KafkaHeader]) -> OpaquePointer {
        let list = rd_kafka_headers_new(headers.count)!
        for header in headers {
            var value = header.value
            value.withUTF8 { bytes in
                _ = rd_kafka_header_add(list, header.name, -1, bytes.baseAddress, bytes.count)
            }
        }
        return list
    }

    /// `dr_msg_cb`: runs on the thread that polls the producer (its poller thread, or a flush
    /// during shutdown) and hands the outcome to the record's waiting sender.
    static let deliveryReportCallback: @convention(c) (OpaquePointer?, UnsafePointer<rd_kafka_message_t>?, UnsafeMutableRawPointer?) -> Void = {
        rk, message, _ in
        guard let message, let opaque = message.pointee._private else { return }
        let code = message.pointee.err
        if code == RD_KAFKA_RESP_ERR_NO_ERROR {
            DeliveryWaiter.complete(opaque, .success((message.pointee.partition, message.pointee.offset)))
        } else {
            // Not rd_kafka_message_errstr: for a delivery report it returns the record's
            // payload (not NUL-terminated) as the "error string".
            DeliveryWaiter.complete(opaque, .failure(KafkaError.reported(code, on: rk)))
        }
    }
}
