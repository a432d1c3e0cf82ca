import CRdKafka

/// A librdkafka handle pointer that may cross threads. librdkafka's handle API is
/// thread-safe; who may still use the pointer is decided by a `HandleGuard`.
struct UnsafeHandle: @unchecked Sendable {
    let pointer: OpaquePointer
}

enum RecordEnqueue {
    /// Hands one record to librdkafka without waiting (key and value are copied into
    /// librdkafka's message, so nothing here must outlive the call). Returns librdkafka's
    /// verdict, e.g. `_QUEUE_FULL` when the local queue is at its limit.
    static func enqueue(
        _ record: KafkaProducerRecord,
        on rk: OpaquePointer,
        opaque: UnsafeMutableRawPointer
    ) -> rd_kafka_resp_err_t {
        let headers = record.headers.isEmpty ? nil : makeHeaders(record.headers)
        var key = record.key
        let code = record.topic.withCString { topic in
            record.value.withUnsafeBytes { value in
                if key == nil {
                    return pushline_produce(rk, topic, nil, 0, value.baseAddress, value.count, headers, opaque)
                }
                return key!.withUTF8 { keyBytes in
                    pushline_produce(rk, topic, keyBytes.baseAddress, keyBytes.count, value.baseAddress, value.count, headers, opaque)
                }
            }
        }
        if code != RD_KAFKA_RESP_ERR_NO_ERROR, let headers {
            // librdkafka takes the headers only when it accepts the message.
            rd_kafka_headers_destroy(headers)
        }
        return code
    }

    /// The error a refused record fails with.
    static func refusal(_ code: rd_kafka_resp_err_t, topic: String, rk: OpaquePointer) -> KafkaError {
        if code == RD_KAFKA_RESP_ERR__FATAL {
            return KafkaError.fatal(of: rk)
        }
        return KafkaError(code, message: "record for \(topic) not enqueued: \(String(cString: rd_kafka_err2str(code)))")
    }

    static func producerShutDown(topic: String) -> KafkaError {
        KafkaError(RD_KAFKA_RESP_ERR__DESTROY, message: "record for \(topic) not sent: the producer is shut down")
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
}
