import Contracts
import Foundation
import Kafka
import Logging
import Projections
import Synchronization

/// `pushline-processor rebuild`: builds the projections anew from the command topics, from
/// offset 0, into an empty store (SPEC §8.3).
///
/// The topics are replayed one after the other — admin, registration, notification, tracking —
/// each up to where it ends when its turn comes, through the same applier the processor uses.
/// Running them in that order gives every command the state its own run found as long as the
/// commands it depends on were applied first then too: a send finds its devices, a report its
/// send. (A single processor reading all topics at once from offset 0 could apply a send
/// before the registrations it targets.)
///
/// Nothing leaves the rebuild: outbound records are not published again (the devices got
/// them the first time), and outbox jobs are written but not sent (no dispatcher runs here).
/// The stored offsets are the replayed positions, so a processor started on the new store
/// carries on from there.
public enum Rebuild {
    public struct Summary: Sendable, Equatable {
        /// Records applied per topic.
        public var records: [String: Int] = [:]
        /// Outbound records the replay rendered and did not publish.
        public var outboundNotRepublished = 0
    }

    public enum Failure: Error, CustomStringConvertible {
        case storeNotEmpty(String)
        case consumerStopped(String)

        public var description: String {
            switch self {
            case .storeNotEmpty(let store):
                "the store \(store) already holds consumed offsets; rebuild into a new, empty store (PUSHLINE_STORE)"
            case .consumerStopped(let topic): "the consumer of \(topic) stopped before reaching the end of the topic"
            }
        }
    }

    public static func run(configuration: ProcessorConfiguration, verifier: any DeviceTokenVerifier = TokenFormatVerifier(),
                           logger: Logger) async throws -> Summary {
        let topics = configuration.topics.commandTopics
        let store = try await ProjectionStoreFactory.open(configuration.store, logger: logger)
        guard try await store.offsets(topics: topics).isEmpty else { throw Failure.storeNotEmpty(configuration.storeForLogs) }
        // A topic nobody wrote yet is created (empty), as `serve` does, rather than waited for.
        try await configuration.createMissingTopics()
        let outbound = DiscardedOutbound()
        var summary = Summary()
        for topic in topics {
            // A group of its own per run and topic: nothing is shared with live processors.
            let group = "\(configuration.groupId).rebuild.\(UUID.random().lowercasedString)"
            let consumer = CommandConsumer(configuration: configuration.consumerConfiguration(groupId: group), topics: [topic],
                                           store: store, outbound: outbound, verifier: verifier, logger: logger, onApplied: {})
            let start = ContinuousClock.now
            logger.info("replaying topic", metadata: ["topic": "\(topic)"])
            try await withThrowingTaskGroup(of: Bool.self) { tasks in
                tasks.addTask {
                    try await consumer.run()
                    return false
                }
                tasks.addTask {
                    while !consumer.isCaughtUp { try await Task.sleep(for: .milliseconds(50)) }
                    return true
                }
                let caughtUp = try await tasks.next() ?? false
                tasks.cancelAll()
                while try await tasks.next() != nil {}
                guard caughtUp else { throw Failure.consumerStopped(topic) }
            }
            let applied = try await store.offsets(topics: [topic]).values.reduce(0, +)
            summary.records[topic] = Int(applied)
            logger.info("topic replayed", metadata: ["topic": "\(topic)", "records": "\(applied)",
                                                     "seconds": "\(Double((ContinuousClock.now - start).milliseconds) / 1000)"])
        }
        summary.outboundNotRepublished = outbound.count
        return summary
    }
}

/// The outbound side of a replay: the records were published when their commands were first
/// applied, so they are counted and dropped.
final class DiscardedOutbound: OutboundPublisher {
    private let total = Mutex(0)
    var count: Int { total.withLock { $0 } }
    func publish(_ messages: [OutboundMessage]) async throws { total.withLock { $0 += messages.count } }
}
