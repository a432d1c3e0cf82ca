import Contracts
import Foundation
import Kafka
import Logging
import Projections
import ProjectionChangelog
import ProjectionStores
import TestSupport
import XCTest
@testable import Processor
@testable import Handlers

/// The changelog between a store and a restore, on a real broker: entries published again after
/// a crash between publishing and dropping them, entries split over several records, and a
/// restore that skips the repeats and ends with the same store.
final class ChangelogPublishingTests: XCTestCase {
    private var directory: URL!
    private let logger = Logger(label: "test")

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("changelog-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: directory)
    }

    func testEntriesPublishedTwiceAndSplitAreRestoredOnceIntoTheSameStore() async throws {
        try await TestBroker.with { try await run($0) }
    }

    private func run(_ broker: TestBroker) async throws {
        var configuration = ProcessorConfiguration()
        configuration.shared.brokers = broker.bootstrapServers
        configuration.shared.topics = Topics(prefix: "changelog-test.")
        configuration.shared.partitions = 2
        configuration.groupId = "changelog-test"
        try await configuration.shared.createMissingTopics()
        let producer = try KafkaProducer(configuration: configuration.shared.producerConfiguration(clientId: "test"), logger: logger)
        let live = try await ProjectionStoreFactory.open("sqlite:" + directory.appendingPathComponent("live.sqlite").path, logger: logger)
        let topic = configuration.shared.topics.changelog
        let partition = PartitionKey(topic: configuration.shared.topics.registration, partition: 0)
        var offset: Int64?

        func commit(_ mutations: [Mutation]) async throws {
            let next = (offset ?? 0) + 1
            try await live.commit(mutations: mutations, offsets: [OffsetUpdate(partition: partition, expected: offset, next: next, eventTime: next)])
            offset = next
        }
        let app = UUID()
        try await commit([.upsertApp(AppRow(appId: app, orgId: UUID(), name: "a", createdAt: Date(timeIntervalSince1970: 1)))])
        try await commit([.upsertDevice(DeviceRow(appId: app, deviceToken: "t1", userId: "u", platform: .ios, version: 1,
                                                  updatedAt: Date(timeIntervalSince1970: 2)))])
        let first = ChangelogPublisher(store: live, producer: producer, topic: topic, logger: logger)
        let published = try await first.publishPending()
        XCTAssertEqual(published, 2)

        // A large entry (several records), then a crash after publishing, before the store
        // dropped what was published: the next publisher sends those entries again.
        let text = String(repeating: "x", count: 200)
        try await commit((0..<8_000).map { n in
            .putPending(PendingNotificationRow(appId: app, deviceToken: "t1", notificationId: "n\(n)", deliveryId: UUID(),
                                               sentAt: Date(timeIntervalSince1970: 3), text: text, businessId: nil))
        })
        try await commit([.deleteDevice(DeviceKey(appId: app, deviceToken: "t1")), .clearPending(DeviceKey(appId: app, deviceToken: "t1"))])
        let crashing = ChangelogPublisher(store: DropFails(live), producer: producer, topic: topic, logger: logger)
        do {
            try await crashing.publishPending()
            XCTFail("the drop was made to fail")
        } catch is DropFails.Crash {}
        let unpublished = try await live.unpublishedChangelog(after: 0, limit: 10)
        XCTAssertEqual(unpublished.map(\.seq), [3, 4], "still in the outbox")
        let second = ChangelogPublisher(store: live, producer: producer, topic: topic, logger: logger)
        try await commit([.upsertDevice(DeviceRow(appId: app, deviceToken: "t2", userId: "u", platform: .android, version: 2,
                                                  updatedAt: Date(timeIntervalSince1970: 4)))])
        let republished = try await second.publishPending()
        XCTAssertEqual(republished, 3, "entries 3 and 4 again, and 5")
        let left = try await live.unpublishedChangelog(after: 0, limit: 10)
        XCTAssertEqual(left, [])

        let ends = try await KafkaAdmin.endOffsets(topics: [topic], bootstrapServers: broker.bootstrapServers)
        let records = ends[TopicPartition(topic: topic, partition: 0)] ?? 0
        XCTAssertGreaterThan(records, 2 + 2 * 4 + 2, "entry 3 is split over several records, and published twice")

        let restoredPath = directory.appendingPathComponent("restored.sqlite").path
        configuration.shared.store = "sqlite:" + restoredPath
        let summary = try await Rebuild.run(configuration: configuration, options: Rebuild.Options(source: .changelog, progressInterval: nil),
                                            logger: logger)
        let position = try await live.changelogPosition()
        XCTAssertEqual(summary.changelogEntries, 5)
        XCTAssertEqual(summary.changelogPosition, position)
        let restored = try await ProjectionStoreFactory.open("sqlite:" + restoredPath, logger: logger)
        let restoredDump = try await restored.dump()
        let liveDump = try await live.dump()
        XCTAssertEqual(restoredDump, liveDump)
        XCTAssertTrue(liveDump.contains("device_token=\"t2\""), "sanity: the dump holds the rows")
        let offsets = try await restored.offsets(topics: [partition.topic])
        XCTAssertEqual(offsets, [partition: 5])
        let restoredPosition = try await restored.changelogPosition()
        XCTAssertEqual(restoredPosition, position, "the restored store continues the lineage")

        // A second restore without a previous store into a store that holds state is refused.
        do {
            _ = try await Rebuild.run(configuration: configuration, options: Rebuild.Options(source: .changelog, progressInterval: nil),
                                      logger: logger)
            XCTFail("a restore into a store that holds state must refuse")
        } catch let failure as Rebuild.Failure {
            XCTAssertTrue("\(failure)".contains("already holds consumed offsets"), "\(failure)")
        }

        // An entry that cannot be decoded (the next number, garbage after the format byte) stops
        // a restore into an empty store with its number, and leaves that store without offsets.
        let lineage = try XCTUnwrap(position?.lineage)
        let garbage = [UInt8(1)] + [UInt8](repeating: 0xFF, count: 64)
        _ = try await producer.send(ChangelogRecord.split(seq: 6, payload: garbage).map {
            KafkaProducerRecord(topic: topic, key: lineage, value: $0.value, partition: 0)
        })
        let brokenPath = directory.appendingPathComponent("broken.sqlite").path
        configuration.shared.store = "sqlite:" + brokenPath
        do {
            _ = try await Rebuild.run(configuration: configuration, options: Rebuild.Options(source: .changelog, progressInterval: nil),
                                      logger: logger)
            XCTFail("an undecodable entry must stop the restore")
        } catch {
            XCTAssertTrue("\(error)".contains("changelog entry 6 cannot be read"), "\(error)")
        }
        let broken = try await ProjectionStoreFactory.open("sqlite:" + brokenPath, logger: logger)
        let brokenOffsets = try await broken.offsets(topics: [partition.topic])
        XCTAssertEqual(brokenOffsets, [:], "a load that stopped leaves no offsets")
        await broken.close()

        await restored.close()
        await live.close()
        await producer.shutdown()
    }

    /// Parts of an entry published twice, interleaved, or cut short and published again whole,
    /// make the entry once; a number past the next one is a gap.
    func testRepeatedPartsMakeTheEntryOnceAndAGapIsAnError() throws {
        let payload = (0..<(ChangelogRecord.partBytes * 2 + 5)).map { UInt8(truncatingIfNeeded: $0) }
        let a = ChangelogRecord.split(seq: 4, payload: payload)
        let b = a
        for order in [[a[0], b[0], a[1], b[1], a[2], b[2]], [a[0], a[1], b[0], b[1], b[2], a[2]], [b[0], a[0], b[1], b[2]]] {
            var assembling: (seq: Int64, parts: [ArraySlice<UInt8>])?
            var applied: Int64 = 3
            var made: [[UInt8]] = []
            for record in order {
                if let (seq, bytes) = try ChangelogRestore.assemble(record, applied: applied, into: &assembling) {
                    applied = seq
                    made.append(bytes)
                }
            }
            XCTAssertEqual(made, [payload])
            XCTAssertEqual(applied, 4)
        }
        var assembling: (seq: Int64, parts: [ArraySlice<UInt8>])?
        XCTAssertThrowsError(try ChangelogRestore.assemble(a[0], applied: 2, into: &assembling)) { error in
            XCTAssertTrue("\(error)".contains("skips from entry 2 to 4"), "\(error)")
        }
        XCTAssertNil(try ChangelogRestore.assemble(a[0], applied: 4, into: &assembling), "an entry applied already")
    }
}

/// A store whose outbox cannot drop published entries: a publisher that crashes between the
/// broker's acknowledgement and the drop.
private struct DropFails: ChangelogStore {
    struct Crash: Error {}
    let store: any ChangelogStore

    init(_ store: any ChangelogStore) {
        self.store = store
    }

    func changelogPosition() async throws -> ChangelogPosition? { try await store.changelogPosition() }
    func unpublishedChangelog(after seq: Int64, limit: Int) async throws -> [ChangelogOutboxRow] {
        try await store.unpublishedChangelog(after: seq, limit: limit)
    }
    func changelogPublished(through seq: Int64) async throws { throw Crash() }
    func beginRestore() async throws {}
    func restore(_ entries: [ChangelogEntry], offsets: [OffsetUpdate], lineage: String, through seq: Int64) async throws {}
    func restore(rows: RestoredRows) async throws {}
    func finishRestore() async throws {}
}
