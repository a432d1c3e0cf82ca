import Contracts
import Foundation
@testable import Projections
import XCTest

final class SchemaTests: StoreTestCase {
    func testOpeningCreatesParentDirectoriesAndTheCurrentSchemaVersion() async throws {
        let store = try openStore("nested/deeper/store.sqlite")

        XCTAssertTrue(FileManager.default.fileExists(atPath: path("nested/deeper/store.sqlite")))
        let version = try await store.pool.read { db in try Int.fetchOne(db, sql: "PRAGMA user_version") }
        XCTAssertEqual(version, SQLiteSchema.version)
        let tables = try await store.pool.read { db in
            try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'grdb%' ORDER BY name")
        }
        XCTAssertEqual(tables, ["api_tokens", "apps", "devices", "outbox", "outbox_attempts", "partition_offsets", "registration_status"])
    }

    func testReopeningKeepsCommittedRowsAndOffsets() async throws {
        let app = Fixture.app(name: "kept")
        let device = Fixture.device(app: app.appId, token: "aa", user: "u")
        do {
            let store = try openStore()
            try await store.commit(mutations: [.upsertApp(app), .upsertDevice(device)],
                                   offsets: [OffsetUpdate(partition: Fixture.partition(0), expected: nil, next: 7)])
        }

        let reopened = try openStore()

        let storedApp = try await reopened.app(app.appId)
        let storedDevice = try await reopened.device(device.key)
        let offsets = try await reopened.offsets(topics: [Fixture.partition(0).topic])
        XCTAssertEqual(storedApp, app)
        XCTAssertEqual(storedDevice, device)
        XCTAssertEqual(offsets, [Fixture.partition(0): 7])
    }

    func testOpeningAStoreWrittenByNewerCodeIsRefused() async throws {
        do {
            let store = try openStore()
            try await store.pool.write { db in try db.execute(sql: "PRAGMA user_version = 2") }
        }

        XCTAssertThrowsError(try openStore()) { error in
            XCTAssertEqual(error as? ProjectionStoreError, .unsupportedSchemaVersion(found: 2, supported: SQLiteSchema.version))
        }
    }

    func testOpeningAFileThatIsNotADatabaseFailsWithADatabaseError() throws {
        try Data("not sqlite at all, just text that is long enough to fill a header".utf8).write(to: URL(fileURLWithPath: path()))

        XCTAssertThrowsError(try openStore()) { error in
            guard case .database = error as? ProjectionStoreError else {
                return XCTFail("expected a database error, got \(error)")
            }
        }
    }
}
