import Contracts
import Foundation
@testable import Projections
@testable import SQLiteProjections
@testable import PostgresProjections
@testable import ProjectionChangelog
import Testing

/// The changelog on the store side: the entry format, the outbox every commit writes to, and a
/// restore of the entries into an empty store.
@Suite(.serialized) struct ChangelogTests {
    // MARK: - The entry format

    @Test func testEveryKindOfMutationComesBackAsItWasEncoded() throws {
        var random = SeededRandom(seed: 11)
        var mutations = MixedMutations.make(count: 3_000, keys: 50, using: &random)
        let letter = DeadLetterRow(partition: Fixture.partition(3), offset: 1 << 40, type: "weird \u{1F600} type", reason: "",
                                   requestId: nil, value: Data([0, 0xff, 0x7f]), recordedAt: Date(timeIntervalSince1970: 1_763_800_000.123_456))
        mutations += [
            .putDeadLetter(letter), .deleteDeadLetter(letter.key),
            .upsertDevice(DeviceRow(appId: UUID(), deviceToken: String(repeating: "f", count: 4_096), userId: "",
                                    platform: .android, version: .min, updatedAt: Date(timeIntervalSince1970: -1.5))),
            .putPending(PendingNotificationRow(appId: UUID(), deviceToken: "t", notificationId: "é\"\n", deliveryId: UUID(),
                                               sentAt: .distantFuture, text: String(repeating: "😀", count: 1_000), businessId: "")),
        ]
        let offsets = [
            OffsetUpdate(partition: Fixture.partition(0), expected: nil, next: 0, eventTime: nil),
            OffsetUpdate(partition: Fixture.partition(7, topic: "x"), expected: .max - 1, next: .max, eventTime: -5),
        ]
        let entry = ChangelogEntry(mutations: mutations, offsets: offsets)
        let decoded = try ChangelogEntry(decoding: entry.encoded())
        #expect(decoded == entry)
        #expect(try ChangelogEntry(decoding: ChangelogEntry(mutations: [], offsets: []).encoded()) == ChangelogEntry(mutations: [], offsets: []))
    }

    /// An entry written before rows came from the catalog (every row kind under its tags 1–42:
    /// an app with and without push credentials, a legacy and a scoped token, a delivery with
    /// and without outcomes and a key) still decodes to its mutations.
    @Test func testAnEntryOfTheTagsBeforeTheCatalogStillDecodes() throws {
        let bytes = try #require(Self.hexBytes(Self.legacyEntry.joined()))
        let entry = try ChangelogEntry(decoding: bytes)
        #expect(entry.offsets == [OffsetUpdate(partition: PartitionKey(topic: "pushline.commands.registration", partition: 3), expected: 41,
                                               next: 42, eventTime: 1_763_800_000_123)])
        #expect(entry.mutations == LegacyChangelogFixtures.mutations)
        // The same mutations written today: every row under its catalog tag, and the same mutations back.
        let today = ChangelogEntry(mutations: LegacyChangelogFixtures.mutations, offsets: entry.offsets)
        #expect(try ChangelogEntry(decoding: today.encoded()) == today)
        #expect(today.encoded() != bytes)
    }

    /// A row's columns past those an entry holds read as NULL (a column added after the entry was
    /// written); a column it cannot do without, or one more than this code knows, is refused.
    @Test func testARowEntryWithFewerOrMoreColumnsIsReadAsNullOrRefused() throws {
        let ack = AckRow(appId: UUID(), deviceToken: "t", notificationId: "n", businessId: "b", ackedAt: Fixture.at(1))
        let bytes = ChangelogEntry(mutations: [.putAck(ack)], offsets: []).encoded()
        // format, no offsets, one mutation, the ack's tag, then its column count.
        let countAt = 4
        #expect(bytes[countAt] == UInt8(TableCatalog.acks.columns.count))
        var fewer = bytes
        fewer[countAt] -= 1
        // The last column (acked_at) is not nullable: refused, not read as a default.
        #expect(throws: ChangelogFormatError.self) { try ChangelogEntry(decoding: fewer.dropLast(8)) }
        var more = bytes
        more[countAt] += 1
        #expect(throws: ChangelogFormatError.self) { try ChangelogEntry(decoding: more + [0]) }
        var noBusiness = ack
        noBusiness.businessId = nil
        #expect(try ChangelogEntry(decoding: ChangelogEntry(mutations: [.putAck(noBusiness)], offsets: []).encoded()).mutations
                == [.putAck(noBusiness)])
    }

    private static func hexBytes(_ hex: String) -> [UInt8]? {
        var bytes: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            guard let byte = UInt8(hex[index..<next], radix: 16) else { return nil }
            bytes.append(byte)
            index = next
        }
        return bytes
    }

    /// `LegacyChangelogFixtures.mutations` and one offset, as the changelog wrote them before rows
    /// came from the catalog.
    private static let legacyEntry = [
        "01011e707573686c696e652e636f6d6d616e64732e726567697374726174696f6e0601525401f699e1aad56611016f1c1a52",
        "52d44f0b9a436b3f8f3e2a100a9e2f3b1c4d4e5f8a6b7c8d9e0f1a2b03617070011768747470733a2f2f6578616d706c652e",
        "746573742f63620103582d41013104b4e607f05c48da41146f1c1a5252d44f0b9a436b3f8f3e2a100a9e2f3b1c4d4e5f8a6b",
        "7c8d9e0f1a2b10776974682063726564656e7469616c73000000b4e607f05c48da41f4027b2261706e73223a7b2262756e64",
        "6c654964223a22636f6d2e6578616d706c652e61707032222c22656e7669726f6e6d656e74223a2270726f64756374696f6e",
        "222c2266696e6765727072696e74223a225348413235363a66702f322b222c226b65794964223a224b455932222c22707269",
        "766174654b6579223a7b22626f78223a22626f785c225c5c2f32c3a9222c226b65794964223a226b32227d2c227465616d49",
        "64223a225445414d32227d2c2266636d223a7b22636c69656e74456d61696c223a22614070726f6a6563742d322e69616d22",
        "2c2266696e6765727072696e74223a225348413235363a32222c22707269766174654b65794964223a22696432222c227072",
        "6f6a6563744964223a2270726f6a6563742d32222c22736572766963654163636f756e74223a7b22626f78223a227361e280",
        "a832222c226b65794964223a226b32227d2c22746f6b656e557269223a2268747470733a2f2f6f61757468322e746573742f",
        "746f6b656e227d7d020a9e2f3b1c4d4e5f8a6b7c8d9e0f1a2b6f1c1a5252d44f0b9a436b3f8f3e2a10046861736801b4e607",
        "f05c48da41170a9e2f3b1c4d4e5f8a6b7c8d9e0f1a2b6f1c1a5252d44f0b9a436b3f8f3e2a10046861736800b4e607f05c48",
        "da4106636c69656e74036f1c1a5252d44f0b9a436b3f8f3e2a1005746f6b656e047573657207616e64726f696406b4e607f0",
        "5c48da41050a9e2f3b1c4d4e5f8a6b7c8d9e0f1a2b6f1c1a5252d44f0b9a436b3f8f3e2a10064661696c6564011244657669",
        "6365546f6b656e546f6f4c6f6e67b4e607f05c48da4106036a6f6213726567697374726174696f6e2d737461747573016f1c",
        "1a5252d44f0b9a436b3f8f3e2a101668747470733a2f2f6578616d706c652e746573742f680101410162030001ff0600b4e6",
        "07f05c48da410770656e64696e670000b4e607f05c48da4107046a6f62320863616c6c6261636b00017500000202b4e607f0",
        "5c48da41066661696c656401e8070104626f6f6db4e607f05c48da41086f1c1a5252d44f0b9a436b3f8f3e2a1005746f6b65",
        "6e026e310a9e2f3b1c4d4e5f8a6b7c8d9e0f1a2bb4e607f05c48da410568656c6c6f0101620b6f1c1a5252d44f0b9a436b3f",
        "8f3e2a1005746f6b656e026e3100b4e607f05c48da410c6f1c1a5252d44f0b9a436b3f8f3e2a100a9e2f3b1c4d4e5f8a6b7c",
        "8d9e0f1a2b05616c657274010008b4e607f05c48da41156f1c1a5252d44f0b9a436b3f8f3e2a100a9e2f3b1c4d4e5f8a6b7c",
        "8d9e0f1a2b067469636b6574000108b4e607f05c48da41020402186f1c1a5252d44f0b9a436b3f8f3e2a100a9e2f3b1c4d4e",
        "5f8a6b7c8d9e0f1a2b02696d000002b4e607f05c48da4100000001036b65790104686173680402166f1c1a5252d44f0b9a43",
        "6b3f8f3e2a100a9e2f3b1c4d4e5f8a6b7c8d9e0f1a2b0e05746f6b656e066661696c6564010e426164446576696365546f6b",
        "656eb4e607f05c48da41280a9e2f3b1c4d4e5f8a6b7c8d9e0f1a2b036f7073016801b4e607f05c48da4101b4e607f05c48da",
        "41290a9e2f3b1c4d4e5f8a6b7c8d9e0f1a2bb4e607f05c48da410a41707043726561746564016f1c1a5252d44f0b9a436b3f",
        "8f3e2a100001036f7073010172076170706c69656400027b7d2a0461707073016b6f1c1a5252d44f0b9a436b3f8f3e2a1001",
        "68b4e607f05c48da41",
    ]

    @Test func testATruncatedOrAlteredEntryIsRefusedRatherThanMisread() throws {
        var random = SeededRandom(seed: 12)
        let entry = ChangelogEntry(mutations: MixedMutations.make(count: 40, keys: 5, using: &random),
                                   offsets: [OffsetUpdate(partition: Fixture.partition(1), expected: 3, next: 9, eventTime: 1)])
        let bytes = entry.encoded()
        for length in 0..<bytes.count {
            #expect(throws: ChangelogFormatError.self, "a prefix of \(length) bytes") { try ChangelogEntry(decoding: bytes.prefix(length)) }
        }
        #expect(throws: ChangelogFormatError.self, "a byte too many") { try ChangelogEntry(decoding: bytes + [0]) }
        var otherFormat = bytes
        otherFormat[0] = 99
        #expect(throws: ChangelogFormatError.self, "an unknown format") { try ChangelogEntry(decoding: otherFormat) }
        let unknownTag: [UInt8] = [ChangelogEntry.format, 0, 1, 200]
        #expect(throws: ChangelogFormatError.self, "an unknown mutation") { try ChangelogEntry(decoding: unknownTag) }
    }

    @Test func testALargeEntryIsSplitIntoRecordsThatReassembleInOrder() throws {
        let payload = (0..<(ChangelogRecord.partBytes * 2 + 17)).map { UInt8(truncatingIfNeeded: $0 * 31) }
        let records = ChangelogRecord.split(seq: 42, payload: payload)
        #expect(records.map(\.part) == [0, 1, 2])
        #expect(records.allSatisfy { $0.parts == 3 && $0.seq == 42 && $0.value.count <= ChangelogRecord.partBytes + 16 })
        let read = try records.map { try #require(ChangelogRecord(value: $0.value)) }
        #expect(read == records)
        #expect(Array(read.map(\.bytes).joined()) == payload)
        #expect(ChangelogRecord(value: Data([1, 2, 3])) == nil, "too short")
        #expect(ChangelogRecord(value: ChangelogRecord(seq: 1, part: 2, parts: 2, bytes: []).value) == nil, "a part past the last")
        #expect(ChangelogRecord.split(seq: 1, payload: []).count == 1, "an empty entry is one record")
    }

    // MARK: - The outbox

    @Test(arguments: StoreBackend.allCases)
    func testEveryCommitLeavesItsNumberedEntryUntilItIsPublished(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let start = try #require(try await store.changelogPosition(), "a new store starts a lineage")
            #expect(start.seq == 0)
            #expect(start.lineage.count == 32)
            let app = Fixture.app(name: "a")
            let commits: [ChangelogEntry] = [
                ChangelogEntry(mutations: [.upsertApp(app)], offsets: [OffsetUpdate(partition: Fixture.partition(0), expected: nil, next: 1)]),
                ChangelogEntry(mutations: [.upsertDevice(Fixture.device(app: app.appId, token: "t", user: "u"))],
                               offsets: [OffsetUpdate(partition: Fixture.partition(0), expected: 1, next: 2, eventTime: 9)]),
                ChangelogEntry(mutations: [.enqueueOutbox(Fixture.job("j"))], offsets: []),
            ]
            for commit in commits { try await store.commit(mutations: commit.mutations, offsets: commit.offsets) }
            // A refused commit leaves no entry and takes no number.
            await h.assertThrows(.offsetConflict([Fixture.partition(0)])) {
                try await store.commit(mutations: [.upsertApp(Fixture.app())],
                                       offsets: [OffsetUpdate(partition: Fixture.partition(0), expected: 7, next: 8)])
            }

            let position = try await store.changelogPosition()
            #expect(position == ChangelogPosition(lineage: start.lineage, seq: 3))
            let rows = try await store.unpublishedChangelog(after: 0, limit: 10)
            #expect(rows.map(\.seq) == [1, 2, 3])
            #expect(try rows.map { try ChangelogEntry(decoding: $0.payload) } == commits)
            #expect(try await store.unpublishedChangelog(after: 1, limit: 1).map(\.seq) == [2])

            try await store.changelogPublished(through: 2)
            #expect(try await store.unpublishedChangelog(after: 0, limit: 10).map(\.seq) == [3])
            try await store.commit(mutations: [], offsets: [OffsetUpdate(partition: Fixture.partition(0), expected: 2, next: 3)])
            #expect(try await store.unpublishedChangelog(after: 0, limit: 10).map(\.seq) == [3, 4], "numbers go on after a publish")
        }
    }

    // MARK: - Restore

    /// Random commits over few keys (so that commits overwrite, delete and count the same rows)
    /// restored into an empty store, in transactions of several entries, give the same dump,
    /// offsets and position; the secondary indexes are back afterwards, built by another store
    /// object than the one that set them aside.
    @Test(arguments: StoreBackend.allCases)
    func testRestoringTheEntriesOfAStoreGivesTheSameStore(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            var random = SeededRandom(seed: 13)
            let live = try await h.openStore("live.sqlite")
            var next: Int64?
            for _ in 0..<80 {
                let mutations = MixedMutations.make(count: Int.random(in: 0...60, using: &random), keys: 8, using: &random)
                let partition = Fixture.partition(Int32.random(in: 0..<2, using: &random))
                let stored = try await live.offsets(topics: [partition.topic])[partition]
                next = (stored ?? 0) + Int64.random(in: 1...5, using: &random)
                try await live.commit(mutations: mutations, offsets: [OffsetUpdate(partition: partition, expected: stored, next: next!,
                                                                                   eventTime: Int64.random(in: 0...9, using: &random))])
            }
            let position = try #require(try await live.changelogPosition())
            let entries = try await live.unpublishedChangelog(after: 0, limit: 1_000).map { try ChangelogEntry(decoding: $0.payload) }
            #expect(entries.count == 80)

            // The indexes are set aside by one process and built by another (a restore run again
            // after it stopped): their definitions are in the store.
            try await h.openStore("restored.sqlite").beginRestore()
            let restored = try await h.openStore("restored.sqlite")
            var offsets: [PartitionKey: Int64] = [:]
            var times: [PartitionKey: Int64] = [:]
            var seq: Int64 = 0
            for chunk in stride(from: 0, to: entries.count, by: 7).map({ Array(entries[$0..<min($0 + 7, entries.count)]) }) {
                let before = offsets
                for update in chunk.flatMap(\.offsets) {
                    offsets[update.partition] = update.next
                    times[update.partition] = update.eventTime
                }
                seq += Int64(chunk.count)
                let updates = offsets.keys.map { OffsetUpdate(partition: $0, expected: before[$0], next: offsets[$0]!, eventTime: times[$0]) }
                try await restored.restore(chunk, offsets: updates, lineage: position.lineage, through: seq)
            }
            try await restored.finishRestore()

            #expect(try await restored.dump() == live.dump())
            // The index of names, kept by triggers, follows the restored devices.
            let names = backend == .sqlite
                ? "SELECT app_id || ' ' || kind || ' ' || name || ' ' || device_token FROM device_names ORDER BY 1"
                : "SELECT app_id::text || ' ' || kind || ' ' || name || ' ' || token_prefix || token_rest FROM device_names ORDER BY 1"
            let liveNames = try await h.strings(names, store: "live.sqlite")
            #expect(!liveNames.isEmpty)
            #expect(try await h.strings(names, store: "restored.sqlite") == liveNames)
            #expect(try await restored.changelogPosition() == position)
            let topics = [Fixture.partition(0).topic]
            #expect(try await restored.offsets(topics: topics) == live.offsets(topics: topics))
            #expect(try await restored.eventTimes(topics: topics) == live.eventTimes(topics: topics))
            #expect(try await restored.unpublishedChangelog(after: 0, limit: 10).isEmpty, "restored entries are not published again")
            let indexes = try await h.strings(backend == .sqlite
                ? "SELECT name FROM sqlite_master WHERE type = 'index' AND name NOT LIKE 'sqlite_%' ORDER BY name"
                : "SELECT indexname::text FROM pg_indexes WHERE schemaname = 'public' AND indexname NOT LIKE '%_pkey' ORDER BY indexname",
                store: "restored.sqlite")
            #expect(indexes.compactMap { $0 } == (SecondaryIndexes.names + (backend == .postgres ? SecondaryIndexes.postgresOnly : [])).sorted())

            // A restore whose offsets do not continue the stored ones is refused whole.
            await h.assertThrows(.offsetConflict([Fixture.partition(0)])) {
                try await restored.restore([ChangelogEntry(mutations: [.upsertApp(Fixture.app())], offsets: [])],
                                           offsets: [OffsetUpdate(partition: Fixture.partition(0), expected: nil, next: 1)],
                                           lineage: position.lineage, through: seq + 1)
            }
            #expect(try await restored.changelogPosition() == position)
        }
    }

    /// An app row from an entry written before `counted_users` existed restores it as 0, while
    /// its users' rows carry counted pushes: the restore's end counts them (`RestoreCounts`), so
    /// that sends read those rows and caps count them. A larger count is kept: it counts users
    /// ever counted.
    @Test(arguments: StoreBackend.allCases)
    func testARestoreCountsTheUsersWithPushesCountedOnTheirOwnRow(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let (old, counted, none) = (Fixture.app(name: "old"), Fixture.app(name: "counted"), Fixture.app(name: "none"))
            var larger = counted
            larger.countedUsers = 5
            let pushes = "1700000000000 * d1"
            let mutations: [Mutation] = [
                .upsertApp(old), .upsertApp(larger), .upsertApp(none),
                .putUserSettings(UserSettingsRow(appId: old.appId, userId: "u1", part: 0, capped: pushes)),
                .putUserSettings(UserSettingsRow(appId: old.appId, userId: "u2", part: 0, capped: pushes)),
                .putUserSettings(UserSettingsRow(appId: old.appId, userId: "u3", part: 0, quietHours: "22:00-08:00")),
                .putUserSettings(UserSettingsRow(appId: counted.appId, userId: "u1", part: 0, capped: pushes)),
                .putUserSettings(UserSettingsRow(appId: none.appId, userId: "u1", part: 0, quietHours: "22:00-08:00")),
            ]
            try await h.openStore("restored.sqlite").beginRestore()
            let restored = try await h.openStore("restored.sqlite")
            try await restored.restore([ChangelogEntry(mutations: mutations, offsets: [])], offsets: [], lineage: "l", through: 1)
            let counts = "SELECT name || ' ' || CAST(counted_users AS TEXT) FROM apps ORDER BY name"
            #expect(try await h.strings(counts, store: "restored.sqlite") == ["counted 5", "none 0", "old 0"])
            try await restored.finishRestore()
            #expect(try await h.strings(counts, store: "restored.sqlite") == ["counted 5", "none 0", "old 2"])
        }
    }

    /// A restore into an empty store writes the mutations in the order of their rows
    /// (`ChangelogSorter`), in memory and through run files, whole groups as their final rows
    /// (`RestoredRows`, plain inserts) and the chunks that cut a large group as mutations: the
    /// same store as the one that committed them, also over rows a load that stopped left behind.
    @Test(arguments: StoreBackend.allCases)
    func testMutationsWrittenInTheOrderOfTheirRowsGiveTheSameStore(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            var random = SeededRandom(seed: 17)
            let live = try await h.openStore("live.sqlite")
            var all: [Mutation] = []
            for commit in 0..<60 {
                let mutations = MixedMutations.make(count: Int.random(in: 0...60, using: &random), keys: 6, using: &random)
                all += mutations
                try await live.commit(mutations: mutations, offsets: [OffsetUpdate(partition: Fixture.partition(0),
                                                                                   expected: commit == 0 ? nil : Int64(commit), next: Int64(commit + 1))])
            }
            let position = try #require(try await live.changelogPosition())
            // Chunks of 25 hold whole groups (6 keys of each kind: no group has 100 mutations);
            // chunks of 3 cut the larger groups.
            for (name, limit, chunk) in [("memory.sqlite", 1 << 20, 25), ("runs.sqlite", 2_048, 25), ("cut.sqlite", 2_048, 3)] {
                let store = try await h.openStore(name)
                // What a load that stopped leaves: rows, but no offsets.
                try await store.restore([ChangelogEntry(mutations: Array(all.prefix(40)), offsets: [])], offsets: [],
                                        lineage: position.lineage, through: 0)
                try await store.beginRestore()
                let sorter = ChangelogSorter(memoryLimit: limit)
                for mutation in all { try await sorter.add(mutation) }
                #expect(sorter.count == all.count)
                let (whole, cut) = (Counter(), Counter())
                try await sorter.drain(chunk: chunk) { chunk in
                    if chunk.wholeGroups {
                        await whole.increment()
                        // Folded all at once, and group by group in group order: the same rows, so
                        // each table's in key order.
                        let rows = RestoredRows(chunk)
                        #expect(rows.mutations == Self.concatenated(chunk.groups.map { RestoredRows(Array($0)) }).mutations)
                        try await store.restore(rows: rows)
                    } else {
                        await cut.increment()
                        try await store.restore([ChangelogEntry(mutations: chunk.mutations, offsets: [])], offsets: [],
                                                lineage: position.lineage, through: 0)
                    }
                }
                #expect(sorter.count == 0 && sorter.runFiles == 0, "drained and its files removed")
                #expect(await whole.value > 0)
                #expect((await cut.value > 0) == (chunk == 3), "\(name): only small chunks cut groups")
                try await store.restore([], offsets: [OffsetUpdate(partition: Fixture.partition(0), expected: nil, next: 60)],
                                        lineage: position.lineage, through: position.seq)
                try await store.finishRestore()
                if backend == .postgres {
                    #expect(try await h.strings(Self.primaryKeys, store: name) == PostgresChangelog.restoredKeys.keys.sorted(), "\(name)")
                }
                #expect(try await store.dump() == live.dump(), "\(name)")
                #expect(try await store.changelogPosition() == position)
            }
        }
    }

    /// Final rows loaded by `restore(rows:)` (in PostgreSQL with `COPY`'s text format) are the
    /// rows a commit of the same mutations stores, whatever their values hold: the format's own
    /// bytes (tab, newline, carriage return, backslash, a literal `\N` or `\.`), quotes,
    /// combining marks, right-to-left text, 4-byte UTF-8, a value longer than one message to the
    /// server, NULL optionals, extreme integers and dates. Rows are found again by their device
    /// token, which the store looks up by the key it computes of it.
    @Test(arguments: StoreBackend.allCases)
    func testHostileValuesLoadedAsFinalRowsAreStoredAsACommitStoresThem(_ backend: StoreBackend) async throws {
        let texts = [
            "tab\there", "line\nfeed", "carriage\rreturn", "\r\n", "\t\n\r\\N\\", "back\\slash", "\\", "\\\\", "\\N", "\\.",
            "\\x00ff", "ends with \\", "\"double\" 'single' `back`", "", " ", "e\u{301}\u{302}\u{20DD}",
            "\u{202E}override\u{202C} עברית العربية", "😀👩‍👩‍👧‍👦🏳️‍🌈", "𝄞𐍈\u{10FFFF}\u{E000}", "\u{1}\u{1F}\u{7F}\u{85}\u{2028}", "\u{FEFF}bom",
            String(repeating: "long\t\\", count: 20_000),
        ]
        // One value larger than a `COPY` message (1 MiB), in 4-byte characters.
        let huge = String(repeating: "😀", count: 300_000)
        let dates = [Date(timeIntervalSince1970: 0), .distantPast, .distantFuture, Date(timeIntervalSince1970: -62_135_596_800),
                     Date(timeIntervalSince1970: 253_402_300_799.999), Date(timeIntervalSince1970: 1.0005),
                     Date(timeIntervalSince1970: -0.0015), Fixture.t0]
        let integers: [Int64] = [.min, .max, 0, -1, 1, Int64(Int32.max) + 1]
        let app = UUID(uuidString: "ffffffff-ffff-ffff-ffff-ffffffffffff")!
        func pick<T>(_ values: [T], _ n: Int) -> T { values[n % values.count] }

        var mutations: [Mutation] = []
        for (n, text) in texts.enumerated() {
            let date = pick(dates, n), other = pick(texts, n + 7), appId = n % 2 == 0 ? app : UUID()
            let token = "\(text)#\(n)"
            mutations += [
                .upsertApp(AppRow(appId: UUID(), orgId: UUID(), name: text, callbackUrl: n % 3 == 0 ? nil : other,
                                  callbackHeaders: [text: other], webhookRetries: Int(pick(integers, n)), createdAt: date,
                                  pushCredentials: n % 2 == 0 ? nil : Fixture.pushCredentials(n))),
                .upsertApiToken(ApiTokenRow(tokenId: UUID(), appId: appId, tokenHash: text, revoked: n % 2 == 0, createdAt: date,
                                            scopes: [nil, [.client], [.server], [.client, .server]][n % 4])),
                .upsertDevice(DeviceRow(appId: appId, deviceToken: token, userId: other, platform: n % 2 == 0 ? .ios : .android,
                                        version: pick(integers, n), updatedAt: date, locale: n % 3 == 0 ? nil : "pt-BR",
                                        appVersion: n % 2 == 0 ? nil : "10.0.\(n)", tags: n % 4 == 0 ? [] : ["a", "b:\(n)"],
                                        topics: n % 5 == 0 ? [] : ["news"])),
                .putRegistrationStatus(RegistrationStatusRow(requestId: UUID(), appId: appId, status: n % 2 == 0 ? .Failed : .Success,
                                                             failureReason: n % 3 == 0 ? nil : .DeviceTokenTooLong, decidedAt: date)),
                .enqueueOutbox(OutboxJob(id: text + "\(n)", kind: other, appId: n % 2 == 0 ? nil : appId, url: text, headers: [other: text],
                                         body: Data(text.utf8) + [0, 0xff, 0x5c, 0x09], maxAttempts: Int(pick(integers, n)),
                                         nextAttemptAt: date, state: .replayed, lastError: n % 2 == 0 ? nil : text, createdAt: date)),
                .putPending(PendingNotificationRow(appId: appId, deviceToken: token, notificationId: other, deliveryId: UUID(), sentAt: date,
                                                   text: n == 3 ? huge : text, businessId: n % 3 == 0 ? nil : other)),
                .putAck(AckRow(appId: appId, deviceToken: token, notificationId: text, businessId: n % 3 == 1 ? nil : other, ackedAt: date)),
                .putDelivery(DeliveryRow(appId: appId, deliveryId: UUID(), kind: pick(NotificationKind.allCases, n), managed: n % 2 == 0,
                                         tracking: n % 3 == 0, sent: Int(pick(integers, n + 1)), createdAt: date,
                                         idempotencyKey: n % 2 == 0 ? nil : n == 3 ? huge : text, requestHash: n % 4 == 1 ? nil : other,
                                         duplicates: Int(pick(integers, n)), conflicts: n)),
                .countTracking(TrackingCounts(appId: appId, deliveryId: UUID(), counts: [
                    TrackingCount(action: pick(TrackingAction.allCases, n), messageIndex: Int(pick(integers, n)), reports: 1),
                    TrackingCount(action: pick(TrackingAction.allCases, n + 1), messageIndex: n, reports: n % 2 == 0 ? .max : 2),
                ])),
                .parkTracking(TrackingPair(deliveryId: UUID(), appId: appId), at: date),
                .putDeadLetter(DeadLetterRow(partition: Fixture.partition(Int32(n), topic: text), offset: pick(integers, n),
                                             type: n % 2 == 0 ? nil : other, reason: text, requestId: n % 3 == 0 ? nil : other,
                                             value: Data(other.utf8) + [0, 0x0a, 0x5c], recordedAt: date)),
                .upsertAdminToken(AdminTokenRow(adminTokenId: UUID(), name: text, tokenHash: other, revoked: n % 2 == 0, createdAt: date,
                                                revokedAt: n % 2 == 0 ? date : nil)),
                .putAuditEntry(AuditEntryRow(commandId: UUID(), at: date, type: other, appId: n % 2 == 0 ? nil : appId,
                                             actorId: n % 3 == 0 ? nil : UUID(), actorName: n % 5 == 0 ? nil : text,
                                             requestId: n % 2 == 0 ? nil : other, outcome: text, reason: n % 2 == 0 ? nil : other,
                                             changes: text)),
                .putIdempotencyKey(IdempotencyKeyRow(scope: other, key: text, resourceId: UUID(), requestHash: n == 3 ? huge : other,
                                                     firstAt: date)),
            ]
        }
        let rows = RestoredRows(mutations)
        #expect([rows.apps.count, rows.tokens.count, rows.devices.count, rows.statuses.count, rows.outbox.count, rows.pending.count,
                 rows.acks.count, rows.deliveries.count, rows.parks.count, rows.deadLetters.count, rows.adminTokens.count,
                 rows.audit.count, rows.idempotencyKeys.count].allSatisfy { $0 == texts.count })
        #expect(rows.tracking.count == 2 * texts.count)

        try await withStoreHarness(backend) { h in
            let committed = try await h.openStore("committed.sqlite")
            try await committed.commit(mutations: mutations, offsets: [])
            // A load that stops, and is run again from the start by another process.
            let stopped = try await h.openStore("restored.sqlite")
            try await stopped.beginRestore()
            try await stopped.restore(rows: rows)
            let restored = try await h.openStore("restored.sqlite")
            try await restored.beginRestore()
            try await restored.restore(rows: rows)
            if backend == .postgres {
                #expect(try await h.strings(Self.primaryKeys, store: "restored.sqlite") == [], "set aside during the load")
            }
            try await restored.finishRestore()

            let dump = try await restored.dump()
            #expect(dump == (try await committed.dump()))
            #expect(dump.contains(huge))
            #expect(try await restored.outboxJobs(after: nil, limit: 100) == committed.outboxJobs(after: nil, limit: 100))
            #expect(try await restored.deadLetters(after: nil, limit: 100) == committed.deadLetters(after: nil, limit: 100))
            for device in rows.devices {
                // Compared with what the commit stored: dates come back in whole milliseconds.
                let found = try await restored.device(device.key)
                #expect(found?.deviceToken == device.deviceToken, "found by its token")
                #expect(try await found == committed.device(device.key))
                let pending = try await restored.pendingNotifications(device.key)
                #expect(pending.count == 1)
                #expect(try await pending == committed.pendingNotifications(device.key))
            }
            if backend == .postgres {
                // Every key is the one the store's SQL computes of the token.
                let keyed = try await h.strings("""
                    SELECT count(*)::text FROM (SELECT token_key, device_token FROM devices UNION ALL
                        SELECT token_key, device_token FROM pending_notifications UNION ALL SELECT token_key, device_token FROM acks) t
                    WHERE token_key = \(PostgresRows.tokenKey("device_token"))
                    """, store: "restored.sqlite")
                #expect(keyed == ["\(3 * texts.count)"])
                #expect(try await h.strings(Self.primaryKeys, store: "restored.sqlite") == PostgresChangelog.restoredKeys.keys.sorted())
                #expect(try await h.strings("SELECT name FROM restore_indexes", store: "restored.sqlite") == [])
            }
        }
    }

    /// Each table's rows of `parts`, one after the other.
    static func concatenated(_ parts: [RestoredRows]) -> RestoredRows {
        var all = RestoredRows([])
        for part in parts {
            all.apps += part.apps; all.tokens += part.tokens; all.devices += part.devices; all.statuses += part.statuses
            all.outbox += part.outbox; all.pending += part.pending; all.acks += part.acks; all.deliveries += part.deliveries
            all.outcomes += part.outcomes; all.tracking += part.tracking; all.parks += part.parks; all.deadLetters += part.deadLetters
            all.adminTokens += part.adminTokens; all.audit += part.audit; all.idempotencyKeys += part.idempotencyKeys
        }
        return all
    }

    /// The primary keys of the tables a PostgreSQL restore copies into, by name.
    static let primaryKeys = """
        SELECT conname::text FROM pg_constraint WHERE contype = 'p' AND conname = ANY('{\(PostgresChangelog.restoredKeys.keys.joined(separator: ","))}')
        ORDER BY conname
        """

    /// Spilling: a small memory limit writes sorted runs to files, merged at the end.
    @Test func testTheSorterSpillsToRunFilesAndMergesThemInOrder() async throws {
        var random = SeededRandom(seed: 19)
        let mutations = MixedMutations.make(count: 500, keys: 5, using: &random)
        let sorter = ChangelogSorter(memoryLimit: 4_096)
        for mutation in mutations { try await sorter.add(mutation) }
        #expect(sorter.runFiles > 2)
        var chunks: [SortedChunk] = []
        try await sorter.drain(chunk: 4) { chunks.append($0) }
        let out = chunks.flatMap(\.mutations)
        #expect(out.count == mutations.count)
        // Each group's mutations in log order; groups in key order.
        func key(_ m: Mutation) -> [UInt8] {
            var w = ChangelogWriter()
            w.sortRecord(m)
            return Array(w.bytes[4..<(4 + ChangelogSorter.fixed32(w.bytes, at: 0))])
        }
        let keys = out.map(key)
        #expect(zip(keys, keys.dropFirst()).allSatisfy { !$1.lexicographicallyPrecedes($0) })
        for group in Set(keys) {
            #expect(out.filter { key($0) == group } == mutations.filter { key($0) == group })
        }
        // Chunks end where a group does, unless a group holds more than 4 × 4 mutations: then
        // the chunks holding parts of it are cut where they fill, and say so.
        var groupSizes: [[UInt8]: Int] = [:]
        for k in keys { groupSizes[k, default: 0] += 1 }
        #expect(groupSizes.values.contains { $0 > 16 } && groupSizes.values.contains { $0 < 4 }, "the stream has both kinds of group")
        var split: Set<[UInt8]> = []
        for (chunk, next) in zip(chunks, chunks.dropFirst()) where key(chunk.mutations.last!) == key(next.mutations.first!) {
            split.insert(key(next.mutations.first!))
        }
        // A group starts at most 3 mutations into a chunk (a chunk of 4 ends at the next group).
        #expect(split.isSuperset(of: groupSizes.filter { $0.value > 16 }.keys))
        #expect(split.allSatisfy { groupSizes[$0]! > 16 - 3 })
        for chunk in chunks {
            #expect(chunk.groups.flatMap { $0 } == chunk.mutations)
            #expect(chunk.groups.allSatisfy { Set($0.map(key)).count == 1 }, "a group's mutations share its key")
            #expect(zip(chunk.groups, chunk.groups.dropFirst()).allSatisfy { key($0.last!) != key($1.first!) }, "groups are whole in a chunk")
            #expect(chunk.mutations.count >= 4 || chunk.mutations.last == out.last)
            let cutsAGroup = chunk.mutations.contains { split.contains(key($0)) }
            #expect(chunk.wholeGroups == !cutsAGroup)
        }
    }
}

private actor Counter {
    var value = 0
    func increment() { value += 1 }
}
