import Contracts
import Foundation
import ProjectionChangelog
import Projections
import Logging
import PostgresNIO
import Synchronization

/// The projection store in PostgreSQL (`postgres://…`): the store of a deployment with several
/// processor and ingest processes, on several machines.
///
/// It behaves as `SQLiteProjectionStore` does for every method and mutation, and its dump is
/// the same text for the same content. A commit is one READ COMMITTED transaction: the
/// partitions' offset rows are locked and compared first (`PostgresOffsets`), then the
/// mutations are written grouped into multi-row statements (`WritePlan`,
/// `PostgresMutationWriter`). Multi-statement reads (`load`, `dump`) run in one REPEATABLE READ
/// transaction each, so they see one snapshot.
///
/// The store holds its own few connections (`PostgresConnectionPool`). While the server is
/// unreachable every call fails at once with `ProjectionStoreError.unavailable`; once it is
/// back, the next call connects anew. A connection found dead on its first use (the server
/// restarted while it sat idle) is replaced once, transparently, unless the failure came
/// during COMMIT, whose outcome is then unknown (`.unavailable`: a retried commit finds its
/// offsets moved and conflicts if the first one did commit).
public final class PostgresProjectionStore: ProjectionStore, ReadRunner {
    public let location: PostgresLocation
    private let pool: PostgresConnectionPool
    private let logger: Logger
    /// Whether commits write their changelog entry (`PostgresChangelog`), read once when opened.
    private let keepsChangelog = Mutex(false)

    /// Connects, then creates or migrates the schema. Throws `unsupportedSchemaVersion` for a
    /// store written by newer code, `.unavailable` when the server cannot be reached.
    public init(location: PostgresLocation, logger: Logger) async throws {
        self.location = location
        self.logger = logger
        var configuration = PostgresConnection.Configuration(
            host: location.host, port: location.port, username: location.user, password: location.password,
            database: location.database, tls: try Self.tls(location.tls))
        configuration.options.connectTimeout = .seconds(5)
        configuration.options.additionalStartupParameters = [("application_name", "pushline")]
        if let schema = location.schema {
            configuration.options.additionalStartupParameters.append(("search_path", "\"\(schema)\""))
        }
        pool = PostgresConnectionPool(configuration: configuration, size: location.poolSize, logger: logger)
        let keeps = try await session("BEGIN") { connection in
            try await PostgresSchema.prepare(connection, schema: location.schema, logger: logger)
            return try await PostgresChangelog.position(on: connection, logger: logger) != nil
        }
        keepsChangelog.withLock { $0 = keeps }
        logger.debug("projection store opened", metadata: [
            "host": "\(location.host):\(location.port)", "database": "\(location.database)", "schema": "\(location.schema ?? "-")",
        ])
    }

    public func close() async {
        await pool.close()
    }

    private static func tls(_ mode: PostgresLocation.TLSMode) throws -> PostgresConnection.Configuration.TLS {
        switch mode {
        case .disable: return .disable
        case .prefer: return .prefer(try NIOSSLContext(configuration: .makeClientConfiguration()))
        case .require: return .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
        }
    }

    public func load(_ query: StateQuery) async throws -> StateSnapshot {
        try await session(Self.snapshot) { connection in
            try await connection.load(query, logger: self.logger)
        }
    }

    public func commit(mutations: [Mutation], offsets: [OffsetUpdate]) async throws {
        let plan = WritePlan.inKeyOrder(mutations)
        let shareGroups = try CallbackShare.groups(enqueuedBy: mutations)
        let entry = keepsChangelog.withLock { $0 } ? ChangelogEntry(mutations: mutations, offsets: offsets).encoded() : nil
        try await session("BEGIN") { connection in
            try await PostgresOffsets.move(offsets, on: connection, logger: self.logger)
            let writer = PostgresMutationWriter(connection: connection, logger: self.logger)
            try await writer.write(plan)
            // A delivery's last callback share merges its shares (docs/ARCHITECTURE.md#one-app-in-parts).
            // The delivery's lock, taken after this commit's own share is written and held to its
            // end, orders the commits of one delivery's shares: whichever takes it last reads
            // every other share (READ COMMITTED reads what committed before each statement).
            var merged: [Mutation] = []
            for ids in shareGroups {
                try await PostgresOutbox.lockShares(ids[0], on: connection, logger: self.logger)
                merged += try CallbackShare.merge(try await PostgresOutbox.jobs(ids, on: connection, logger: self.logger))
            }
            if !merged.isEmpty { try await writer.write(WritePlan.inKeyOrder(merged)) }
            if let entry {
                // A merge is part of the commit's entry (encoded again, in the rare commit that merges).
                try await PostgresChangelog.append(merged.isEmpty ? entry : ChangelogEntry(mutations: mutations + merged, offsets: offsets).encoded(),
                                                   on: connection, logger: self.logger)
            }
        }
    }

    // MARK: - Changelog

    public func changelogPosition() async throws -> ChangelogPosition? {
        try await session(nil) { connection in try await PostgresChangelog.position(on: connection, logger: self.logger) }
    }

    public func unpublishedChangelog(after seq: Int64, limit: Int) async throws -> [ChangelogOutboxRow] {
        try await session(nil) { connection in
            try await PostgresChangelog.unpublished(after: seq, limit: limit, on: connection, logger: self.logger)
        }
    }

    public func changelogPublished(through seq: Int64) async throws {
        try await session(nil) { connection in try await PostgresChangelog.published(through: seq, on: connection, logger: self.logger) }
    }

    public func beginRestore() async throws {
        try await session("BEGIN") { connection in
            try await PostgresChangelog.setIndexesAside(on: connection, logger: self.logger)
            try await connection.run(PostgresQuery(unsafeSQL: "TRUNCATE \((RestoredTables.names + RestoredTables.derived).joined(separator: ", "))"), logger: self.logger)
        }
    }

    public func restore(_ entries: [ChangelogEntry], offsets: [OffsetUpdate], lineage: String, through seq: Int64) async throws {
        let plans = entries.map { WritePlan.inKeyOrder($0.mutations) }
        let writes = entries.contains { !$0.mutations.isEmpty }
        try await session("BEGIN") { connection in
            // Durability is the restore's to give at its end: a restore that stops is run again.
            try await connection.run("SET LOCAL synchronous_commit = off", logger: self.logger)
            if writes {
                // Upserts need the primary keys that a restore into an empty store set aside:
                // mutations come here only for a group too large for a chunk of final rows.
                for index in try await PostgresChangelog.indexesSetAside(on: connection, logger: self.logger)
                where PostgresChangelog.restoredKeys[index.name] != nil {
                    try await PostgresChangelog.build(index, on: connection, logger: self.logger)
                }
            }
            try await PostgresOffsets.move(offsets, on: connection, logger: self.logger)
            let writer = PostgresMutationWriter(connection: connection, logger: self.logger)
            for plan in plans { try await writer.write(plan) }
            try await PostgresChangelog.setPosition(ChangelogPosition(lineage: lineage, seq: seq), on: connection, logger: self.logger)
        }
    }

    /// `COPY` on `restoreSessions` connections at once, each a transaction writing its part of
    /// every table (`PostgresRestoreLoader`). A part that fails fails the restore, which is run
    /// again from the start (`beginRestore` empties what the other parts wrote).
    public func restore(rows: RestoredRows) async throws {
        let parts = min(Self.restoreSessions, location.poolSize)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for part in 0..<parts {
                group.addTask {
                    try await self.session("BEGIN") { connection in
                        try await connection.run("SET LOCAL synchronous_commit = off", logger: self.logger)
                        try await PostgresRestoreLoader(connection: connection, logger: self.logger).load(rows, part: part, of: parts)
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    /// Two: the server parses and inserts each connection's rows on one core, and the machines
    /// this was measured on have two (docs/ARCHITECTURE.md#changelog-and-restore); a third gained
    /// nothing there.
    static let restoreSessions = 2

    /// The indexes and keys set aside are built, and then every table analyzed, on
    /// `restoreSessions` connections at once, each taking the next step from one list when it
    /// is done with one (a connection done with the builds analyzes while the other still builds).
    public func finishRestore() async throws {
        let steps = try await session(nil) { connection in
            try await PostgresChangelog.finishSteps(on: connection, logger: self.logger)
        }
        try await sideBySide(steps) { step, connection in try await step.run(on: connection, logger: self.logger) }
        try await session("BEGIN") { connection in
            try await connection.run(PostgresQuery(unsafeSQL: RestoreCounts.countedUsers), logger: self.logger)
        }
    }

    /// Runs `work` for each item, in a transaction of its own, on up to `restoreSessions`
    /// connections at once, each taking the next item when it is done with one.
    private func sideBySide<Item: Sendable>(_ items: [Item],
                                            _ work: @escaping @Sendable (Item, PostgresConnection) async throws -> Void) async throws {
        let next = SharedQueue(items)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<min(Self.restoreSessions, location.poolSize, items.count) {
                group.addTask {
                    while let item = next.pop() {
                        try await self.session("BEGIN") { connection in try await work(item, connection) }
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    public func claimOutboxJobs(now: Date, limit: Int, leaseUntil: Date, slots: OutboxSlots) async throws -> [OutboxJob] {
        try await session("BEGIN") { connection in
            try await PostgresOutbox.claim(now: now, limit: limit, leaseUntil: leaseUntil, slots: slots, on: connection, logger: self.logger)
        }
    }

    public func recordOutboxAttempt(jobId: String, lease: Date?, result: OutboxAttemptResult) async throws -> Bool {
        try await session("BEGIN") { connection in
            try await PostgresOutbox.record(jobId: jobId, lease: lease, result: result, on: connection, logger: self.logger)
        }
    }

    public func createdAt() async throws -> Date {
        try await session(nil) { connection in try await PostgresDeadLetters.createdAt(on: connection, logger: self.logger) }
    }

    public func deadLetters(after: DeadLetterKey?, limit: Int) async throws -> [DeadLetterRow] {
        try await session(nil) { connection in
            try await PostgresDeadLetters.list(after: after, limit: limit, on: connection, logger: self.logger)
        }
    }

    public func deadLetter(_ key: DeadLetterKey) async throws -> DeadLetterRow? {
        try await session(nil) { connection in try await PostgresDeadLetters.one(key, on: connection, logger: self.logger) }
    }

    public func dump() async throws -> String {
        try await session(Self.snapshot) { connection in try await PostgresDump.dump(on: connection, logger: self.logger) }
    }

    // MARK: - Connections, transactions and error mapping

    private static let snapshot: PostgresQuery = "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY"

    /// Runs `work`; if it outlives `sessionTimeout` (a server or network that stopped
    /// answering), closes `connection` and throws `SessionTimedOut` at once.
    ///
    /// The caller stops waiting for `work` when the time is up (`awaitingAtMost`): closing the
    /// connection does not always end it. A connection kept idle in the pool while the server
    /// restarted, and leased before PostgresNIO had noticed, was seen to leave its next
    /// statement waiting forever, even after the connection was closed.
    private func closingIfHung<T: Sendable>(_ connection: PostgresConnection,
                                            _ work: @escaping @Sendable () async throws -> T) async throws -> T {
        let logger = self.logger
        return try await awaitingAtMost(Self.sessionTimeout, expired: {
            logger.warning("closing a projection store connection that stopped answering",
                           metadata: ["seconds": "\(Self.sessionTimeout.components.seconds)"])
            PostgresConnectionPool.close(connection)
            return SessionTimedOut()
        }, work)
    }

    /// A session outlived `sessionTimeout`; its connection is closed.
    private struct SessionTimedOut: Error, CustomStringConvertible {
        var description: String { "no answer within \(PostgresProjectionStore.sessionTimeout.components.seconds) s" }
    }

    /// Far above any batch's work (a 100,000-device load takes seconds), so that it only ends
    /// sessions that hang.
    static let sessionTimeout: Duration = .seconds(120)

    /// Every read but `load`: one statement on a connection of its own (`ReadRunner`).
    public func rows<Row: ReadRow>(_ read: StoreRead<Row>) async throws -> [Row] {
        try await session(nil) { connection in try await connection.rows(read, logger: self.logger) }
    }

    /// Runs `body` on a leased connection, inside a transaction opened by `begin` (and then
    /// committed) unless it is nil. Any failure is rolled back and mapped to a
    /// `ProjectionStoreError`; a connection that might be left in a bad state is closed.
    private func session<T: Sendable>(_ begin: PostgresQuery?,
                                      _ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        var replacedStaleConnection = false
        while true {
            let lease: (connection: PostgresConnection, reused: Bool)
            do {
                lease = try await pool.lease()
            } catch {
                throw PostgresErrors.storeError(error)
            }
            let connection = lease.connection
            let committing = CommitSent()
            do {
                let value = try await closingIfHung(connection) {
                    if let begin { try await connection.run(begin, logger: self.logger) }
                    let value = try await body(connection)
                    if begin != nil {
                        committing.mark()
                        try await connection.run("COMMIT", logger: self.logger)
                    }
                    return value
                }
                await pool.release(connection, reusable: true)
                return value
            } catch {
                let lost = error is SessionTimedOut || PostgresErrors.isConnectionLost(error) || connection.isClosed
                var reusable = !lost
                if begin != nil && !lost {
                    // Ends the transaction whatever state it is in (after a failed COMMIT there is none).
                    do {
                        try await closingIfHung(connection) { try await connection.run("ROLLBACK", logger: self.logger) }
                    } catch {
                        reusable = false
                    }
                }
                await pool.release(connection, reusable: reusable)
                // Nothing was committed: the server ends a transaction whose connection is gone.
                // Not after a timeout: two minutes without an answer is an outage the caller must see.
                if lost && lease.reused && !committing.isMarked && !replacedStaleConnection && !(error is SessionTimedOut) {
                    logger.debug("replacing a lost projection store connection", metadata: ["error": "\(error)"])
                    replacedStaleConnection = true
                    continue
                }
                if error is SessionTimedOut {
                    // Whether a COMMIT sent before the time was up landed is unknown, as after any lost connection.
                    throw ProjectionStoreError.unavailable("projection store session: \(error)")
                }
                throw PostgresErrors.storeError(error)
            }
        }
    }
}

/// Items that several tasks take one at a time, in order.
private final class SharedQueue<Item: Sendable>: Sendable {
    private let items: Mutex<ArraySlice<Item>>

    init(_ items: [Item]) { self.items = Mutex(items[...]) }

    func pop() -> Item? { items.withLock { $0.popFirst() } }
}

/// Whether a session sent its COMMIT: set by the session's work, read by the session.
private final class CommitSent: Sendable {
    private let sent = Atomic<Bool>(false)

    func mark() { sent.store(true, ordering: .releasing) }

    var isMarked: Bool { sent.load(ordering: .acquiring) }
}
