import Foundation
import Kafka
import Logging
import TestSupport
import XCTest

/// Shared by the Kafka tests: quiet logging, group settings that make joins take ~2 s on
/// Tansu, and a bounded way to read batches.
enum KafkaTestSupport {
    static let logger: Logger = {
        var logger = Logger(label: "kafka-tests")
        logger.logLevel = .warning
        return logger
    }()

    static func consumerConfiguration(_ broker: TestBroker, group: String = "g-\(UUID().uuidString)") -> KafkaConsumerConfiguration {
        var configuration = KafkaConsumerConfiguration(groupId: group)
        configuration.bootstrapServers = broker.bootstrapServers
        configuration.sessionTimeout = .seconds(6)
        configuration.maxPollInterval = .seconds(7)
        return configuration
    }

    static func producer(_ broker: TestBroker) throws -> KafkaProducer {
        var configuration = KafkaProducerConfiguration()
        configuration.bootstrapServers = broker.bootstrapServers
        return try KafkaProducer(configuration: configuration, logger: logger)
    }

    static func records(topic: String, count: Int, prefix: String = "") -> [KafkaProducerRecord] {
        (0..<count).map { index in
            KafkaProducerRecord(
                topic: topic,
                key: "\(prefix)key-\(index)",
                value: Data("\(prefix)value-\(index)".utf8),
                headers: [KafkaHeader(name: "index", value: String(index))]
            )
        }
    }

    struct Timeout: Error, CustomStringConvertible {
        var description: String
    }

    /// Reads batches until `count` messages arrived; throws `Timeout` after `timeout`
    /// and rethrows what the sequence throws.
    static func collect(
        _ consumer: KafkaConsumer,
        count: Int,
        within timeout: Duration = .seconds(20)
    ) async throws -> [KafkaConsumerMessage] {
        try await withThrowingTaskGroup(of: [KafkaConsumerMessage]?.self) { group in
            group.addTask {
                var messages: [KafkaConsumerMessage] = []
                for try await batch in consumer.batches() {
                    XCTAssertFalse(batch.isEmpty, "a batch is never empty")
                    messages += batch
                    if messages.count >= count { break }
                }
                return messages
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                return nil
            }
            let first = try await group.next()!
            group.cancelAll()
            guard let messages = first else {
                throw Timeout(description: "fewer than \(count) messages within \(timeout)")
            }
            return messages
        }
    }

    /// Waits until `condition` holds, checking every 100 ms.
    static func eventually(
        within timeout: Duration = .seconds(20),
        _ what: String,
        _ condition: () async -> Bool
    ) async throws {
        let deadline = ContinuousClock.now + timeout
        while !(await condition()) {
            guard ContinuousClock.now < deadline else { throw Timeout(description: "not within \(timeout): \(what)") }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    static let startAtBeginning = KafkaRebalanceHandler(onAssign: { _ in [:] }, onRevoke: { _ in })
}
