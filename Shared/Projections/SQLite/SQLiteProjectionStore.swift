import Contracts
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import ProjectionChangelog
import Projections
import GRDB
import Logging
import Synchronization

/// The projection store in one SQLite file: the single-machine default (`sqlite:./var/…`).
///
/// A WAL-mode `DatabasePool` lets readers (ingest's status queries, the dispatcher, `load`)
/// proceed while the processor commits. `synchronous=NORMAL` is safe here: state and offsets
/// commit in one transaction, so a power loss can only lose whole recent transactions, and
/// the processor then re-reads those records from Kafka. GRDB and SQLite errors surface as
/// `ProjectionStoreError.unavailable` (busy, locked) or `.database` (everything else).
public final class SQLiteProjectionStore: ProjectionStore, ReadRunner {
    /// Internal so that tests can inspect tables that have no reading API (attempt history).
    let pool: DatabasePool
    /// Connections for `delivery`, read on the calling thread.
    private let inlineReaders: SQLiteInlineReaders
    /// The connection an audience send reads its pages of devices on (`devices(app:after:limit:having:)`):
    /// through read calls and a small page cache, not the memory map, so that a send that reads
    /// every device of a large app leaves none of the file's pages in the processor's resident
    /// memory, which then does not grow with the audience.
    private let pageReader: DatabaseQueue
    private let logger: Logger
    /// How much of the file each connection reads through a memory map.
    private static let mapBytes = 1 << 30
    /// The page cache of the connection an audience send reads its pages on.
    private static let pageReaderCacheKiB = 2_048
    /// The writer's page cache, and its size while a restore builds the indexes it set aside.
    private static let writerCacheKiB = 65_536, indexBuildCacheKiB = 16_384
    /// Whether commits write their changelog entry (`SQLiteChangelog`), read once when opened.
    private let keepsChangelog: Bool

    /// Opens (creating it and its parent directories when missing) the store at `path`, and
    /// migrates its schema. Throws `unsupportedSchemaVersion` for a store written by newer code.
    public init(path: String, logger: Logger) throws {
        self.logger = logger
        do {
            let directory = URL(fileURLWithPath: path).deletingLastPathComponent()
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            Self.keepPrivate(path)
            var configuration = Configuration()
            configuration.label = "pushline.projections"
            // Several processes (processor, ingest, tests) share the file; wait for each other's writes.
            configuration.busyMode = .timeout(10)
            configuration.prepareDatabase { db in
                // The writer reads the file through a memory map (up to 1 GiB) instead of a read
                // system call per page. A reader does not: in WAL mode SQLite unmaps a reader's
                // whole map when its next transaction finds that the file changed, which during
                // steady writes is every time, and it then faults in again each page it touches
                // (with 1,100,000 deliveries, the unmapping and the faults took 15 % of the
                // processor). Reads of many rows in order (an audience's pages) are on a
                // connection of their own (`pageReader`), which does not map the file either.
                guard !db.configuration.readonly else {
                    try db.execute(sql: "PRAGMA mmap_size = 0")
                    return
                }
                try db.execute(sql: "PRAGMA mmap_size = \(Self.mapBytes)")
                // The writer gets a larger page cache (64 MiB) and checkpoints the WAL every
                // ~32 MiB instead of every 4 MiB: a batch commit dirties pages all over the
                // indexes, and rarer, larger checkpoints write each such page fewer times.
                try db.execute(sql: """
                    PRAGMA synchronous = NORMAL;
                    PRAGMA cache_size = -\(Self.writerCacheKiB);
                    PRAGMA wal_autocheckpoint = 8000;
                    """)
            }
            // Processes opening one new file at once would race to set it to WAL (which SQLite
            // may refuse at once as locked, without waiting) and to migrate it: they take turns.
            (pool, keepsChangelog) = try Self.inTurn(directory) {
                let pool = try DatabasePool(path: path, configuration: configuration)
                try SQLiteSchema.prepare(pool, logger: logger)
                return (pool, try pool.read { db in try SQLiteChangelog.position(in: db) } != nil)
            }
            inlineReaders = SQLiteInlineReaders(path: path, configuration: configuration)
            var pages = Configuration()
            pages.label = "pushline.projections.pages"
            pages.readonly = true
            pages.busyMode = .timeout(10)
            pages.prepareDatabase { db in try db.execute(sql: "PRAGMA mmap_size = 0; PRAGMA cache_size = -\(Self.pageReaderCacheKiB)") }
            pageReader = try DatabaseQueue(path: path, configuration: pages)
        } catch {
            throw Self.storeError(error)
        }
        logger.debug("projection store opened", metadata: ["path": "\(path)"])
    }

    /// The store holds what the deployment keeps of its apps (token digests, sealed credentials,
    /// devices): only its owner may read it. A new file is created with mode 0600 before SQLite
    /// opens it (SQLite gives its `-wal` and `-shm` files the mode of the database file), and an
    /// existing one readable by others is narrowed to 0600, whatever the process's umask.
    static func keepPrivate(_ path: String) {
        let descriptor = open(path, O_RDONLY | O_CREAT, 0o600)
        guard descriptor >= 0 else { return }  // SQLite's own open reports what is wrong
        var status = stat()
        if fstat(descriptor, &status) == 0, status.st_mode & 0o077 != 0 {
            for file in [path, path + "-wal", path + "-shm"] { _ = chmod(file, 0o600) }
        }
        #if canImport(Glibc)
        _ = Glibc.close(descriptor)
        #else
        _ = Darwin.close(descriptor)
        #endif
    }

    /// Runs `body` while holding an exclusive `flock` on `directory`, which every process opening
    /// a store in it takes (waiting for the lock, not for a time); the lock goes with the call.
    private static func inTurn<T>(_ directory: URL, _ body: () throws -> T) throws -> T {
        let descriptor = open(directory.path, O_RDONLY)
        guard descriptor >= 0 else { return try body() }
        defer {
            #if canImport(Glibc)
            _ = Glibc.close(descriptor)
            #else
            _ = Darwin.close(descriptor)
            #endif
        }
        while flock(descriptor, LOCK_EX) != 0 && errno == EINTR {}
        return try body()
    }

    public func close() async {
        do {
            try pageReader.close()
            try pool.close()
        } catch {
            logger.warning("closing the SQLite store failed", metadata: ["error": "\(error)"])
        }
    }

    public func load(_ query: StateQuery) async throws -> StateSnapshot {
        guard query.userKeys.count >= Self.concurrentUsers else {
            return try await reading { db in try db.load(query) }
        }
        // A send to many users reads all their devices (100,000 rows for 1,000 users of 100):
        // the users are read in two halves on connections of their own, beside the rest of the
        // query. The reads see the same rows: only the active processor writes devices and
        // pending rows, and it commits after its load; two briefly active ones are settled by the
        // offsets' compare-and-set, as with one read (docs/ARCHITECTURE.md#scale-out).
        let rest = { var rest = query; rest.userKeys = []; return rest }()
        let users = Array(query.userKeys)
        let middle = users.count / 2
        let halves = [Set(users[..<middle]), Set(users[middle...])]
        async let first = reading { db in try db.users(halves[0], countingFor: query) }
        async let second = reading { db in try db.users(halves[1], countingFor: query) }
        var snapshot = try await reading { db in try db.load(rest) }
        let parts = try await [first, second]
        snapshot.add(devices: parts[0].devices + parts[1].devices)
        for part in parts { snapshot.pendingCounts.merge(part.pendingCounts) { current, _ in current } }
        return snapshot
    }

    /// From this many users on, a load reads them on two more connections (`load`).
    static let concurrentUsers = 512

    public func commit(mutations: [Mutation], offsets: [OffsetUpdate]) async throws {
        let plan = WritePlan(mutations)
        let shareGroups = try CallbackShare.groups(enqueuedBy: mutations)
        let entry = keepsChangelog ? ChangelogEntry(mutations: mutations, offsets: offsets).encoded() : nil
        try await writing { db in
            let conflicts = try SQLiteOffsets.conflicts(offsets, in: db)
            guard conflicts.isEmpty else { throw ProjectionStoreError.offsetConflict(conflicts) }
            let writer = SQLiteMutationWriter(db: db)
            try writer.write(plan)
            // A delivery's last callback share merges its shares: the one writer sees every
            // other commit's shares (docs/ARCHITECTURE.md#one-app-in-parts).
            var merged: [Mutation] = []
            for ids in shareGroups { merged += try CallbackShare.merge(try SQLiteOutbox.jobs(ids, in: db)) }
            if !merged.isEmpty { try writer.write(WritePlan(merged)) }
            try SQLiteOffsets.store(offsets, in: db)
            if let entry {
                // A merge is part of the commit's entry (encoded again, in the rare commit that merges).
                try SQLiteChangelog.append(merged.isEmpty ? entry : ChangelogEntry(mutations: mutations + merged, offsets: offsets).encoded(),
                                           in: db)
            }
        }
    }

    // MARK: - Changelog

    public func changelogPosition() async throws -> ChangelogPosition? {
        try await reading { db in try SQLiteChangelog.position(in: db) }
    }

    public func unpublishedChangelog(after seq: Int64, limit: Int) async throws -> [ChangelogOutboxRow] {
        try await reading { db in try SQLiteChangelog.unpublished(after: seq, limit: limit, in: db) }
    }

    public func changelogPublished(through seq: Int64) async throws {
        try await writing { db in try SQLiteChangelog.published(through: seq, in: db) }
    }

    public func beginRestore() async throws {
        try await writing { db in
            var found: [(name: String, sql: String)] = []
            for list in SQLiteInList.split(SecondaryIndexes.names) {
                found += try Row.fetchAll(db, sql: "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND name IN \(list.placeholders)",
                                          arguments: StatementArguments(list.values)).map { ($0[0], $0[1]) }
            }
            for index in found {
                try db.execute(sql: "INSERT OR REPLACE INTO restore_indexes (name, definition) VALUES (?, ?)", arguments: [index.name, index.sql])
                try db.execute(sql: "DROP INDEX \(index.name)")
            }
            for table in RestoredTables.names + RestoredTables.derived { try db.execute(sql: "DELETE FROM \(table)") }
        }
        // Nothing is durable before `finishRestore`: a restore that stops is run again from the start.
        // Pages are read into the page cache, not through the memory map: a map of the growing
        // file would make the restore's resident memory grow with the log.
        try await pool.barrierWriteWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = OFF; PRAGMA mmap_size = 0") }
    }

    public func restore(_ entries: [ChangelogEntry], offsets: [OffsetUpdate], lineage: String, through seq: Int64) async throws {
        let plans = entries.map { WritePlan($0.mutations) }
        try await writing { db in
            let conflicts = try SQLiteOffsets.conflicts(offsets, in: db)
            guard conflicts.isEmpty else { throw ProjectionStoreError.offsetConflict(conflicts) }
            let writer = SQLiteMutationWriter(db: db)
            for plan in plans { try writer.write(plan) }
            try SQLiteOffsets.store(offsets, in: db)
            try SQLiteChangelog.setPosition(ChangelogPosition(lineage: lineage, seq: seq), in: db)
        }
    }

    public func restore(rows: RestoredRows) async throws {
        try await writing { db in try SQLiteRestoreLoader(db: db).load(rows) }
    }

    public func finishRestore() async throws {
        try await writing { db in
            // SQLite sorts an index's entries in memory up to the page cache's size: 16 MiB here
            // (then it merges runs from temporary files), so that the restore's last step does
            // not take more memory the larger the restored tables are.
            try db.execute(sql: "PRAGMA cache_size = -\(Self.indexBuildCacheKiB)")
            for definition in try String.fetchAll(db, sql: "SELECT definition FROM restore_indexes ORDER BY name") {
                try db.execute(sql: definition)
            }
            try db.execute(sql: "DELETE FROM restore_indexes")
            try db.execute(sql: "PRAGMA cache_size = -\(Self.writerCacheKiB)")
            try db.execute(sql: RestoreCounts.countedUsers)
        }
        try await pool.barrierWriteWithoutTransaction { db in
            try db.checkpoint(.truncate)
            try db.execute(sql: "PRAGMA synchronous = NORMAL; PRAGMA mmap_size = \(Self.mapBytes)")
        }
    }

    /// Every read but `delivery` and `load`: in a read transaction of the pool (`ReadRunner`).
    public func rows<Row: ReadRow>(_ read: StoreRead<Row>) async throws -> [Row] {
        try await reading { db in try db.rows(read) }
    }

    public func devices(app appId: UUID, after: String?, limit: Int, having: DeviceNames) async throws -> [DeviceRow] {
        try await pageRows(StateReads.devicePage(app: appId, after: after, limit: limit, having: having))
    }

    public func deviceCount(app appId: UUID, name: DeviceName, upTo limit: Int) async throws -> Int {
        Int(try await pageRows(StateReads.deviceCount(app: appId, name: name, upTo: limit)).first?.value ?? 0)
    }

    /// The reads of an audience send's pages: on `pageReader`, without the memory map.
    private func pageRows<Row: ReadRow>(_ read: StoreRead<Row>) async throws -> [Row] {
        do {
            return try await pageReader.read { db in try db.rows(read) }
        } catch {
            throw Self.storeError(error)
        }
    }

    public func delivery(app appId: UUID, deliveryId: UUID) async throws -> DeliveryRow? {
        // Every keyed send reads this, and almost always finds nothing: one statement (its own
        // snapshot, no transaction around it) on the calling thread (`SQLiteInlineReaders`).
        do {
            return DeliveryRow.summed(try inlineReaders.read { db in try db.rows(ReaderReads.delivery(app: appId, deliveryId: deliveryId)) })
        } catch {
            throw Self.storeError(error)
        }
    }

    public func claimOutboxJobs(now: Date, limit: Int, leaseUntil: Date, slots: OutboxSlots) async throws -> [OutboxJob] {
        try await writing { db in
            try SQLiteOutbox.claim(now: now, limit: limit, leaseUntil: leaseUntil, slots: slots, in: db)
        }
    }

    public func recordOutboxAttempt(jobId: String, lease: Date?, result: OutboxAttemptResult) async throws -> Bool {
        try await writing { db in try SQLiteOutbox.record(jobId: jobId, lease: lease, result: result, in: db) }
    }

    public func createdAt() async throws -> Date {
        try await reading { db in try SQLiteDeadLetters.createdAt(in: db) }
    }

    public func deadLetters(after: DeadLetterKey?, limit: Int) async throws -> [DeadLetterRow] {
        try await reading { db in try SQLiteDeadLetters.list(after: after, limit: limit, in: db) }
    }

    public func deadLetter(_ key: DeadLetterKey) async throws -> DeadLetterRow? {
        try await reading { db in try SQLiteDeadLetters.one(key, in: db) }
    }

    public func dump() async throws -> String {
        try await reading { db in try SQLiteDump.dump(db) }
    }

    // MARK: - Access with error mapping

    private func reading<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        do {
            return try await pool.read(body)
        } catch {
            throw Self.storeError(error)
        }
    }

    private func writing<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        do {
            return try await pool.write(body)
        } catch {
            throw Self.storeError(error)
        }
    }

    /// Failures of the machine rather than of the data: busy or locked beyond the busy timeout,
    /// a full disk, an I/O error, no memory, a file that cannot be opened or written. The same
    /// write succeeds once the cause is gone, so the processor waits instead of dead-lettering.
    private static let transientCodes: [ResultCode] = [
        .SQLITE_BUSY, .SQLITE_LOCKED, .SQLITE_FULL, .SQLITE_IOERR, .SQLITE_NOMEM, .SQLITE_CANTOPEN, .SQLITE_READONLY,
    ]

    /// The module's own errors pass as they are, and so does cancellation (callers stop on it
    /// rather than retry); the `transientCodes` are transient; anything else is a database failure.
    private static func storeError(_ error: any Error) -> any Error {
        switch error {
        case let error as ProjectionStoreError: error
        case let error as CancellationError: error
        case let error as DatabaseError where transientCodes.contains(error.resultCode.primaryResultCode):
            ProjectionStoreError.unavailable(String(describing: error))
        default: ProjectionStoreError.database(String(describing: error))
        }
    }
}
