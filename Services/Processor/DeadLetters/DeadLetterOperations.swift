import Contracts
import Foundation
import Handlers
import Kafka
import Logging
import Projections
import ProjectionStores

/// What an operator does with dead letters (`pushline dead-letters`): list them, and apply one
/// again once its cause is fixed. Both work on the store directly, like `pushline lag`.
public enum DeadLetterOperations {
    /// Every dead letter of the store, in partition and offset order.
    public static func list(configuration: ProcessorConfiguration, logger: Logger) async throws -> [DeadLetterRow] {
        try await ProjectionStoreFactory.withStore(configuration.shared.store, logger: logger) { store in
            var all: [DeadLetterRow] = []
            var after: DeadLetterKey?
            while true {
                let page = try await store.deadLetters(after: after, limit: 500)
                all += page
                guard page.count == 500, let last = page.last else { return all }
                after = last.key
            }
        }
    }

    /// The dead letter `key` does not exist (never, or it was applied again already).
    public struct NotFound: Error, CustomStringConvertible {
        public var key: DeadLetterKey
        public var description: String { "no dead letter \(key) in the store" }
    }

    /// Applies the dead letter `key` again, live, through the processor's own applier: its
    /// outbound records go to the outbound topic and its webhooks to the outbox, and the dead
    /// letter is removed in the same transaction as its state. If the store still refuses it,
    /// the error is thrown and the dead letter stays.
    public static func reapply(_ key: DeadLetterKey, configuration: ProcessorConfiguration,
                               verifier: any DeviceTokenVerifier = DecisionRules.defaultVerifier, logger: Logger) async throws -> DeadLetterReapplied {
        try await ProjectionStoreFactory.withStore(configuration.shared.store, logger: logger) { store in
            guard let letter = try await store.deadLetter(key) else { throw NotFound(key: key) }
            let producer = try KafkaProducer(configuration: configuration.shared.producerConfiguration(clientId: "pushline-dead-letters"),
                                             logger: logger)
            let applier = BatchApplier(store: store, outbound: KafkaOutboundPublisher(producer: producer, topic: configuration.shared.topics.outbound),
                                       verifier: verifier, logger: logger, rules: configuration.decisionRules)
            do {
                let result = try await applier.reapply(letter)
                await producer.shutdown()
                return result
            } catch {
                await producer.shutdown()
                throw error
            }
        }
    }
}
