import Foundation
import Kafka
import Logging
import Projections
import ProjectionChangelog

/// The rebuild's default source: restores a store from the changelog topic
/// (docs/ARCHITECTURE.md#changelog-and-restore), writing the entries that another store of the
/// same lineage committed, in number order, without reading a row or deciding anything again.
///
/// The lineage is the previous store's when there is one (the restore then goes exactly as far
/// as that store: the entries still in its outbox are read from it), else that of the newest
/// record in the topic, restored to the topic's end. An entry seen twice is skipped; a missing
/// number, or an entry whose offsets do not continue the ones before it, stops the restore.
/// Entries are written in large transactions; an empty store is loaded in the order of its rows
/// (`ChangelogSorter`), without its secondary indexes (built once at the end) and without waiting
/// for durability before the end.
enum ChangelogRestore {
    enum Failure: Error, CustomStringConvertible {
        case noChangelog(String)
        case emptyChangelog(String)
        case otherLineage(store: String, found: String, wanted: String)
        case gap(expected: Int64, found: Int64)
        case brokenChain(seq: Int64, partition: PartitionKey, stored: Int64?, expected: Int64?)
        case incomplete(reached: Int64, target: Int64)
        case undecodable(seq: Int64, String)

        var description: String {
            switch self {
            case .noChangelog(let store):
                "the store \(store) keeps no changelog (it holds state from before changelogs); rebuild with --from commands"
            case .emptyChangelog(let topic):
                "the changelog topic \(topic) holds no entries; rebuild with --from commands"
            case .otherLineage(let store, let found, let wanted):
                "the store \(store) already holds consumed offsets of lineage \(found), not \(wanted); restore into a new, empty store (PUSHLINE_STORE)"
            case .gap(let expected, let found):
                "the changelog skips from entry \(expected - 1) to \(found): it is incomplete; rebuild with --from commands"
            case .brokenChain(let seq, let partition, let stored, let expected):
                "changelog entry \(seq) moves \(partition) from \(expected.map(String.init) ?? "nothing"), but the entries before it left it at \(stored.map(String.init) ?? "nothing"): two stores published this lineage; rebuild with --from commands"
            case .incomplete(let reached, let target):
                "the changelog ends at entry \(reached), but the previous store is at \(target); let its processors publish, then run again"
            case .undecodable(let seq, let error): "changelog entry \(seq) cannot be read: \(error)"
            }
        }
    }

    struct Outcome {
        var position: ChangelogPosition
        /// Entries this run wrote.
        var entries = 0
    }

    /// Restores into `store`; `previous` (optional) names the lineage and the target.
    static func run(into store: any ProjectionStore, previous: (any ProjectionStore)?, configuration: ProcessorConfiguration,
                    storeName: String, progressInterval: Duration?, logger: Logger) async throws -> Outcome {
        let topic = configuration.shared.topics.changelog
        let partition = TopicPartition(topic: topic, partition: 0)
        let ends = try await KafkaAdmin.endOffsets(topics: [topic], bootstrapServers: configuration.shared.brokers,
                                                   properties: configuration.shared.kafkaProperties)
        let end = ends[partition] ?? 0

        let lineage: String
        var target: Int64?
        if let previous {
            guard let position = try await previous.changelogPosition() else { throw Failure.noChangelog("--previous") }
            lineage = position.lineage
            target = position.seq
        } else {
            guard end > 0, let newest = try await newestLineage(partition, end: end, configuration: configuration, logger: logger) else {
                throw Failure.emptyChangelog(topic)
            }
            lineage = newest
        }

        let topics = configuration.shared.topics.commandTopics
        let offsets = try await store.offsets(topics: topics)
        let own = try await store.changelogPosition()
        let fresh = offsets.isEmpty && (own?.seq ?? 0) == 0
        var applied: Int64 = 0
        if !fresh {
            // Only a restore that follows a serving store resumes; without one, the new store must be empty.
            guard previous != nil else { throw Rebuild.Failure.storeNotEmpty(storeName) }
            guard let own, own.lineage == lineage else {
                throw Failure.otherLineage(store: storeName, found: own?.lineage ?? "none", wanted: lineage)
            }
            applied = own.seq
        }
        var outcome = Outcome(position: ChangelogPosition(lineage: lineage, seq: applied))
        // A store already at the target reads nothing, but still gets indexes a stopped run set aside.
        let reached = target.map { applied >= $0 } ?? false

        let changelogPartition = PartitionKey(topic: topic, partition: 0)
        let shown = RebuildProgress(start: [:], target: [changelogPartition: end], unit: "changelog records")
        let reporter = progressInterval.map { interval in Task { try await shown.report(every: interval) } }
        defer { reporter?.cancel() }
        // Into an empty store, the mutations are written in the order of their rows, all at the end.
        // The rows of app parts held beside a loop are offsets too, and the entries move them alike.
        var chained = offsets
        for held in try await store.heldLanes(topics: topics) { chained[held.held.key(on: held.lane)] = held.next }
        var writer = RestoreWriter(store: store, lineage: lineage, offsets: chained, applied: applied,
                                   sorter: fresh ? ChangelogSorter() : nil)
        if fresh { try await store.beginRestore() }
        logger.info("restoring from the changelog", metadata: [
            "topic": "\(topic)", "lineage": "\(lineage)", "from_entry": "\(applied + 1)",
            "to_entry": "\(target.map(String.init) ?? "the end")", "records": "\(end)",
        ])

        let began = ContinuousClock.now
        var decodeTime = Duration.zero
        if end > 0 && !reached {
            var consumerConfiguration = configuration.consumerConfiguration(groupId: "\(configuration.groupId).restore")
            consumerConfiguration.maxBatchSize = 10_000
            let consumer = try KafkaConsumer(configuration: consumerConfiguration, partitions: [partition],
                                             startingAt: [partition: 0], logger: logger)
            // An entry is decoded while the one before it goes to the writer (and its sorter).
            var decoding: (seq: Int64, task: Task<(ChangelogEntry, Duration), any Error>)?
            func addDecoded() async throws {
                guard let (seq, task) = decoding else { return }
                decoding = nil
                let (entry, took): (ChangelogEntry, Duration)
                do {
                    (entry, took) = try await task.value
                } catch {
                    throw Failure.undecodable(seq: seq, "\(error)")
                }
                decodeTime += took
                try await writer.add(entry, seq: seq)
            }
            do {
                var assembling: (seq: Int64, parts: [ArraySlice<UInt8>])?
                // The last entry assembled: the writer's lags behind it by the one being decoded.
                var assembled = writer.applied
                reading: for try await batch in consumer.batches() {
                    for message in batch {
                        guard message.offset < end else { break reading }
                        if message.key == lineage, let record = ChangelogRecord(value: message.value) {
                            if let (seq, payload) = try assemble(record, applied: assembled, into: &assembling) {
                                guard seq <= target ?? .max else { break reading }
                                assembled = seq
                                let task = Task {
                                    let start = ContinuousClock.now
                                    let entry = try ChangelogEntry(decoding: payload)
                                    return (entry, ContinuousClock.now - start)
                                }
                                try await addDecoded()
                                decoding = (seq, task)
                            }
                        }
                        shown.record([changelogPartition: message.offset + 1])
                        if message.offset + 1 >= end || (target.map { assembled >= $0 } ?? false) { break reading }
                    }
                }
                try await addDecoded()
                await consumer.close()
            } catch {
                decoding?.task.cancel()
                await consumer.close()
                throw error
            }
        }
        // The previous store's entries not published yet, read from its outbox.
        if let previous, let target {
            while writer.applied < target {
                let rows = try await previous.unpublishedChangelog(after: writer.applied, limit: 64)
                guard let first = rows.first else { break }
                guard first.seq == writer.applied + 1 else { throw Failure.gap(expected: writer.applied + 1, found: first.seq) }
                for row in rows where row.seq <= target {
                    let entry: ChangelogEntry
                    do {
                        entry = try ChangelogEntry(decoding: row.payload)
                    } catch {
                        throw Failure.undecodable(seq: row.seq, "\(error)")
                    }
                    try await writer.add(entry, seq: row.seq)
                }
            }
        }
        try await writer.flush()
        // Also when resuming: a restore that stopped left its indexes set aside in the store.
        try await writer.finish()
        reporter?.cancel()
        if progressInterval != nil { shown.printLine(final: true) }
        if let target, writer.applied < target { throw Failure.incomplete(reached: writer.applied, target: target) }
        outcome.entries = writer.written
        outcome.position = ChangelogPosition(lineage: lineage, seq: writer.applied)
        // Where the time went, for `scripts/bench-processor`.
        logger.info("changelog restored", metadata: [
            "position": "\(outcome.position)", "entries": "\(outcome.entries)",
            "total_ms": "\((ContinuousClock.now - began).inMilliseconds)", "decode_ms": "\(decodeTime.inMilliseconds)",
            "write_ms": "\(writer.writeTime.inMilliseconds)", "finish_ms": "\(writer.finishTime.inMilliseconds)",
            "mutations": "\(writer.mutations)",
        ])
        return outcome
    }

    /// Adds a record to the entry being assembled; returns the entry's number and bytes once its
    /// last part is in. Records of entries already applied, and parts that are not the next one
    /// (a second copy of an entry, published again after a crash), are skipped.
    static func assemble(_ record: ChangelogRecord, applied: Int64,
                         into assembling: inout (seq: Int64, parts: [ArraySlice<UInt8>])?) throws -> (Int64, [UInt8])? {
        guard record.seq > applied else { return nil }
        guard record.seq == applied + 1 else { throw Failure.gap(expected: applied + 1, found: record.seq) }
        if assembling?.seq != record.seq { assembling = (record.seq, []) }
        guard record.part == assembling!.parts.count else {
            // A repeat starting over: its part 0 begins the entry anew only if nothing was collected.
            return nil
        }
        assembling!.parts.append(record.bytes)
        guard assembling!.parts.count == record.parts else { return nil }
        var payload: [UInt8] = []
        payload.reserveCapacity(assembling!.parts.reduce(0) { $0 + $1.count })
        for part in assembling!.parts { payload.append(contentsOf: part) }
        assembling = nil
        return (record.seq, payload)
    }

    /// The key of the topic's newest record: the lineage of the store that published last.
    private static func newestLineage(_ partition: TopicPartition, end: Int64, configuration: ProcessorConfiguration,
                                      logger: Logger) async throws -> String? {
        let consumer = try KafkaConsumer(configuration: configuration.consumerConfiguration(groupId: "\(configuration.groupId).restore"),
                                         partitions: [partition], startingAt: [partition: end - 1], logger: logger)
        do {
            var key: String?
            for try await batch in consumer.batches() {
                guard let message = batch.first(where: { $0.offset == end - 1 }) else { continue }
                key = message.key
                break
            }
            await consumer.close()
            return key
        } catch {
            await consumer.close()
            throw error
        }
    }
}

/// Writes restored entries in transactions of about `mutationsPerTransaction` mutations,
/// checking that each entry's offsets continue where the entries before it left them. With a
/// sorter (an empty store), every mutation is written at the end in the order of its rows, and
/// the offsets and position only with the last transaction: a load that stops leaves a store
/// without them, which the next run empties and loads again.
private struct RestoreWriter {
    let store: any ProjectionStore
    let lineage: String
    /// The offsets the entries written so far (and the store before them) leave.
    private var offsets: [PartitionKey: Int64]
    /// Offsets as stored before the pending entries, and the pending entries' last offsets.
    private var storedOffsets: [PartitionKey: Int64]
    private var eventTimes: [PartitionKey: Int64] = [:]
    private var moved: Set<PartitionKey> = []
    private var pending: [ChangelogEntry] = []
    private var pendingMutations = 0
    private(set) var applied: Int64
    private(set) var written = 0
    /// Mutations written, and the time spent in the store's restore transactions (indexes
    /// built at the end included).
    private(set) var mutations = 0
    private(set) var writeTime = Duration.zero
    /// The part of `writeTime` spent building indexes and making the store durable at the end.
    private(set) var finishTime = Duration.zero
    static let mutationsPerTransaction = 50_000

    let sorter: ChangelogSorter?

    init(store: any ProjectionStore, lineage: String, offsets: [PartitionKey: Int64], applied: Int64, sorter: ChangelogSorter?) {
        self.store = store
        self.lineage = lineage
        self.offsets = offsets
        self.storedOffsets = offsets
        self.applied = applied
        self.sorter = sorter
    }

    mutating func add(_ entry: ChangelogEntry, seq: Int64) async throws {
        for update in entry.offsets {
            guard offsets[update.partition] == update.expected else {
                throw ChangelogRestore.Failure.brokenChain(seq: seq, partition: update.partition, stored: offsets[update.partition],
                                                           expected: update.expected)
            }
            offsets[update.partition] = update.deletes ? nil : update.next
            if let time = update.eventTime { eventTimes[update.partition] = time }
            moved.insert(update.partition)
        }
        mutations += entry.mutations.count
        applied = seq
        written += 1
        // Nothing a restore writes is sent: the jobs were the previous store's to send.
        if let sorter {
            for mutation in entry.mutations { try await sorter.add(mutation.replayed) }
            return
        }
        pending.append(ChangelogEntry(mutations: entry.mutations.map(\.replayed), offsets: []))
        pendingMutations += entry.mutations.count + 1
        if pendingMutations >= Self.mutationsPerTransaction { try await flush() }
    }

    /// Writes what is pending; with a sorter, everything, the offsets last.
    mutating func flush() async throws {
        if let sorter {
            guard sorter.count > 0 || !moved.isEmpty else { return }
            let start = ContinuousClock.now
            let (store, lineage) = (self.store, self.lineage)
            // The next chunk is read and decoded while the store writes the one before it.
            var writing: Task<Void, any Error>?
            do {
                try await sorter.drain(chunk: Self.mutationsPerTransaction) { chunk in
                    // Whole groups go in as their final rows, with plain inserts.
                    let rows = chunk.wholeGroups ? RestoredRows(chunk) : nil
                    try await writing?.value
                    writing = Task {
                        if let rows {
                            try await store.restore(rows: rows)
                        } else {
                            try await store.restore([ChangelogEntry(mutations: chunk.mutations, offsets: [])], offsets: [],
                                                    lineage: lineage, through: 0)
                        }
                    }
                }
                try await writing?.value
            } catch {
                _ = try? await writing?.value
                throw error
            }
            writeTime += ContinuousClock.now - start
        } else {
            guard !pending.isEmpty else { return }
        }
        // A row the entries deleted is deleted (`OffsetUpdate.deleted`), unless they also created it.
        let updates = moved.filter { offsets[$0] != nil || storedOffsets[$0] != nil }.map {
            OffsetUpdate(partition: $0, expected: storedOffsets[$0], next: offsets[$0] ?? OffsetUpdate.deleted, eventTime: eventTimes[$0])
        }
        let start = ContinuousClock.now
        try await store.restore(pending, offsets: updates, lineage: lineage, through: applied)
        writeTime += ContinuousClock.now - start
        storedOffsets = offsets
        eventTimes = [:]
        moved = []
        pending = []
        pendingMutations = 0
    }

    /// Builds the indexes `beginRestore` set aside.
    mutating func finish() async throws {
        let start = ContinuousClock.now
        try await store.finishRestore()
        finishTime = ContinuousClock.now - start
        writeTime += finishTime
    }
}
