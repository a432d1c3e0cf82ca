import Contracts
import Foundation
import Logging
import Projections
import ProjectionStores
import TestSupport
import WireCodec
import XCTest
@testable import Processor
@testable import Handlers

/// A record the store refuses for good goes to the dead letters and its partition moves on, on
/// both stores; a dead letter can be applied again once its cause is gone. The refusal is a real
/// database error: a trigger the test installs refuses one delivery id, as a value the store
/// cannot hold would.
final class DeadLetterTests: ApplierTestCase {
    let appId = UUID(), org = UUID(), tokenHash = ApiTokens.hash("t")
    let poisoned = UUID(), healthy = UUID()
    let deviceToken = String(repeating: "ab", count: 32)
    private var databases: [String] = []

    override func tearDown() async throws {
        if !databases.isEmpty {
            let server = try await PostgresServer.shared()
            for database in databases { try await server.dropDatabase(database) }
        }
    }

    /// A store of `backend` with a trigger refusing deliveries of `poisoned`, and a way to lift it.
    private func poisonedStore(_ backend: StoreKind) async throws -> (store: any ProjectionStore, lift: () async throws -> Void) {
        switch backend {
        case .sqlite:
            let path = directory.appendingPathComponent("dead-letters.sqlite").path
            let store = try await ProjectionStoreFactory.open("sqlite:" + path, logger: Logger(label: "test"))
            try await sqlite(path, """
                CREATE TRIGGER poison BEFORE INSERT ON deliveries WHEN NEW.delivery_id = '\(poisoned.lowercasedString)'
                BEGIN SELECT RAISE(ABORT, 'poisoned by the test'); END;
                """)
            return (store, { try await self.sqlite(path, "DROP TRIGGER poison;") })
        case .postgres:
            let server = try await PostgresServer.shared()
            let database = "pushline_dl_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(16)
            try await server.createDatabase(database)
            databases.append(database)
            let store = try await ProjectionStoreFactory.open(server.url(database: database), logger: Logger(label: "test"))
            try await server.execute("""
                CREATE FUNCTION poison() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'poisoned by the test'; END $$
                """, database: database)
            try await server.execute("""
                CREATE TRIGGER poison BEFORE INSERT ON deliveries FOR EACH ROW
                WHEN (NEW.delivery_id = '\(poisoned.lowercasedString)'::uuid) EXECUTE FUNCTION poison()
                """, database: database)
            return (store, { try await server.execute("DROP TRIGGER poison ON deliveries", database: database) })
        }
    }

    enum StoreKind { case sqlite, postgres }

    private func sqlite(_ path: String, _ sql: String) async throws {
        let output = try await ProcessRunner.run("/usr/bin/sqlite3", [path, sql])
        XCTAssertEqual(output.status, 0, output.standardError)
    }

    private func applier(_ store: any ProjectionStore, _ outbound: RecordingOutbound) -> BatchApplier {
        BatchApplier(store: store, outbound: outbound, verifier: TokenFormatVerifier(), logger: Logger(label: "test"),
                     retryDelays: [.milliseconds(1)])
    }

    private func send(_ deliveryId: UUID) -> NotificationRequested {
        NotificationRequested(deliveryId: deliveryId, mobileAppId: appId, target: NotificationTarget(userIds: ["u"]),
                              content: NotificationContent(text: "hello"))
    }

    private func setup() throws -> [ConsumedRecord] {
        [
            try record(AppCreated(orgId: org, mobileAppId: appId, name: "a", tokenId: UUID(), tokenHash: tokenHash), partition: 0, offset: 0),
            try record(DeviceRegistrationRequested(registrationRequestId: UUID(), orgId: org, mobileAppId: appId, userId: "u",
                                                   platform: .ios, deviceToken: deviceToken, apiTokenHash: tokenHash,
                                                   trackStatus: false, callback: nil), partition: 0, offset: 0),
        ]
    }

    private func runRefusedRecordIsDeadLettered(_ backend: StoreKind) async throws {
        let (store, lift) = try await poisonedStore(backend)
        let outbound = RecordingOutbound()
        let applier = applier(store, outbound)
        _ = try await applier.apply(try setup(), expected: [:])
        let bad = try record(send(poisoned), partition: 1, offset: 0)
        let good = try record(send(healthy), partition: 1, offset: 1)

        let next = try await applier.apply([bad, good], expected: [:])

        XCTAssertEqual(next, [bad.partition: 2], "the partition moved past the refused record")
        let stored = try await store.offsets(topics: [bad.partition.topic])
        XCTAssertEqual(stored[bad.partition], 2)
        let letters = try await store.deadLetters(after: nil, limit: 10)
        XCTAssertEqual(letters.map(\.key), [DeadLetterKey(partition: bad.partition, offset: 0)])
        XCTAssertEqual(letters.first?.type, CommandType.notificationRequested.rawValue)
        XCTAssertEqual(letters.first?.value, bad.value, "the record is kept as consumed")
        XCTAssertTrue(letters.first?.reason.contains("poisoned by the test") ?? false, letters.first?.reason ?? "")
        let healthyStats = try await store.deliveryStats(app: appId, deliveryId: healthy)
        XCTAssertNotNil(healthyStats, "the record after the refused one is applied")
        let poisonedStats = try await store.deliveryStats(app: appId, deliveryId: poisoned)
        XCTAssertNil(poisonedStats)

        // Applying it again while the store still refuses it changes nothing.
        do {
            _ = try await applier.reapply(letters[0])
            XCTFail("the store still refuses the record")
        } catch {
            XCTAssertTrue("\(error)".contains("poisoned by the test"), "\(error)")
        }
        let stillThere = try await store.deadLetter(letters[0].key)
        XCTAssertNotNil(stillThere)

        // Once the cause is gone, it is applied (its push published) and the dead letter removed.
        try await lift()
        let pushesBefore = outbound.messages.filter { String(decoding: $0.value, as: UTF8.self).contains(poisoned.lowercasedString) }.count
        let done = try await applier.reapply(letters[0])
        XCTAssertEqual(done.outbound, 1)
        XCTAssertGreaterThan(done.mutations, 0)
        let pushesAfter = outbound.messages.filter { String(decoding: $0.value, as: UTF8.self).contains(poisoned.lowercasedString) }.count
        XCTAssertEqual(pushesAfter, pushesBefore + 1)
        let reapplied = try await store.deliveryStats(app: appId, deliveryId: poisoned)
        XCTAssertEqual(reapplied?.delivery.sent, 1)
        let remaining = try await store.deadLetters(after: nil, limit: 10)
        XCTAssertEqual(remaining, [])
        let offsetsAfter = try await store.offsets(topics: [bad.partition.topic])
        XCTAssertEqual(offsetsAfter[bad.partition], 2, "re-applying does not move the partition")
    }

    func testARecordSQLiteRefusesForGoodIsDeadLetteredAndCanBeAppliedAgain() async throws {
        try await runRefusedRecordIsDeadLettered(.sqlite)
    }

    func testARecordPostgreSQLRefusesForGoodIsDeadLetteredAndCanBeAppliedAgain() async throws {
        try await runRefusedRecordIsDeadLettered(.postgres)
    }

    /// The reported case: an acknowledgement whose device id is longer than a PostgreSQL index
    /// row can hold stopped the partition for good. Whatever the store makes of it now, the
    /// commands after it are applied.
    func testAnAckTooLongForPostgreSQLIndexesDoesNotStopItsPartition() async throws {
        let (store, _) = try await poisonedStore(.postgres)
        let applier = applier(store, RecordingOutbound())
        _ = try await applier.apply(try setup(), expected: [:])
        let ack = try record(NotificationAcknowledged(mobileAppId: appId, notificationId: "n1",
                                                      deviceToken: String(repeating: "d", count: 3_000)), partition: 2, offset: 0)
        let after = try record(send(healthy), partition: 2, offset: 1)
        let next = try await applier.apply([ack, after], expected: [:])
        XCTAssertEqual(next, [ack.partition: 2])
        let stats = try await store.deliveryStats(app: appId, deliveryId: healthy)
        XCTAssertNotNil(stats)
    }
}
