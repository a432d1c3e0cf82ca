import Contracts
import Foundation
import Kafka
import Logging
import Projections
import ProjectionStores
import Synchronization
import TestSupport
import WireCodec
import XCTest
@testable import Handlers
@testable import Processor

/// The firings of scheduled sends (`DueSends`), against a real broker and a real SQLite store:
/// each processor appends those of its own shards whose time came, each once while it waits, to
/// its app part's partition, past the sends of other shards.
final class DueSendsTests: ApplierTestCase {
    func testEachProcessorFiresTheDueSendsOfItsOwnShardsOncePastTheOthers() async throws {
        try await TestBroker.with { try await run($0) }
    }

    private func run(_ broker: TestBroker) async throws {
        let topic = CommandTopic.notification.name(in: topics)
        let partitions = 4
        try await KafkaAdmin.createTopics([(topic, partitions)], bootstrapServers: broker.bootstrapServers)
        let store = try await ProjectionStoreFactory.open("sqlite:" + directory.appendingPathComponent("due.sqlite").path,
                                                          logger: Logger(label: "test"))
        let parts = AppParts(2)
        // 24 sends of 12 apps, each kept by both parts; the last four not due yet.
        var sends: [NotificationRequested] = []
        var rows: [Mutation] = []
        for n in 0..<24 {
            let send = NotificationRequested(deliveryId: UUID(), mobileAppId: UUID(), target: NotificationTarget(userIds: ["u\(n)"]),
                                             content: NotificationContent(title: "t\(n)"), sendAt: at.addingTimeInterval(n < 20 ? Double(n) : 3600))
            sends.append(send)
            for part in parts.all { rows.append(.putDelivery(NotificationHandler.waiting(send, at: at.addingTimeInterval(-60), part: part))) }
        }
        try await store.commit(mutations: rows, offsets: [])

        var configuration = KafkaProducerConfiguration()
        configuration.bootstrapServers = broker.bootstrapServers
        let producer = try KafkaProducer(configuration: configuration, logger: Logger(label: "test"))
        func dueSends() -> DueSends {
            DueSends(producer: producer, store: store, topics: topics, parts: parts, logger: Logger(label: "test"), round: 5)
        }
        func partition(_ send: NotificationRequested, _ part: Int) -> Int32 {
            parts.partition(key: send.recordKey, part: part, partitions: partitions)
        }
        let now = at.addingTimeInterval(30)
        let due = sends.prefix(20).flatMap { send in parts.all.map { (send, $0) } }
        let first: Set<Int32> = [0, 1], second: Set<Int32> = [2, 3]
        let mine = due.filter { first.contains(partition($0.0, $0.1)) }
        XCTAssertGreaterThan(mine.count, 0)
        XCTAssertLessThan(mine.count, due.count, "both processors own some")

        let one = dueSends(), two = dueSends()
        let fired = try await one.fire(owned: first, partitions: partitions, now: now)
        XCTAssertEqual(fired, mine.count, "its own due sends, read past the others' in pages of 5")
        let again = try await one.fire(owned: first, partitions: partitions, now: now)
        XCTAssertEqual(again, 0, "not again while its firing is on its way")
        // Each round's firings are handed over as the records they are in the log (to be taken
        // into the event order without a fetch).
        let handed = Mutex<[ConsumedRecord]>([])
        let others = try await two.fire(owned: second, partitions: partitions, now: now) { records in handed.withLock { $0 += records } }
        XCTAssertEqual(others, due.count - mine.count)
        XCTAssertEqual(handed.withLock { $0.count }, others)

        let out = try await broker.kcat(["-C", "-t", topic, "-o", "beginning", "-e", "-q", "-f", "%p %o %s\\n"])
        var seen: [String: Int32] = [:], logged: [String: Data] = [:]
        for line in out.split(separator: "\n") {
            let fields = line.split(separator: " ", maxSplits: 2)
            let space = try XCTUnwrap(line.firstIndex(of: " "))
            logged["\(fields[0])/\(fields[1])"] = Data(fields[2].utf8)
            let envelope = try WireJSON.decoder().decode(Envelope<NotificationRequested>.self, from: Data(fields[2].utf8))
            let firing = envelope.payload
            XCTAssertEqual(firing.firing, true)
            let original = try XCTUnwrap(sends.first { $0.deliveryId == firing.deliveryId })
            var expected = original
            expected.firing = true
            XCTAssertEqual(firing, expected, "the kept send, marked as its firing")
            XCTAssertEqual(envelope.at, now)
            XCTAssertEqual(Int32(line[..<space]), partition(original, envelope.appPart), "its app part's partition")
            seen["\(firing.deliveryId)/\(envelope.appPart)"] = Int32(line[..<space])
        }
        XCTAssertEqual(seen.count, due.count, "each due send's part fired once, none not due")
        for record in handed.withLock({ $0 }) {
            XCTAssertEqual(record.partition.topic, topic)
            XCTAssertEqual(logged["\(record.partition.partition)/\(record.offset)"], record.value, "the firing at its place in the log")
            XCTAssertEqual(record.type, NotificationRequested.type.rawValue)
        }

        // A round goes on after the last send it read, past the head's sends whose firing is on its
        // way; a send kept later for an earlier time is found once reads start at the head again.
        let all = Set((0..<Int32(partitions)).map { $0 })
        let own = try await ProjectionStoreFactory.open("sqlite:" + directory.appendingPathComponent("cursor.sqlite").path,
                                                        logger: Logger(label: "test"))
        func keep(_ offset: Double) async throws -> NotificationRequested {
            let send = NotificationRequested(deliveryId: UUID(), mobileAppId: UUID(), target: NotificationTarget(userIds: ["u"]),
                                             content: NotificationContent(title: "t"), sendAt: now.addingTimeInterval(offset))
            try await own.commit(mutations: parts.all.map { .putDelivery(NotificationHandler.waiting(send, at: at, part: $0)) }, offsets: [])
            return send
        }
        let three = DueSends(producer: producer, store: own, topics: topics, parts: parts, logger: Logger(label: "test"), round: 5)
        var cursor = DueSends.Cursor()
        let later = now.addingTimeInterval(60)
        _ = try await keep(40)
        let kept = try await three.fire(owned: all, partitions: partitions, now: later, cursor: &cursor)
        XCTAssertEqual(kept, 2, "the new send's two parts")
        let headAt = try XCTUnwrap(cursor.headAt)
        let late = try await keep(-20)  // kept late: due before the last one read
        let next = try await keep(50)
        func firing(_ cursor: inout DueSends.Cursor) async throws -> Set<UUID> {
            let handed = Mutex<Set<UUID>>([])
            _ = try await three.fire(owned: all, partitions: partitions, now: later, cursor: &cursor) { records in
                let ids = records.compactMap { try? WireJSON.decoder().decode(Envelope<NotificationRequested>.self, from: $0.value).payload.deliveryId }
                handed.withLock { $0.formUnion(ids) }
            }
            return handed.withLock { $0 }
        }
        let fromCursor = try await firing(&cursor)
        XCTAssertEqual(fromCursor, [next.deliveryId], "only the send after the last one read")
        XCTAssertEqual(cursor.headAt, headAt, "not at the head again yet")
        cursor.headAt = headAt - DueSends.rescan
        let fromHead = try await firing(&cursor)
        XCTAssertEqual(fromHead, [late.deliveryId], "the send kept late, from the head; the others are on their way")
        XCTAssertNotEqual(cursor.headAt, headAt - DueSends.rescan, "read from the head")
        await own.close()
        await producer.shutdown()
        await store.close()
    }
}
