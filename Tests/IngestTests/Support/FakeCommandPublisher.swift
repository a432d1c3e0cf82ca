import Contracts
import Kafka
import Ingest

/// An in-memory `CommandPublisher`: records every call it receives (failed ones too) and can be
/// told to fail or to report the broker unreachable.
actor FakeCommandPublisher: CommandPublisher {
    /// One `publish` call: its commands and the request id it was given.
    struct Call: Sendable {
        var commands: [EncodedCommand]
        var requestId: String
    }

    /// Every publish call received, in order, including those it failed.
    private(set) var calls: [Call] = []
    private var failure: (any Error)?
    private var ready = true

    func publish(_ commands: [EncodedCommand], requestId: String) async throws -> [KafkaDeliveryReport] {
        calls.append(Call(commands: commands, requestId: requestId))
        if let failure { throw failure }
        // Each topic as one partition, numbered in publishing order.
        var positions: [KafkaDeliveryReport] = []
        for command in commands {
            positions.append(KafkaDeliveryReport(topic: command.topic, partition: 0, offset: next[command.topic, default: 0]))
            next[command.topic, default: 0] += 1
        }
        return positions
    }
    private var next: [String: Int64] = [:]

    func isReady() -> Bool { ready }

    func failEveryPublish(with error: any Error) { failure = error }
    func setReady(_ value: Bool) { ready = value }

    /// Every command of every call, in order.
    var commands: [EncodedCommand] { calls.flatMap(\.commands) }
}
