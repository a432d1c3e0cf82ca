import CRdKafka
import Logging

/// The object librdkafka's per-handle callbacks reach through the configuration opaque:
/// it routes librdkafka's log lines and error events to swift-log, and lets a client kind
/// (the consumer) react to errors. The owner of a handle keeps this object alive until
/// `rd_kafka_destroy` has returned, because librdkafka may call back until then.
class ClientCallbacks: @unchecked Sendable {
    // @unchecked: subclasses add only state they protect themselves; `logger` is immutable.
    let logger: Logger

    init(logger: Logger) {
        self.logger = logger
    }

    /// An error event (`error_cb`). Most are transient (a broker went away) and librdkafka
    /// recovers by itself, so the default only logs. A failed connection is already
    /// reported by librdkafka's own log line (facility FAIL), so its event is debug only.
    func didReceiveError(_ error: KafkaError, isFatal: Bool) {
        if isFatal {
            logger.error("librdkafka fatal error", metadata: ["error": "\(error)"])
        } else if error.code == .transport {
            logger.debug("librdkafka error", metadata: ["error": "\(error)"])
        } else {
            logger.warning("librdkafka error", metadata: ["error": "\(error)"])
        }
    }

    /// The callbacks object a handle was configured with.
    static func of(_ rk: OpaquePointer?) -> ClientCallbacks? {
        guard let rk, let opaque = rd_kafka_opaque(rk) else { return nil }
        return Unmanaged<ClientCallbacks>.fromOpaque(opaque).takeUnretainedValue()
    }

    /// Installs the log and error callbacks and makes `self` the opaque they receive.
    func install(on conf: OpaquePointer) {
        rd_kafka_conf_set_opaque(conf, Unmanaged.passUnretained(self).toOpaque())
        rd_kafka_conf_set_log_cb(conf) { rk, level, facility, line in
            guard let callbacks = ClientCallbacks.of(rk), let line else { return }
            let facilityName = facility.map { String(cString: $0) } ?? ""
            callbacks.logger.log(
                level: Logger.Level(syslogLevel: level),
                "\(String(cString: line))",
                metadata: ["librdkafka.facility": "\(facilityName)"]
            )
        }
        rd_kafka_conf_set_error_cb(conf) { rk, code, reason, _ in
            guard let callbacks = ClientCallbacks.of(rk) else { return }
            var error = KafkaError(rd_kafka_resp_err_t(code), message: reason.map { String(cString: $0) })
            let isFatal = error.code == .fatal
            if isFatal, let rk {
                error = KafkaError.fatal(of: rk)
            }
            callbacks.didReceiveError(error, isFatal: isFatal)
        }
    }
}

extension KafkaError {
    /// The underlying error behind `_FATAL`, which librdkafka keeps on the handle.
    static func fatal(of rk: OpaquePointer) -> KafkaError {
        var buffer = [CChar](repeating: 0, count: 512)
        let code = rd_kafka_fatal_error(rk, &buffer, buffer.count)
        let text = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        var error = KafkaError(code, message: "fatal: \(text)")
        error.isRetriable = false
        return error
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
