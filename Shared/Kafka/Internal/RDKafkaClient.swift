import CRdKafka
import Logging

/// The module's one owner of a librdkafka client handle. Every call into librdkafka is made
/// here or in this type's extensions (producing, consuming, administration), which turn
/// handles, partition lists, messages and error codes into Swift values; the rest of the
/// module never sees a C pointer.
///
/// Calls marked *any thread* may be made concurrently with each other and with `close…`:
/// they pass the handle guard, so the handle is never destroyed under them, and fail with
/// `KafkaError.Code.destroyed` (or answer nothing) once closing has started. Calls marked
/// *owner* are made only by the thread that owns the client's lifecycle (a poller thread,
/// or the caller of a temporary client) and never after `close…`.
final class RDKafkaClient: Sendable {
    enum Kind {
        case producer, consumer
    }

    /// What the client does with librdkafka's callbacks, beside logging them: the object the
    /// handle's opaque points at. It holds no reference to the client's owner except through
    /// these closures, so owners capture themselves weakly.
    final class Callbacks: Sendable {
        let logger: Logger
        /// A fatal error was raised on the handle (already logged).
        let onFatalError: (@Sendable (KafkaError) -> Void)?
        /// A consumer group rebalance, on the consumer's poller thread; nil for none (and
        /// then librdkafka assigns by itself).
        let onRebalance: (@Sendable (Rebalance) -> Void)?

        init(
            logger: Logger,
            onFatalError: (@Sendable (KafkaError) -> Void)? = nil,
            onRebalance: (@Sendable (Rebalance) -> Void)? = nil
        ) {
            self.logger = logger
            self.onFatalError = onFatalError
            self.onRebalance = onRebalance
        }

        fileprivate static func of(_ rk: OpaquePointer?) -> Callbacks? {
            guard let rk, let opaque = rd_kafka_opaque(rk) else { return nil }
            return Unmanaged<Callbacks>.fromOpaque(opaque).takeUnretainedValue()
        }
    }

    /// Defaults every handle gets before its own properties, applied only if this
    /// librdkafka knows them (older releases, such as Debian bookworm's 2.0.2, do not).
    static let optionalDefaults: [(String, String)] = [
        // KIP-714 client metrics: Tansu does not use them, and while a telemetry
        // exchange is pending rd_kafka_destroy can stall for a second.
        ("enable.metrics.push", "false"),
    ]

    let callbacks: Callbacks
    var logger: Logger { callbacks.logger }
    private let handleGuard = HandleGuard()
    // Written once in init; librdkafka's handle and queue API is thread-safe, and who may
    // still use them is decided by `handleGuard`.
    nonisolated(unsafe) let handle: OpaquePointer
    /// The consumer queue (consumers only): every event, rebalances included, is served
    /// through it.
    nonisolated(unsafe) let consumerQueue: OpaquePointer?

    /// A client of `kind` configured with `optionalDefaults`, then `properties` in order.
    /// Throws the `KafkaError` carrying librdkafka's own explanation of a refused property.
    init(_ kind: Kind, properties: [(String, String)], callbacks: Callbacks) throws(KafkaError) {
        self.callbacks = callbacks
        let conf = rd_kafka_conf_new()!
        var errstr = [CChar](repeating: 0, count: 512)
        for (name, value) in Self.optionalDefaults {
            _ = rd_kafka_conf_set(conf, name, value, &errstr, errstr.count)
        }
        for (name, value) in properties where rd_kafka_conf_set(conf, name, value, &errstr, errstr.count) != RD_KAFKA_CONF_OK {
            rd_kafka_conf_destroy(conf)
            throw KafkaError.configuration(Self.string(errstr))
        }
        Self.install(callbacks, kind: kind, on: conf)
        // librdkafka takes the configuration only on success.
        guard let rk = rd_kafka_new(kind == .producer ? RD_KAFKA_PRODUCER : RD_KAFKA_CONSUMER, conf, &errstr, errstr.count) else {
            rd_kafka_conf_destroy(conf)
            throw KafkaError.configuration(Self.string(errstr))
        }
        handle = rk
        if kind == .consumer {
            rd_kafka_poll_set_consumer(rk)
            consumerQueue = rd_kafka_queue_get_consumer(rk)
        } else {
            consumerQueue = nil
        }
    }

    /// Runs `body` on a short-lived client (the admin requests), destroyed afterwards.
    static func withTemporary<T>(
        _ kind: Kind,
        properties: [(String, String)],
        _ body: (RDKafkaClient) throws(KafkaError) -> T
    ) throws(KafkaError) -> T {
        let client = try RDKafkaClient(kind, properties: properties,
                                       callbacks: Callbacks(logger: Logger(label: "pushline.kafka.admin")))
        defer { client.destroy() }
        return try body(client)
    }

    // MARK: Guarded use

    /// Runs `body` with the handle unless closing has started (then nil). *Any thread.*
    func withHandle<T, E: Error>(_ body: (OpaquePointer) throws(E) -> T) throws(E) -> T? {
        try handleGuard.withHandle { () throws(E) -> T in try body(handle) }
    }

    /// True once closing started.
    var isClosed: Bool { handleGuard.isClosed }

    /// Bars every later guarded call and waits until the current ones have returned; false if
    /// closing had already started. Blocks: call it off Swift's cooperative pool. *Owner.*
    func barCalls() -> Bool {
        handleGuard.close()
    }

    /// Destroys the handle; librdkafka may call back until this returns, which is why the
    /// client (holding `callbacks`) must live until then. *Owner*, after `barCalls()`.
    func destroy() {
        if let consumerQueue {
            rd_kafka_queue_destroy(consumerQueue)
            // A consumer is closed first (`leaveGroup`): destroying must not close (and wait on
            // the group) a second time; that second close was seen to wait forever after a
            // failed first one.
            rd_kafka_destroy_flags(handle, Int32(RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE))
        } else {
            rd_kafka_destroy(handle)
        }
    }

    // MARK: Calls of every kind

    /// The error behind a fatal state, nil while the handle has none. *Any thread.*
    func fatalError() -> KafkaError? {
        withHandle { rk in KafkaError.fatal(of: rk) } ?? nil
    }

    /// Whether a broker answers a metadata request for no topic (the cheapest answer) within
    /// `timeout`. Blocks up to `timeout`. *Any thread.*
    func answersMetadata(timeout: Duration) -> Bool {
        withHandle { rk in
            var metadata: UnsafePointer<rd_kafka_metadata>?
            let code = rd_kafka_metadata(rk, 0, nil, &metadata, timeout.timeoutMilliseconds)
            if let metadata { rd_kafka_metadata_destroy(metadata) }
            return code == RD_KAFKA_RESP_ERR_NO_ERROR
        } ?? false
    }

    /// The high watermark the last fetch response reported for `partition`, nil before the
    /// first one or once closing started. *Any thread.*
    func highWatermark(_ partition: TopicPartition) -> Int64? {
        withHandle { rk in
            var low: Int64 = -1
            var high: Int64 = -1
            let code = rd_kafka_get_watermark_offsets(rk, partition.topic, partition.partition, &low, &high)
            return code == RD_KAFKA_RESP_ERR_NO_ERROR && high >= 0 ? high : nil
        } ?? nil
    }

    static func string(_ buffer: [CChar]) -> String {
        buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }

    // MARK: Callbacks

    private static func install(_ callbacks: Callbacks, kind: Kind, on conf: OpaquePointer) {
        rd_kafka_conf_set_opaque(conf, Unmanaged.passUnretained(callbacks).toOpaque())
        rd_kafka_conf_set_log_cb(conf) { rk, level, facility, line in
            guard let callbacks = Callbacks.of(rk), let line else { return }
            callbacks.logger.log(
                level: Logger.Level(syslogLevel: level),
                "\(String(cString: line))",
                metadata: ["librdkafka.facility": "\(facility.map { String(cString: $0) } ?? "")"]
            )
        }
        rd_kafka_conf_set_error_cb(conf) { rk, code, reason, _ in
            guard let rk, let callbacks = Callbacks.of(rk) else { return }
            let error = KafkaError.reported(rd_kafka_resp_err_t(code), on: rk, message: reason.map { String(cString: $0) })
            // Most are transient (a broker went away) and librdkafka recovers by itself. A failed
            // connection is already reported by librdkafka's own log line (facility FAIL).
            if code == RD_KAFKA_RESP_ERR__FATAL.rawValue {
                callbacks.logger.error("librdkafka fatal error", metadata: ["error": "\(error)"])
                callbacks.onFatalError?(error)
            } else if error.code == .transport {
                callbacks.logger.debug("librdkafka error", metadata: ["error": "\(error)"])
            } else {
                callbacks.logger.warning("librdkafka error", metadata: ["error": "\(error)"])
            }
        }
        switch kind {
        case .producer:
            rd_kafka_conf_set_dr_msg_cb(conf, deliveryReportCallback)
        case .consumer:
            if callbacks.onRebalance != nil { rd_kafka_conf_set_rebalance_cb(conf, rebalanceCallback) }
            rd_kafka_conf_set_offset_commit_cb(conf) { rk, code, _, _ in
                // Commits are only for lag tools; a failure is worth a line, not an error.
                guard code != RD_KAFKA_RESP_ERR_NO_ERROR, code != RD_KAFKA_RESP_ERR__NO_OFFSET else { return }
                Callbacks.of(rk)?.logger.warning("Kafka offset commit failed", metadata: ["error": "\(KafkaError(code))"])
            }
        }
    }
}

extension KafkaError {
    /// The underlying error behind `_FATAL`, which librdkafka keeps on the handle; nil while
    /// the handle has none.
    static func fatal(of rk: OpaquePointer) -> KafkaError? {
        var buffer = [CChar](repeating: 0, count: 512)
        let code = rd_kafka_fatal_error(rk, &buffer, buffer.count)
        guard code != RD_KAFKA_RESP_ERR_NO_ERROR else { return nil }
        var error = KafkaError(code, message: "fatal: \(RDKafkaClient.string(buffer))")
        error.isRetriable = false
        return error
    }

    /// A code as librdkafka reported it on `rk`: behind `_FATAL`, the handle's underlying fatal
    /// error; any other code described by `message` (librdkafka's own text if nil).
    static func reported(_ code: rd_kafka_resp_err_t, on rk: OpaquePointer?,
                         message: @autoclosure () -> String? = nil) -> KafkaError {
        if code == RD_KAFKA_RESP_ERR__FATAL, let rk, let fatal = fatal(of: rk) {
            return fatal
        }
        return KafkaError(code, message: message())
    }

    /// An error owned by an `rd_kafka_error_t`, which this call destroys.
    init(consuming error: OpaquePointer) {
        let code = rd_kafka_error_code(error)
        let text = String(cString: rd_kafka_error_string(error))
        let retriable = rd_kafka_error_is_retriable(error) != 0
        rd_kafka_error_destroy(error)
        self.init(code, message: text)
        self.isRetriable = isRetriable || retriable
    }
}

extension Logger.Level {
    /// librdkafka logs with syslog levels (0 emergency … 7 debug).
    init(syslogLevel: Int32) {
        switch syslogLevel {
        case ...2: self = .critical
        case 3: self = .error
        case 4: self = .warning
        case 5: self = .notice
        case 6: self = .info
        default: self = .debug
        }
    }
}
