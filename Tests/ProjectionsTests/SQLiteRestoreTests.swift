import Foundation
import GRDB
@testable import Projections
import Testing

/// A restore into an empty SQLite store writes it without a journal (docs/ARCHITECTURE.md#changelog-and-restore):
/// marked while it does, back in WAL mode when it is done, and a store whose restore stopped is
/// never used as it is.
@Suite(.serialized) struct SQLiteRestoreTests {
    private static let appId = UUID()
    private static let device = Fixture.device(app: appId, token: "restored", user: "u")
    private static let rows = RestoredRows([.upsertApp(Fixture.app(appId)), .upsertDevice(device)])

    private static func journalMode(_ path: String) throws -> String? {
        try DatabaseQueue(path: path).read { db in try String.fetchOne(db, sql: "PRAGMA journal_mode") }
    }

    @Test func testARestoreIsMarkedWhileItWritesWithoutAJournalAndEndsInWALMode() async throws {
        try await withStoreHarness(.sqlite) { h in
            let path = h.path("restored.sqlite"), marker = SQLiteRestoreMarker.path(for: h.path("restored.sqlite"))
            let store = try await h.openStore("restored.sqlite")
            try await store.beginRestore()
            #expect(FileManager.default.fileExists(atPath: marker))
            #expect(SQLiteRestoreMarker.state(for: path) == .held)
            try await store.restore(rows: Self.rows)
            try await store.finishRestore()

            #expect(!FileManager.default.fileExists(atPath: marker))
            #expect(SQLiteRestoreMarker.state(for: path) == .absent)
            #expect(try await store.device(Self.device.key) != nil)
            await store.close()
            #expect(try Self.journalMode(path) == "wal")
            // Opened again as any process opens it.
            let reopened = try await h.openStore("restored.sqlite")
            #expect(try await reopened.device(Self.device.key) != nil)
        }
    }

    /// A restore that stops leaves its marker: the store is refused to every process but the
    /// rebuild, which deletes it and starts over; while a restore runs, even the rebuild is refused.
    @Test func testAStoreWhoseRestoreStoppedIsRefusedOrStartedOver() async throws {
        try await withStoreHarness(.sqlite) { h in
            let path = h.path("restored.sqlite")
            let running = try await h.openStore("restored.sqlite")
            try await running.beginRestore()
            try await running.restore(rows: Self.rows)
            for discarding in [false, true] {
                #expect(throws: ProjectionStoreError.database("\(path) is being restored by another process")) {
                    try SQLiteProjectionStore(path: path, logger: StoreHarness.logger, discardingUnfinishedRestore: discarding)
                }
            }

            await running.close()
            #expect(SQLiteRestoreMarker.state(for: path) == .left)
            let refused = #expect(throws: ProjectionStoreError.self) {
                try SQLiteProjectionStore(path: path, logger: StoreHarness.logger)
            }
            #expect("\(refused!)".contains("stopped before it finished"))
            #expect(FileManager.default.fileExists(atPath: path), "refusing deletes nothing")

            let again = try await h.openStore("restored.sqlite", discardingUnfinishedRestore: true)
            #expect(try await again.device(Self.device.key) == nil, "started over from an empty store")
            #expect(SQLiteRestoreMarker.state(for: path) == .absent)
            try await again.beginRestore()
            try await again.restore(rows: Self.rows)
            try await again.finishRestore()
            #expect(try await again.device(Self.device.key) != nil)
        }
    }

    /// Another connection to the file (another process reading the store) cannot be asked to
    /// leave: the restore then keeps the WAL, leaves no marker, and gives the same rows.
    @Test func testARestoreKeepsTheWALWhileAnotherConnectionHasTheStoreOpen() async throws {
        try await withStoreHarness(.sqlite) { h in
            let path = h.path("restored.sqlite")
            let store = try await h.openStore("restored.sqlite")
            let reader = try DatabaseQueue(path: path)
            _ = try await reader.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM devices") }
            try await store.beginRestore()
            #expect(SQLiteRestoreMarker.state(for: path) == .absent)
            #expect(try await reader.read { db in try String.fetchOne(db, sql: "PRAGMA journal_mode") } == "wal")
            try await store.restore(rows: Self.rows)
            try await store.finishRestore()
            #expect(try await reader.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM devices") } == 1)
        }
    }
}
