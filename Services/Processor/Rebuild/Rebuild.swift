import Contracts
import Foundation
import Handlers
import Kafka
import Logging
import Projections
import ProjectionStores
import Synchronization
import WireCodec

/// `pushline-processor rebuild`: builds the projections anew from the command topics, from offset
/// 0, into a new store (docs/ARCHITECTURE.md#replay-and-rebuild), and switches over to it without
/// sending anything twice.
///
/// Every command topic is replayed up to its target offsets, in the event order the live
/// processors apply (`EventOrder`), through the same applier: each command is decided against
/// exactly the commands before it in that order, as it was live, so the new store is the live
/// one (docs/ARCHITECTURE.md#state-is-a-function-of-the-log).
///
/// Nothing leaves a rebuild: outbound records are not published again (the devices got them
/// the first time), and outbox jobs are written as `replayed`, which no dispatcher sends.
///
/// With a previous store (`previous`), the targets are that store's offsets, so the new store
/// never gets ahead of the one serving: step 1 runs while the stack serves from the previous
/// store and can be repeated (it resumes). Step 2 (`switchOver`), run once the processors on the
/// previous store are stopped, replays the last records and copies the previous store's outbox
/// (delivery progress included) into the new one; processors started on the new store then
/// carry on from exactly where the old ones stopped: every side effect happens once. Without a
/// previous store (it is lost), the targets are the topics' end offsets and the new store must
/// be empty.
public enum Rebuild {
    /// What a rebuild reads.
    public enum Source: String, Sendable, CaseIterable {
        /// The changelog topic: every commit's mutations, written again as they are
        /// (`ChangelogRestore`). Fast, and exactly what the live processors decided.
        case changelog
        /// The command topics, decided again by the handlers: for a store that keeps no
        /// changelog, or to apply changed handlers to the whole log.
        case commands
    }

    public struct Options: Sendable {
        /// Where the state comes from.
        public var source: Source
        /// The store the stack serves from now (PUSHLINE_STORE syntax), if there is one.
        public var previous: String?
        /// Step 2: the processors on `previous` are stopped; finish and carry its outbox over.
        public var switchOver = false
        /// Several rebuilds into the same store run together, every one with `join`: they take
        /// turns through one consumer group (the one holding its lease applies, the others stand
        /// by and carry on if it stops), and a store that holds offsets already is joined rather
        /// than refused. Without it, the rebuild joins no group.
        public var join = false
        /// How often progress is written to standard error; nil writes none.
        public var progressInterval: Duration? = .seconds(1)
        /// Records applied in one store transaction at most. Larger than a live processor's
        /// batches (PUSHLINE_MAX_BATCH): nobody waits for a single command here, and fewer,
        /// bigger transactions load and write the same rows for less.
        public var batchSize: Int

        public static let defaultBatchSize = 20_000

        public init(source: Source = .commands, previous: String? = nil, switchOver: Bool = false, join: Bool = false,
                    progressInterval: Duration? = .seconds(1), batchSize: Int = defaultBatchSize) {
            self.source = source
            self.previous = previous
            self.switchOver = switchOver
            self.join = join
            self.progressInterval = progressInterval
            self.batchSize = batchSize
        }
    }

    public struct Summary: Sendable, Equatable {
        /// Records applied per topic by this run.
        public var records: [String: Int] = [:]
        /// Outbound records the replay rendered and did not publish.
        public var outboundNotRepublished = 0
        /// Outbox jobs copied from the previous store (switch-over only).
        public var outboxCarried = 0
        /// Records read but not applied: without a previous store, the last records of the log
        /// may still wait for progress marks, which only live processors write; they apply them.
        public var waiting = 0
        /// From the changelog: the entries written and where the new store's changelog stands.
        public var changelogEntries = 0
        public var changelogPosition: ChangelogPosition?
    }

    public enum Failure: Error, CustomStringConvertible {
        case storeNotEmpty(String)
        case consumerStopped(String)
        case aheadOfPrevious([PartitionKey])
        case switchNeedsPrevious
        case previousMoved([PartitionKey])
        case joinNeedsCommands

        public var description: String {
            switch self {
            case .storeNotEmpty(let store):
                "the store \(store) already holds consumed offsets; rebuild into a new, empty store (PUSHLINE_STORE), or name the serving store with --previous to resume"
            case .consumerStopped(let topic): "the consumer of \(topic) stopped before reaching its target offsets"
            case .aheadOfPrevious(let partitions):
                "the new store is ahead of the previous one on \(partitions.map(\.description).joined(separator: ", ")); it was not built from this previous store"
            case .switchNeedsPrevious: "--switch needs the serving store (--previous) to carry its outbox over"
            case .joinNeedsCommands: "--join takes turns replaying the command topics: use it with --from commands"
            case .previousMoved(let partitions):
                "the previous store moved on \(partitions.map(\.description).joined(separator: ", ")) during the switch: stop every processor that uses it, then run the switch again"
            }
        }
    }

    public static func run(configuration: ProcessorConfiguration, options: Options = Options(),
                           verifier: any DeviceTokenVerifier = DecisionRules.defaultVerifier, logger: Logger) async throws -> Summary {
        if options.switchOver && options.previous == nil { throw Failure.switchNeedsPrevious }
        if options.join && options.source != .commands { throw Failure.joinNeedsCommands }
        // A topic nobody wrote yet is created (empty), as `serve` does, rather than waited for.
        try await configuration.shared.createMissingTopics()
        let store = try await ProjectionStoreFactory.open(configuration.shared.store, logger: logger)
        var previous: (any ProjectionStore)?
        var producer: KafkaProducer?
        do {
            if let location = options.previous { previous = try await ProjectionStoreFactory.open(location, logger: logger) }
            // The new store's own commits (every replayed batch, the carried outbox) go to the changelog too.
            let made = try KafkaProducer(configuration: configuration.shared.producerConfiguration(clientId: "pushline-rebuild"),
                                         logger: logger)
            producer = made
            let changelog = ChangelogPublisher(store: store, producer: made, topic: configuration.shared.topics.changelog, logger: logger)
            let summary = try await changelog.publishing { [previous] in
                try await rebuild(into: store, previous: previous, configuration: configuration, options: options,
                                  verifier: verifier, logger: logger)
            }
            await producer?.shutdown()
            await store.close()
            await previous?.close()
            return summary
        } catch {
            await producer?.shutdown()
            await store.close()
            await previous?.close()
            throw error
        }
    }

    private static func rebuild(into store: any ProjectionStore, previous: (any ProjectionStore)?, configuration: ProcessorConfiguration,
                                options: Options, verifier: any DeviceTokenVerifier, logger: Logger) async throws -> Summary {
        let topics = configuration.shared.topics.commandTopics
        if options.source == .changelog {
            let target = try await previous?.offsets(topics: topics)
            let restored = try await ChangelogRestore.run(into: store, previous: previous, configuration: configuration,
                                                          storeName: configuration.shared.storeForLogs,
                                                          progressInterval: options.progressInterval, logger: logger)
            var summary = Summary()
            summary.changelogEntries = restored.entries
            summary.changelogPosition = restored.position
            if options.switchOver, let previous, let target {
                try await switchOver(from: previous, to: store, target: target, topics: topics, summary: &summary)
            }
            return summary
        }

        let start = try await store.offsets(topics: topics)
        let target: [PartitionKey: Int64]
        if let previous {
            target = try await previous.offsets(topics: topics)
        } else {
            guard start.isEmpty || options.join else { throw Failure.storeNotEmpty(configuration.shared.storeForLogs) }
            let ends = try await KafkaAdmin.endOffsets(topics: topics, bootstrapServers: configuration.shared.brokers,
                                                       properties: configuration.shared.kafkaProperties)
            target = Dictionary(uniqueKeysWithValues: ends.map { (PartitionKey($0.key), $0.value) })
        }
        let ahead = start.filter { $0.value > target[$0.key] ?? 0 }.map(\.key)
        guard ahead.isEmpty else { throw Failure.aheadOfPrevious(ahead.sorted { $0.description < $1.description }) }

        let progress = RebuildProgress(start: start, target: target)
        let outbound = DiscardedOutbound()
        var summary = Summary()
        for (key, limit) in target where limit > start[key] ?? 0 {
            summary.records[key.topic, default: 0] += Int(limit - (start[key] ?? 0))
        }
        summary.waiting = try await withThrowingTaskGroup(of: Int.self) { group in
            if let interval = options.progressInterval {
                group.addTask {
                    try await progress.report(every: interval)
                    return 0
                }
            }
            group.addTask {
                try await replay(target: target, start: start, closesAtLimits: previous != nil, options: options, store: store,
                                 outbound: outbound, progress: progress, configuration: configuration, verifier: verifier,
                                 logger: logger)
            }
            let waiting = try await group.next() ?? 0
            group.cancelAll()
            return waiting
        }
        if options.progressInterval != nil { progress.printLine(final: true) }
        summary.outboundNotRepublished = outbound.count

        if options.switchOver, let previous {
            try await switchOver(from: previous, to: store, target: target, topics: topics, summary: &summary)
        }
        return summary
    }

    /// Records the store's offsets in `progress` every 100 ms until cancelled (nil), or until the
    /// store holds `target` (0). Cancellation ends it wherever it finds it, in a read of the store
    /// too: a read cancelled as the consumer finished used to fail the whole rebuild.
    static func followOffsets(_ offsets: @Sendable () async throws -> [PartitionKey: Int64], until target: [PartitionKey: Int64]?,
                              progress: RebuildProgress) async throws -> Int? {
        while !Task.isCancelled {
            let stored: [PartitionKey: Int64]
            do {
                stored = try await offsets()
            } catch where Task.isCancelled {
                return nil
            }
            progress.record(stored)
            if let target, target.allSatisfy({ (stored[$0.key] ?? 0) >= $0.value }) { return 0 }
            try? await Task.sleep(for: .milliseconds(100))
        }
        return nil
    }

    /// Carries the previous store's outbox over, then checks that the previous store stood still.
    private static func switchOver(from previous: any ProjectionStore, to store: any BatchStore, target: [PartitionKey: Int64],
                                   topics: [String], summary: inout Summary) async throws {
        summary.outboxCarried = try await carryOutbox(from: previous, to: store)
        let now = try await previous.offsets(topics: topics)
        let moved = now.filter { target[$0.key] != $0.value }.map(\.key)
        guard moved.isEmpty else { throw Failure.previousMoved(moved.sorted { $0.description < $1.description }) }
    }

    /// Applies every command topic, in event order, from the new store's offsets up to `target`,
    /// and stops when nothing more can be applied; with `join`, rebuilds into the same store take
    /// turns through one consumer group per store (the one holding its lease applies), until the
    /// store holds the targets. Returns the records left waiting for progress marks
    /// (see `ReplayConsumer`).
    private static func replay(target: [PartitionKey: Int64], start: [PartitionKey: Int64], closesAtLimits: Bool, options: Options,
                               store: any BatchStore, outbound: DiscardedOutbound, progress: RebuildProgress,
                               configuration: ProcessorConfiguration, verifier: any DeviceTokenVerifier, logger: Logger) async throws -> Int {
        // A group per store: nothing is shared with live processors, and rebuilds into the same
        // store (`join`) take turns. (A lone rebuild joins no group, and so skips the wait for one
        // to form: seconds against Tansu.)
        let group = "\(configuration.groupId).rebuild.\(storeTag(configuration.shared.store))"
        var consumerConfiguration = configuration.consumerConfiguration(groupId: group)
        consumerConfiguration.maxBatchSize = options.batchSize
        let topics = configuration.shared.topics.commandTopics
        let consumer = ReplayConsumer(configuration: consumerConfiguration, topics: topics,
                                      store: store, outbound: outbound, verifier: verifier, logger: logger,
                                      limits: target, partitions: Array(target.keys),
                                      leaseTopic: options.join ? configuration.shared.topics.processorLease : nil,
                                      closesAtLimits: closesAtLimits, rules: configuration.decisionRules)
        let clock = ContinuousClock()
        let began = clock.now
        logger.info("replaying the command topics", metadata: ["topics": "\(topics)"])
        let waiting = try await withThrowingTaskGroup(of: Int?.self) { tasks in
            tasks.addTask {
                let waiting = try await consumer.run()
                return options.join ? nil : waiting
            }
            tasks.addTask {
                // Stopped by cancellation once a lone rebuild's consumer is done.
                try await followOffsets({ try await store.offsets(topics: topics) }, until: options.join ? target : nil, progress: progress)
            }
            let ended = try await tasks.next() ?? nil
            tasks.cancelAll()
            while try await tasks.next() != nil {}
            guard let ended else { throw Failure.consumerStopped(topics.joined(separator: ", ")) }
            progress.record(try await store.offsets(topics: topics))
            return ended
        }
        logger.info("command topics replayed", metadata: ["seconds": "\(Double((clock.now - began).inMilliseconds) / 1000)",
                                                        "records_waiting": "\(waiting)"])
        return waiting
    }

    /// A short stable name for a store location (its password stays out of group names).
    static func storeTag(_ location: String) -> String {
        String(FNV1a.hash(location), radix: 16)
    }

    /// Copies every outbox job of `previous` into `store`, page by page, state and attempts
    /// included: what was delivered stays delivered, what is pending is sent by the new
    /// processors, once.
    private static func carryOutbox(from previous: any OutboxStore, to store: any BatchStore) async throws -> Int {
        var after: String?
        var carried = 0
        while true {
            let jobs = try await previous.outboxJobs(after: after, limit: 1_000)
            guard let last = jobs.last else { return carried }
            try await store.commit(mutations: jobs.map(Mutation.restoreOutbox), offsets: [])
            carried += jobs.count
            after = last.id
        }
    }
}

/// Records done against records to do for the whole rebuild, written to standard error as
/// `rebuild: 412,000/1,000,000 records (41.2%), 38,512 records/s, ETA 16s`.
final class RebuildProgress: Sendable {
    private let start: [PartitionKey: Int64]
    private let total: Int64
    private let began = ContinuousClock.now
    /// The latest stored offsets seen.
    private let stored = Mutex<[PartitionKey: Int64]>([:])
    private let overwrite = isatty(FileHandle.standardError.fileDescriptor) == 1

    /// What is counted, for the progress line.
    private let unit: String

    init(start: [PartitionKey: Int64], target: [PartitionKey: Int64], unit: String = "records") {
        self.start = start
        self.unit = unit
        self.total = target.reduce(0) { $0 + max(0, $1.value - (start[$1.key] ?? 0)) }
    }

    func record(_ offsets: [PartitionKey: Int64]) { stored.withLock { $0.merge(offsets) { max($0, $1) } } }

    /// Records applied since the start (by this run and any it shares the store with).
    var done: Int64 {
        stored.withLock { $0 }.reduce(0) { $0 + max(0, $1.value - (start[$1.key] ?? 0)) }
    }

    func report(every interval: Duration) async throws {
        while true {
            try await Task.sleep(for: interval)
            printLine(final: false)
        }
    }

    func printLine(final: Bool) {
        let done = self.done
        let seconds = max(0.001, Double((ContinuousClock.now - began).inMilliseconds) / 1000)
        let rate = Double(done) / seconds
        var line = "rebuild: \(ProgressText.grouped(done))/\(ProgressText.grouped(total)) \(unit)"
        if total > 0 { line += String(format: " (%.1f%%)", Double(done) * 100 / Double(total)) }
        line += ", \(ProgressText.grouped(Int64(rate))) \(unit)/s"
        if final {
            line += String(format: ", done in %.1fs", seconds)
        } else if rate > 0 {
            line += ", ETA \(ProgressText.duration(Double(total - done) / rate))"
        }
        let text = overwrite ? "\r\(line)\u{1B}[K" + (final ? "\n" : "") : line + "\n"
        FileHandle.standardError.write(Data(text.utf8))
    }
}

/// The outbound side of a replay: the records were published when their commands were first
/// applied, so they are counted and dropped.
final class DiscardedOutbound: OutboundPublisher {
    private let total = Mutex(0)
    var count: Int { total.withLock { $0 } }
    func publish(_ messages: [OutboundMessage]) async throws { total.withLock { $0 += messages.count } }
}
