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
        await producer.shutdown()
        await store.close()
    }
}
