import Contracts
import Foundation
import GRDB
@testable import Projections
@testable import ProjectionChangelog
@testable import PostgresProjections
@testable import SQLiteProjections
import Testing

@Suite(.serialized) struct OffsetTests {
    private let registration = "pushline.commands.registration"
    private let admin = "pushline.commands.admin"

    @Test(arguments: StoreBackend.allCases)
    func testFirstCommitOfAPartitionStoresItsOffsetAndLaterCommitsMoveIt(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let p0 = Fixture.partition(0)

            try await store.commit(mutations: [], offsets: [OffsetUpdate(partition: p0, expected: nil, next: 10)])
            try await store.commit(mutations: [], offsets: [OffsetUpdate(partition: p0, expected: 10, next: 25)])

            let offsets = try await store.offsets(topics: [registration])
            #expect(offsets == [p0: 25])
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testEachPartitionKeepsTheEventTimeOfItsLastCommitThatCarriesOne(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let p0 = Fixture.partition(0), p1 = Fixture.partition(1)
            try await store.commit(mutations: [], offsets: [OffsetUpdate(partition: p0, expected: nil, next: 10, eventTime: 1_790_000_000_123),
                                                            OffsetUpdate(partition: p1, expected: nil, next: 3)])
            #expect(try await store.eventTimes(topics: [registration]) == [p0: 1_790_000_000_123, p1: 0])

            // Nil keeps the stored time; a refused commit writes none.
            try await store.commit(mutations: [], offsets: [OffsetUpdate(partition: p0, expected: 10, next: 12)])
            await h.assertThrows(.offsetConflict([p1])) {
                try await store.commit(mutations: [], offsets: [OffsetUpdate(partition: p0, expected: 12, next: 13, eventTime: 9),
                                                                OffsetUpdate(partition: p1, expected: 2, next: 4, eventTime: 9)])
            }
            try await store.commit(mutations: [], offsets: [OffsetUpdate(partition: p1, expected: 3, next: 4, eventTime: 1_790_000_000_500)])
            #expect(try await store.eventTimes(topics: [registration]) == [p0: 1_790_000_000_123, p1: 1_790_000_000_500])
            #expect(try await store.eventTimes(topics: [admin]).isEmpty)
            #expect(try await store.offsets(topics: [registration]) == [p0: 12, p1: 4])
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testAnEventTimeIsStoredAsGivenWhateverItsValue(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let (p0, p1, p2) = (Fixture.partition(0), Fixture.partition(1), Fixture.partition(2))
            try await store.commit(mutations: [], offsets: [p0, p1, p2].map { OffsetUpdate(partition: $0, expected: nil, next: 1, eventTime: 5) })

            try await store.commit(mutations: [], offsets: [OffsetUpdate(partition: p0, expected: 1, next: 2, eventTime: .min),
                                                            OffsetUpdate(partition: p1, expected: 1, next: 2, eventTime: .max),
                                                            OffsetUpdate(partition: p2, expected: 1, next: 2, eventTime: -1)])
            #expect(try await store.eventTimes(topics: [registration]) == [p0: .min, p1: .max, p2: -1])
        }
    }

    /// A store written before event times were kept (SQLite schema 6, PostgreSQL 7: no
    /// `event_time` column) keeps its offsets, and each reads back with event time 0 until a
    /// commit states one.
    @Test(arguments: StoreBackend.allCases)
    func testOffsetsStoredBeforeEventTimesReadBackWithEventTimeZero(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let (p0, p1) = (Fixture.partition(0), Fixture.partition(1))
            let offsets: [PartitionKey: Int64] = [p0: 7, p1: 9]
            switch backend {
            case .sqlite:
                let pool = try DatabasePool(path: h.path())
                try SQLiteSchema.migrator.migrate(pool, upTo: "v6")
                try await pool.write { db in
                    for (key, next) in offsets {
                        try db.execute(sql: "INSERT INTO partition_offsets (topic, \"partition\", next_offset) VALUES (?, ?, ?)",
                                       arguments: [key.topic, key.partition, next])
                    }
                }
                try pool.close()
            case .postgres:
                let store = try await h.openStore()
                try await store.commit(mutations: [], offsets: offsets.map { OffsetUpdate(partition: $0.key, expected: nil, next: $0.value) })
                await store.close()
                try await h.undoPostgresStepsAfterSeven()
                try await h.execute("UPDATE schema_version SET version = 7")
            }
            let version = backend == .sqlite ? "PRAGMA user_version" : "SELECT version::text FROM schema_version"
            #expect(try await h.strings(version) == [backend == .sqlite ? "6" : "7"])

            let store = try await h.openStore()
            #expect(try await h.strings(version) == [backend == .sqlite ? "\(SQLiteSchema.version)" : "\(PostgresSchema.version)"])
            #expect(try await store.offsets(topics: [registration]) == offsets)
            #expect(try await store.eventTimes(topics: [registration]) == [p0: 0, p1: 0])
            try await store.commit(mutations: [], offsets: [OffsetUpdate(partition: p0, expected: 7, next: 8, eventTime: 1_790_000_000_000)])
            #expect(try await store.eventTimes(topics: [registration]) == [p0: 1_790_000_000_000, p1: 0])
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testExpectingNoOffsetWhereOneIsStoredConflicts(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let p0 = Fixture.partition(0)
            try await store.commit(mutations: [], offsets: [OffsetUpdate(partition: p0, expected: nil, next: 10)])

            await h.assertThrows(.offsetConflict([p0])) {
                try await store.commit(mutations: [], offsets: [OffsetUpdate(partition: p0, expected: nil, next: 11)])
            }
            let offsets = try await store.offsets(topics: [registration])
            #expect(offsets == [p0: 10])
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testExpectingAnOffsetWhereNoneIsStoredConflicts(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let p3 = Fixture.partition(3)

            await h.assertThrows(.offsetConflict([p3])) {
                try await store.commit(mutations: [], offsets: [OffsetUpdate(partition: p3, expected: 5, next: 9)])
            }
            let offsets = try await store.offsets(topics: [registration])
            #expect(offsets == [:])
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testAnOffsetConflictWritesNothingAndNamesOnlyTheMismatchedPartitions(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let (p0, p1, p2) = (Fixture.partition(0), Fixture.partition(1), Fixture.partition(2))
            try await store.commit(mutations: [], offsets: [
                OffsetUpdate(partition: p0, expected: nil, next: 100),
                OffsetUpdate(partition: p1, expected: nil, next: 200),
            ])
            let app = Fixture.app()
            let device = Fixture.device(app: app.appId, token: "t", user: "u")

            await h.assertThrows(.offsetConflict([p1, p2])) {
                try await store.commit(mutations: [.upsertApp(app), .upsertDevice(device), .enqueueOutbox(Fixture.job("job-1"))], offsets: [
                    OffsetUpdate(partition: p0, expected: 100, next: 150),
                    OffsetUpdate(partition: p1, expected: 199, next: 250),
                    OffsetUpdate(partition: p2, expected: 1, next: 2),
                ])
            }

            let offsets = try await store.offsets(topics: [registration])
            let storedApp = try await store.app(app.appId)
            let storedDevice = try await store.device(device.key)
            let job = try await store.outboxJob("job-1")
            #expect(offsets == [p0: 100, p1: 200])
            #expect(storedApp == nil)
            #expect(storedDevice == nil)
            #expect(job == nil)
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testOffsetsAreReturnedOnlyForTheAskedTopics(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let reg = Fixture.partition(0, topic: registration)
            let adm = Fixture.partition(0, topic: admin)
            let other = Fixture.partition(0, topic: "pushline.commands.tracking")
            try await store.commit(mutations: [], offsets: [
                OffsetUpdate(partition: reg, expected: nil, next: 1),
                OffsetUpdate(partition: adm, expected: nil, next: 2),
                OffsetUpdate(partition: other, expected: nil, next: 3),
            ])

            let offsets = try await store.offsets(topics: [registration, admin])
            let none = try await store.offsets(topics: [])
            #expect(offsets == [reg: 1, adm: 2])
            #expect(none == [:])
        }
    }
    /// A held app part's rows are offset rows of their own: read apart from the partitions',
    /// moved by compare-and-set, and deleted by an update that says so.
    @Test(arguments: StoreBackend.allCases)
    func testAHeldAppPartsRowsAreMovedByCompareAndSetAndDeleted(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let lane = Fixture.partition(0, topic: registration), other = Fixture.partition(0, topic: admin)
            let held = HeldApp(app: UUID(), part: 1)
            try await store.commit(mutations: [], offsets: [
                OffsetUpdate(partition: lane, expected: nil, next: 30, eventTime: 900),
                OffsetUpdate(partition: held.key(on: lane), expected: nil, next: 12, eventTime: 400),
                OffsetUpdate(partition: held.key(on: other), expected: nil, next: 5, eventTime: 300),
            ])
            #expect(try await store.offsets(topics: [registration]) == [lane: 30], "the partition's own offset, not the held row")
            #expect(Set(try await store.heldLanes(topics: [registration, admin])) == [
                HeldLane(held: held, lane: lane, next: 12, eventTime: 400), HeldLane(held: held, lane: other, next: 5, eventTime: 300),
            ])
            #expect(try await store.heldLanes(topics: [admin]).map(\.lane) == [other])

            await h.assertThrows(.offsetConflict([held.key(on: lane)])) {
                try await store.commit(mutations: [], offsets: [OffsetUpdate(partition: held.key(on: lane), expected: 11, next: 13)])
            }
            try await store.commit(mutations: [], offsets: [OffsetUpdate(partition: held.key(on: lane), expected: 12, next: 20, eventTime: 500)])
            await h.assertThrows(.offsetConflict([held.key(on: other)])) {
                try await store.commit(mutations: [], offsets: [OffsetUpdate(partition: held.key(on: other), expected: 4, next: OffsetUpdate.deleted)])
            }
            try await store.commit(mutations: [], offsets: [
                OffsetUpdate(partition: held.key(on: lane), expected: 20, next: OffsetUpdate.deleted),
                OffsetUpdate(partition: held.key(on: other), expected: 5, next: OffsetUpdate.deleted),
            ])
            #expect(try await store.heldLanes(topics: [registration, admin]).isEmpty)
            #expect(try await store.offsets(topics: [registration]) == [lane: 30])
            // A row deleted may be held again from nothing.
            try await store.commit(mutations: [], offsets: [OffsetUpdate(partition: held.key(on: lane), expected: nil, next: 31, eventTime: 1)])
            #expect(try await store.heldLanes(topics: [registration]).map(\.next) == [31])
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testOfTwoStoresOnOneFileOnlyOneMovesAPartitionFromTheSameOffset(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let stores = [try await h.openStore(), try await h.openStore()]
            let p0 = Fixture.partition(0)
            let app = UUID()

            for round in 0..<20 {
                let expected: Int64? = round == 0 ? nil : Int64(round)
                let outcomes = await withTaskGroup(of: Bool.self) { group in
                    for (index, store) in stores.enumerated() {
                        let device = Fixture.device(app: app, token: "round-\(round)-store-\(index)", user: "u")
                        group.addTask {
                            do {
                                try await store.commit(mutations: [.upsertDevice(device)],
                                                       offsets: [OffsetUpdate(partition: p0, expected: expected, next: Int64(round + 1))])
                                return true
                            } catch {
                                #expect((error as? ProjectionStoreError) == .offsetConflict([p0]))
                                return false
                            }
                        }
                    }
                    return await group.reduce(into: [Bool]()) { $0.append($1) }
                }
                #expect(outcomes.filter { $0 }.count == 1, "round \(round)")
            }

            let devices = try await stores[0].devices(app: app, user: "u")
            let offsets = try await stores[1].offsets(topics: [registration])
            #expect(devices.count == 20, "one device per round, from the commit that won")
            #expect(offsets == [p0: 20])
        }
    }
}
