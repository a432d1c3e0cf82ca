import Contracts
import Foundation
import Kafka
import Logging
import Metrics
import Projections
import Synchronization

/// The shards a processor holds: shard i is partition i of every command topic, and its owner
/// is the member of the processor group that holds partition (i mod L) of the lease topic, of L
/// partitions. So with as many lease partitions as command partitions (what the processor
/// creates) every member applies its own shards side by side; a lease topic of one partition (a
/// deployment from before shards) makes one member the owner of every shard.
struct ShardShare: Sendable, Equatable, CustomStringConvertible {
    /// The lease partitions held.
    var held: Set<Int32>
    /// The lease topic's partition count.
    var leasePartitions: Int

    /// Every shard, as a lone rebuild applies them.
    static let all = ShardShare(held: [0], leasePartitions: 1)

    func owns(shard: Int32) -> Bool { held.contains(shard % Int32(max(1, leasePartitions))) }

    var description: String { held.sorted().map(String.init).joined(separator: ",") + " of \(leasePartitions)" }
}

/// The processor group's lease: each member of the group owns the shards of the lease topic's
/// partitions it is assigned (`ShardShare`) and applies them; when members join, leave or die,
/// the consumer group hands their lease partitions round again, and each new owner carries on
/// from the store's offsets.
///
/// An app's commands all land in one shard (`AppScopedCommand`), and no decision reads another
/// app's rows, so shards are applied side by side and the state is still the same function of
/// the log (docs/ARCHITECTURE.md#scale-out). A member gives its shards up only once its batch in
/// flight is committed; the offsets' compare-and-set still settles one that lost them mid-batch
/// (its commit is refused).
final class ProcessorLease: Sendable {
    private let configuration: KafkaConsumerConfiguration
    private let topic: String
    private let logger: Logger
    private let state = Mutex<State>(State())
    private let activeGauge = Gauge(label: "pushline_processor_active")
    private let sharesGauge = Gauge(label: "pushline_processor_lease_partitions")

    private struct State {
        var held: Set<Int32> = []
        var work: Task<Void, any Error>?
        var failure: (any Error)?
        var waiter: CheckedContinuation<Void, any Error>?
    }

    /// `configuration`: the group's consumer settings (its `groupId` names the group).
    init(configuration: KafkaConsumerConfiguration, topic: String, logger: Logger) {
        self.configuration = configuration
        self.topic = topic
        self.logger = logger
    }

    /// Runs `work` with the shards this process holds, whenever it holds any: cancelling it (and
    /// waiting for it to finish its batch) and starting it again with the new share at every
    /// rebalance, until the calling task is cancelled. Throws the first error `work` throws.
    func run(_ work: @escaping @Sendable (ShardShare) async throws -> Void) async throws {
        activeGauge.record(0)
        sharesGauge.record(0)
        let count = try await KafkaAdmin.partitions(of: [topic], bootstrapServers: configuration.bootstrapServers,
                                                    properties: configuration.properties).count
        let membership = try KafkaConsumer(configuration: configuration, topics: [topic], rebalance: KafkaRebalanceHandler(
            onAssign: { partitions in
                await self.change(count: count, work) { $0.formUnion(partitions.map(\.partition)) }
                return [:]
            },
            onRevoke: { partitions in
                await self.change(count: count, work) { $0.subtract(partitions.map(\.partition)) }
            }
        ), logger: logger)
        logger.info("joined the processor group: waiting for shards", metadata: ["group": "\(configuration.groupId)",
                                                                                  "lease_partitions": "\(count)"])
        do {
            // The lease topic holds no records: its batches are waited on only so that the
            // membership's failure (a vanished broker, say) ends the wait too.
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { for try await _ in membership.batches() {} }
                group.addTask { try await self.waitForFailure() }
                try await group.next()
                group.cancelAll()
            }
        } catch {
            await stop()
            await membership.close()
            // Cancelled by the caller: the end this waits for, whichever child noticed it first
            // (the wait throws CancellationError; the batches just end).
            if error is CancellationError, Task.isCancelled { return }
            throw error
        }
        await stop()
        await membership.close()
    }

    /// Stops the work of the old share and starts it with the new one, if any.
    private func change(count: Int, _ work: @escaping @Sendable (ShardShare) async throws -> Void, _ update: (inout Set<Int32>) -> Void) async {
        let (before, after) = state.withLock { state in
            let before = state.held
            update(&state.held)
            return (before, state.held)
        }
        guard before != after else { return }
        await stop()
        guard !after.isEmpty else { return }
        let share = ShardShare(held: after, leasePartitions: count)
        state.withLock { state in
            guard state.work == nil else { return }
            logger.info("took shards: applying them", metadata: ["group": "\(configuration.groupId)", "lease_partitions": "\(share)"])
            activeGauge.record(1)
            sharesGauge.record(Double(after.count))
            state.work = Task {
                do {
                    try await work(share)
                } catch is CancellationError {
                    // revoked or shutting down
                } catch {
                    self.fail(error)
                }
            }
        }
    }

    /// Cancels the active work and waits until it finished its batch and closed its consumer.
    private func stop() async {
        guard let work = state.withLock({ state in
            defer { state.work = nil }
            return state.work
        }) else { return }
        work.cancel()
        _ = await work.result
        activeGauge.record(0)
        sharesGauge.record(0)
        logger.info("gave shards up", metadata: ["group": "\(configuration.groupId)"])
    }

    private func fail(_ error: any Error) {
        let waiter = state.withLock { state in
            if state.failure == nil { state.failure = error }
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(throwing: error)
    }

    /// Returns never; throws the work's first failure, or `CancellationError` when cancelled.
    private func waitForFailure() async throws {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                state.withLock { state in
                    if let failure = state.failure {
                        continuation.resume(throwing: failure)
                    } else if Task.isCancelled {
                        continuation.resume(throwing: CancellationError())
                    } else {
                        state.waiter = continuation
                    }
                }
            }
        } onCancel: {
            let waiter = state.withLock { state in
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume(throwing: CancellationError())
        }
    }
}

extension ShardShare {
    /// The partitions of `all` (every command partition) that this share applies. Command topics
    /// of unequal partition counts are not co-partitioned: then they are one shard, shard 0.
    func partitions(of all: [PartitionKey]) -> [PartitionKey] {
        let coPartitioned = Set(Dictionary(grouping: all, by: \.topic).values.map(\.count)).count <= 1
        return all.filter { owns(shard: coPartitioned ? $0.partition : 0) }
    }

    /// The partition count of each topic, against which a share of some of the shards checks
    /// every command (`MisplacedCommand`); nil for a share of every partition, which applies any
    /// log exactly.
    func checkedCounts(of all: [PartitionKey]) -> [String: Int]? {
        partitions(of: all).count == all.count ? nil : Dictionary(grouping: all, by: \.topic).mapValues(\.count)
    }
}
