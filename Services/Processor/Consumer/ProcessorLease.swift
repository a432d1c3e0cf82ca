import Foundation
import Kafka
import Logging
import Metrics
import Synchronization

/// One active processor per group, the others standing by: the member of the group that owns the
/// one partition of the lease topic applies the whole log; when it stops or dies, the consumer
/// group hands the lease to another member, which carries on from the store's offsets.
///
/// Commands are applied in one event order over every command partition
/// (docs/ARCHITECTURE.md#state-is-a-function-of-the-log), so their decisions cannot be split
/// between processors without making each wait for the others' partitions, record by record; a
/// standby is what a second processor adds. The offsets' compare-and-set still settles a member
/// that lost the lease mid-batch (its commit is refused).
final class ProcessorLease: Sendable {
    private let configuration: KafkaConsumerConfiguration
    private let topic: String
    private let logger: Logger
    private let state = Mutex<State>(State())
    private let activeGauge = Gauge(label: "pushline_processor_active")

    private struct State {
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

    /// Runs `work` whenever this process holds the lease, cancelling it (and waiting for it to
    /// finish its batch) when the lease is revoked, until the calling task is cancelled. Throws
    /// the first error `work` throws.
    func run(_ work: @escaping @Sendable () async throws -> Void) async throws {
        activeGauge.record(0)
        let membership = try KafkaConsumer(configuration: configuration, topics: [topic], rebalance: KafkaRebalanceHandler(
            // Partition 0 is the lease, should the topic have been created with more.
            onAssign: { partitions in
                if partitions.contains(where: { $0.partition == 0 }) { self.start(work) }
                return [:]
            },
            onRevoke: { partitions in
                if partitions.contains(where: { $0.partition == 0 }) { await self.stop() }
            }
        ), logger: logger)
        logger.info("standing by for the processor lease", metadata: ["group": "\(configuration.groupId)"])
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

    private func start(_ work: @escaping @Sendable () async throws -> Void) {
        state.withLock { state in
            guard state.work == nil else { return }
            logger.info("took the processor lease: applying the log", metadata: ["group": "\(configuration.groupId)"])
            activeGauge.record(1)
            state.work = Task {
                do {
                    try await work()
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
        logger.info("gave the processor lease up", metadata: ["group": "\(configuration.groupId)"])
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
