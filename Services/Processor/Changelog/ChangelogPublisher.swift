import Foundation
import Kafka
import Logging
import Metrics
import Projections
import ProjectionChangelog
import ServiceLifecycle
import Synchronization

/// Publishes the store's changelog outbox to the changelog topic
/// (docs/ARCHITECTURE.md#changelog-and-restore).
///
/// Every commit leaves its entry in the store's outbox, numbered, in the commit's own
/// transaction; this publishes the entries in number order, waits for the broker's
/// acknowledgement and then lets the store drop them. Whatever stops in between (a crash, a
/// broker outage) leaves the entries in the outbox, and they are published again later, by this
/// process or any other on the same store: an entry may appear twice in the topic (a restore
/// skips numbers it has), and every entry appears after the ones numbered before it. Publishing
/// runs beside the apply loop, woken after each applied batch, so a batch never waits for it.
public final class ChangelogPublisher: Service, Sendable {
    private let store: any ChangelogStore
    private let producer: KafkaProducer
    private let topic: String
    private let logger: Logger
    private let woken = WakeSignal()
    private let stopping = Mutex(false)
    /// The highest entry number this process published; entries above it are read from the outbox.
    private let published = Mutex<Int64>(0)
    /// The store's lineage, read once: nil until read, `.some(nil)` when the store keeps no changelog.
    private let lineage = Mutex<String??>(nil)
    private let counter = Counter(label: "pushline_processor_changelog_entries_published_total")
    /// Entries read from the outbox at once.
    static let pageSize = 16
    /// How long publishing waits for a wake-up before it looks at the outbox anyway (entries
    /// committed by another process, such as `pushline dead-letters reapply`).
    static let idlePoll = Duration.seconds(1)

    public init(store: any ChangelogStore, producer: KafkaProducer, topic: String, logger: Logger) {
        self.store = store
        self.producer = producer
        self.topic = topic
        self.logger = logger
    }

    /// New entries may be waiting (called after each applied batch).
    public func wake() {
        woken.signal()
    }

    /// Publishes until graceful shutdown, then publishes what is left once more.
    public func run() async throws {
        await withGracefulShutdownHandler {
            await publishUntilStopped()
        } onGracefulShutdown: {
            self.stopping.withLock { $0 = true }
            self.woken.signal()
        }
        do {
            try await publishPending()
        } catch {
            logger.warning("changelog entries left in the store's outbox at shutdown; the next processor publishes them",
                           metadata: ["error": "\(error)"])
        }
    }

    /// Runs `body` while publishing whenever woken and at least every `idlePoll`, then publishes
    /// what is left (for a rebuild, which runs no service group).
    public func publishing<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T {
        let loop = Task { await publishUntilStopped() }
        let value: T
        do {
            value = try await body()
        } catch {
            loop.cancel()
            await loop.value
            throw error
        }
        loop.cancel()
        await loop.value
        try await publishPending()
        return value
    }

    /// Publishes whenever woken and at least every `idlePoll`, backing off after a failure, until
    /// the task is cancelled or the service stops.
    private func publishUntilStopped() async {
        var delay = Duration.milliseconds(100)
        while !Task.isCancelled, !stopping.withLock({ $0 }) {
            do {
                try await publishPending()
                delay = .milliseconds(100)
                _ = await woken.wait(timeout: Self.idlePoll)
            } catch {
                logger.warning("changelog entries not published yet; retrying", metadata: ["error": "\(error)", "delay": "\(delay)"])
                try? await Task.sleep(for: delay)
                delay = min(delay * 2, .seconds(5))
            }
        }
    }

    /// Publishes every entry in the outbox, in number order, and returns how many.
    @discardableResult
    public func publishPending() async throws -> Int {
        guard let lineage = try await storeLineage() else { return 0 }
        var count = 0
        while true {
            let after = published.withLock { $0 }
            let rows = try await store.unpublishedChangelog(after: after, limit: Self.pageSize)
            guard let last = rows.last?.seq else { return count }
            var records: [KafkaProducerRecord] = []
            for row in rows {
                for part in ChangelogRecord.split(seq: row.seq, payload: row.payload) {
                    records.append(KafkaProducerRecord(topic: topic, key: lineage, value: part.value, partition: 0))
                }
            }
            _ = try await producer.send(records)
            published.withLock { $0 = max($0, last) }
            counter.increment(by: rows.count)
            count += rows.count
            try await store.changelogPublished(through: last)
        }
    }

    private func storeLineage() async throws -> String? {
        if let known = lineage.withLock({ $0 }) { return known }
        let found = try await store.changelogPosition()?.lineage
        lineage.withLock { $0 = .some(found) }
        if found == nil { logger.info("this store keeps no changelog (it holds state from before changelogs); nothing is published") }
        return found
    }
}
