import CRdKafka

/// The one error type of the Kafka module: every failure reported by librdkafka, or
/// detected by this layer on top of it, is a `KafkaError`.
///
/// `code` is librdkafka's code, matched by name: `error.code == .messageTimedOut` (client-side
/// codes are negative, e.g. `-192` `_MSG_TIMED_OUT`; broker answers positive, e.g. `1`
/// `OFFSET_OUT_OF_RANGE`, which also marks a consumer's vanished log). `isRetriable` is true
/// when trying the same operation again later can succeed.
public struct KafkaError: Error, Sendable, Equatable, CustomStringConvertible {
    /// librdkafka's code (`rd_kafka_resp_err_t`).
    public var code: Code
    /// librdkafka's name for the code (`rd_kafka_err2name`), e.g. `"_MSG_TIMED_OUT"`.
    public var name: String
    /// librdkafka's text for this failure, or this layer's explanation.
    public var message: String
    /// True for transient conditions: timeouts, a full local queue, transport failures,
    /// all brokers down, missing leaders or replicas.
    public var isRetriable: Bool

    public var description: String {
        "KafkaError \(name) (\(code.rawValue)): \(message)"
    }

    public init(code: Code, name: String, message: String, isRetriable: Bool) {
        self.code = code
        self.name = name
        self.message = message
        self.isRetriable = isRetriable
    }
}

extension KafkaError {
    /// An error for a librdkafka code, described by librdkafka's own text unless a more
    /// specific one (an errstr buffer, a message's error string) is at hand.
    init(_ error: rd_kafka_resp_err_t, message: String? = nil) {
        self.init(
            code: Code(error),
            name: String(cString: rd_kafka_err2name(error)),
            message: message ?? String(cString: rd_kafka_err2str(error)),
            isRetriable: KafkaError.retriableCodes.contains(error.rawValue)
        )
    }

    /// An error of a named code, described by librdkafka's text for it unless `message` says more.
    init(_ code: Code, message: String? = nil) {
        self.init(rd_kafka_resp_err_t(rawValue: code.rawValue), message: message)
    }

    /// Whether the record is larger than the client's or the broker's limit
    /// (`message.max.bytes`): sending it again can never succeed.
    public var isRecordTooLarge: Bool {
        code == .messageTooLarge || code == .recordListTooLarge
    }

    /// A librdkafka error code, with names for the ones Pushline handles or tests meet.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The `rd_kafka_resp_err_t` value.
        public var rawValue: Int32

        public init(rawValue: Int32) {
            self.rawValue = rawValue
        }

        init(_ code: rd_kafka_resp_err_t) {
            rawValue = code.rawValue
        }

        /// A record was not acknowledged within `delivery.timeout.ms` (client-side).
        public static let messageTimedOut = Code(RD_KAFKA_RESP_ERR__MSG_TIMED_OUT)
        /// The client was shut down while the call waited.
        public static let destroyed = Code(RD_KAFKA_RESP_ERR__DESTROY)
        /// An argument or configuration value librdkafka refused.
        public static let invalidArgument = Code(RD_KAFKA_RESP_ERR__INVALID_ARG)
        /// A call that got no answer in time (client-side).
        public static let timedOut = Code(RD_KAFKA_RESP_ERR__TIMED_OUT)
        /// The connection to a broker failed.
        public static let transport = Code(RD_KAFKA_RESP_ERR__TRANSPORT)
        /// The client cannot go on (e.g. an idempotent producer's sequence is broken).
        public static let fatal = Code(RD_KAFKA_RESP_ERR__FATAL)
        /// The local producer queue is full.
        public static let queueFull = Code(RD_KAFKA_RESP_ERR__QUEUE_FULL)
        /// The offset asked for is not in the log (a consumer's log vanished or was truncated).
        public static let offsetOutOfRange = Code(RD_KAFKA_RESP_ERR_OFFSET_OUT_OF_RANGE)
        /// The record is larger than the broker accepts.
        public static let messageTooLarge = Code(RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE)
        /// The batch of records is larger than the broker accepts.
        public static let recordListTooLarge = Code(RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE)

        // The codes this module reacts to itself.
        static let partitionEOF = Code(RD_KAFKA_RESP_ERR__PARTITION_EOF)
        static let autoOffsetReset = Code(RD_KAFKA_RESP_ERR__AUTO_OFFSET_RESET)
        static let logTruncation = Code(RD_KAFKA_RESP_ERR__LOG_TRUNCATION)
        static let state = Code(RD_KAFKA_RESP_ERR__STATE)
        static let fenced = Code(RD_KAFKA_RESP_ERR__FENCED)
        static let producerFenced = Code(RD_KAFKA_RESP_ERR_PRODUCER_FENCED)
        static let invalidProducerEpoch = Code(RD_KAFKA_RESP_ERR_INVALID_PRODUCER_EPOCH)
        static let topicAuthorizationFailed = Code(RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED)
        static let groupAuthorizationFailed = Code(RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED)
        static let clusterAuthorizationFailed = Code(RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED)
        static let authentication = Code(RD_KAFKA_RESP_ERR__AUTHENTICATION)
        static let saslAuthenticationFailed = Code(RD_KAFKA_RESP_ERR_SASL_AUTHENTICATION_FAILED)

        /// librdkafka's name for the code, e.g. `_MSG_TIMED_OUT`.
        public var description: String {
            String(cString: rd_kafka_err2name(rd_kafka_resp_err_t(rawValue: rawValue)))
        }
    }

    /// The failure of a configuration call, with librdkafka's errstr text.
    static func configuration(_ message: String) -> KafkaError {
        KafkaError(.invalidArgument, message: message)
    }

    /// Conditions that clear up by themselves (a broker comes back, a leader is elected,
    /// the local queue drains), so a caller may retry the same operation.
    private static let retriableCodes: Set<Int32> = [
        RD_KAFKA_RESP_ERR__TRANSPORT,
        RD_KAFKA_RESP_ERR__RESOLVE,
        RD_KAFKA_RESP_ERR__MSG_TIMED_OUT,
        RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN,
        RD_KAFKA_RESP_ERR__TIMED_OUT,
        RD_KAFKA_RESP_ERR__QUEUE_FULL,
        RD_KAFKA_RESP_ERR__ISR_INSUFF,
        RD_KAFKA_RESP_ERR__WAIT_COORD,
        RD_KAFKA_RESP_ERR__TIMED_OUT_QUEUE,
        RD_KAFKA_RESP_ERR__RETRY,
        RD_KAFKA_RESP_ERR__PURGE_QUEUE,
        RD_KAFKA_RESP_ERR__PURGE_INFLIGHT,
        RD_KAFKA_RESP_ERR__WAIT_CACHE,
        RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART,
        RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE,
        RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION,
        RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT,
        RD_KAFKA_RESP_ERR_BROKER_NOT_AVAILABLE,
        RD_KAFKA_RESP_ERR_REPLICA_NOT_AVAILABLE,
        RD_KAFKA_RESP_ERR_NETWORK_EXCEPTION,
        RD_KAFKA_RESP_ERR_COORDINATOR_LOAD_IN_PROGRESS,
        RD_KAFKA_RESP_ERR_COORDINATOR_NOT_AVAILABLE,
        RD_KAFKA_RESP_ERR_NOT_COORDINATOR,
        RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS,
        RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS,
        RD_KAFKA_RESP_ERR_KAFKA_STORAGE_ERROR,
        RD_KAFKA_RESP_ERR_FETCH_SESSION_ID_NOT_FOUND,
        RD_KAFKA_RESP_ERR_INVALID_FETCH_SESSION_EPOCH,
        RD_KAFKA_RESP_ERR_FENCED_LEADER_EPOCH,
    ].reduce(into: []) { $0.insert($1.rawValue) }
}
