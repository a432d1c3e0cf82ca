import CRdKafka
import Logging

/// Creates librdkafka configurations and handles, turning every refusal into a
/// `KafkaError` that carries librdkafka's own explanation (its errstr).
enum RDKafkaHandle {
    /// Defaults every handle gets before its own properties, applied only if this
    /// librdkafka knows them (older releases, such as Debian bookworm's 2.0.2, do not).
    static let optionalDefaults: [(String, String)] = [
        // KIP-714 client metrics: Tansu does not use them, and while a telemetry
        // exchange is pending rd_kafka_destroy can stall for a second.
        ("enable.metrics.push", "false"),
    ]

    /// A configuration with `optionalDefaults`, then `properties` applied in order and
    /// `callbacks` installed. The caller owns the result until it passes it to
    /// `make(_:configuration:)`.
    static func configuration(
        _ properties: [(String, String)],
        callbacks: ClientCallbacks
    ) throws(KafkaError) -> OpaquePointer {
        let conf = rd_kafka_conf_new()!
        var errstr = [CChar](repeating: 0, count: 512)
        for (name, value) in optionalDefaults {
            _ = rd_kafka_conf_set(conf, name, value, &errstr, errstr.count)
        }
        for (name, value) in properties {
            let result = rd_kafka_conf_set(conf, name, value, &errstr, errstr.count)
            if result != RD_KAFKA_CONF_OK {
                rd_kafka_conf_destroy(conf)
                throw KafkaError.configuration(string(from: errstr))
            }
        }
        callbacks.install(on: conf)
        return conf
    }

    /// A client handle; takes ownership of `conf` whether it succeeds or not.
    static func make(_ type: rd_kafka_type_t, configuration conf: OpaquePointer) throws(KafkaError) -> OpaquePointer {
        var errstr = [CChar](repeating: 0, count: 512)
        guard let rk = rd_kafka_new(type, conf, &errstr, errstr.count) else {
            // librdkafka frees the configuration only on success.
            rd_kafka_conf_destroy(conf)
            throw KafkaError.configuration(string(from: errstr))
        }
        return rk
    }

    /// Runs `body` on a short-lived handle of `type` (the admin requests), destroyed afterwards.
    static func withTemporary<T>(
        _ type: rd_kafka_type_t,
        properties: [(String, String)],
        _ body: (OpaquePointer) throws(KafkaError) -> T
    ) throws(KafkaError) -> T {
        let callbacks = ClientCallbacks(logger: Logger(label: "pushline.kafka.admin"))
        let rk = try make(type, configuration: try configuration(properties, callbacks: callbacks))
        defer {
            rd_kafka_destroy(rk)
            withExtendedLifetime(callbacks) {}
        }
        return try body(rk)
    }

    private static func string(from buffer: [CChar]) -> String {
        buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }
}
