import Contracts
import Foundation
@testable import Projections
@testable import SQLiteProjections
@testable import PostgresProjections
@testable import ProjectionChangelog
import Testing

/// Dead letters and the store's creation time, on every backend.
@Suite(.serialized) struct DeadLetterStoreTests {
    private let partition = PartitionKey(topic: "pushline.commands.notification", partition: 3)

    private func letter(_ offset: Int64, topic: String? = nil) -> DeadLetterRow {
        DeadLetterRow(partition: PartitionKey(topic: topic ?? partition.topic, partition: partition.partition), offset: offset,
                      type: "notification-requested", reason: "ERROR 54000: index row size 3072 exceeds btree version 4 maximum 2704",
                      requestId: "req-\(offset)", value: Data("{\"v\":1}".utf8), recordedAt: Date(timeIntervalSince1970: 1_800_000_000))
    }

    @Test(arguments: StoreBackend.allCases)
    func testADeadLetterIsStoredWithItsOffsetAndMovesThePartitionOn(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            try await store.commit(mutations: [.putDeadLetter(letter(7))],
                                   offsets: [OffsetUpdate(partition: partition, expected: nil, next: 8)])
            let stored = try await store.deadLetter(DeadLetterKey(partition: partition, offset: 7))
            #expect(stored == letter(7))
            let offsets = try await store.offsets(topics: [partition.topic])
            #expect(offsets[partition] == 8)
            let missing = try await store.deadLetter(DeadLetterKey(partition: partition, offset: 6))
            #expect(missing == nil)
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testDeadLettersListInPartitionAndOffsetOrderAndPage(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let rows = [letter(12), letter(3), letter(40, topic: "pushline.commands.admin"), letter(5)]
            try await store.commit(mutations: rows.map(Mutation.putDeadLetter), offsets: [])
            let all = try await store.deadLetters(after: nil, limit: 10)
            #expect(all.map(\.key.description) == [
                "pushline.commands.admin:3:40", "pushline.commands.notification:3:3", "pushline.commands.notification:3:5",
                "pushline.commands.notification:3:12",
            ])
            let page = try await store.deadLetters(after: all[1].key, limit: 1)
            #expect(page.map(\.offset) == [5])
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testDeletingADeadLetterRemovesOnlyIt(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            try await store.commit(mutations: [.putDeadLetter(letter(1)), .putDeadLetter(letter(2))], offsets: [])
            try await store.commit(mutations: [.deleteDeadLetter(DeadLetterKey(partition: partition, offset: 1))], offsets: [])
            let left = try await store.deadLetters(after: nil, limit: 10)
            #expect(left.map(\.offset) == [2])
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testAReasonIsKeptToItsLimit(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            var long = letter(9)
            long.reason = String(repeating: "x", count: DeadLetterRow.maxReasonLength * 3)
            try await store.commit(mutations: [.putDeadLetter(long)], offsets: [])
            let stored = try await store.deadLetter(long.key)
            #expect(stored?.reason.count == DeadLetterRow.maxReasonLength)
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testANewStoreRecordsWhenItWasCreatedOnceAndKeepsIt(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let before = Date().addingTimeInterval(-1)
            let store = try await h.openStore("created.sqlite")
            let created = try await store.createdAt()
            #expect(created >= before)
            #expect(created <= Date().addingTimeInterval(1))
            let again = try await h.openStore("created.sqlite")
            let reopened = try await again.createdAt()
            #expect(reopened == created, "reopening the store does not move its creation time")
        }
    }
}
