import Foundation
import Kafka
import Synchronization
import TestSupport
import XCTest

final class ConsumerTests: XCTestCase {
    private var broker: TestBroker!

    override func setUp() async throws {
        broker = try await TestBroker.start()
    }

    override func tearDown() async throws {
        try await broker?.stop()
    }

    private func produce(_ topic: String, partitions: Int, count: Int) async throws -> [KafkaDeliveryReport] {
        try await KafkaAdmin.createTopics([(topic, partitions)], bootstrapServers: broker.bootstrapServers)
        let producer = try KafkaProducer.make(broker)
        let reports = try await producer.send(KafkaTestSupport.records(topic: topic, count: count))
        await producer.shutdown()
        return reports
    }

    func testConsumerReadsEverythingProducedAcrossPartitionsWithKeysValuesAndHeadersIntact() async throws {
        let reports = try await produce("events", partitions: 4, count: 300)
        XCTAssertEqual(Set(reports.map(\.partition)), [0, 1, 2, 3], "the keys spread over all partitions")
        let consumer = try KafkaConsumer(
            configuration: KafkaTestSupport.consumerConfiguration(broker),
            topics: ["events"],
            rebalance: KafkaTestSupport.startAtBeginning,
            logger: KafkaTestSupport.logger
        )

        let messages = try await KafkaTestSupport.collect(consumer, count: 300)

        XCTAssertEqual(messages.count, 300)
        XCTAssertEqual(
            Set(messages.map { "\($0.partition)/\($0.offset)" }),
            Set(reports.map { "\($0.partition)/\($0.offset)" })
        )
        for message in messages {
            let index = message.headers.first { $0.name == "index" }?.value ?? "?"
            XCTAssertEqual(message.key, "key-\(index)")
            XCTAssertEqual(String(decoding: message.value, as: UTF8.self), "value-\(index)")
            XCTAssertEqual(message.topic, "events")
            XCTAssertNotNil(message.timestamp)
        }
        for partition in Int32(0)..<4 {
            let offsets = messages.filter { $0.partition == partition }.map(\.offset)
            XCTAssertEqual(offsets, offsets.sorted(), "partition \(partition) is delivered in order")
        }
        XCTAssertEqual(
            consumer.assignment,
            Set((0..<4).map { TopicPartition(topic: "events", partition: $0) })
        )
        await consumer.close()
        XCTAssertEqual(consumer.assignment, [])
    }

    func testOnAssignOffsetsAreHonouredAndMissingPartitionsStartAtTheBeginning() async throws {
        let reports = try await produce("orders", partitions: 2, count: 40)
        let counts = Dictionary(grouping: reports, by: \.partition).mapValues(\.count)
        XCTAssertGreaterThan(counts[0] ?? 0, 5, "partition 0 must hold more than 5 records for this test")
        let assigned = Mutex<[TopicPartition]>([])
        let partition0 = TopicPartition(topic: "orders", partition: 0)
        let consumer = try KafkaConsumer(
            configuration: KafkaTestSupport.consumerConfiguration(broker),
            topics: ["orders"],
            rebalance: KafkaRebalanceHandler(
                onAssign: { partitions in
                    assigned.withLock { $0 += partitions }
                    return [partition0: 5]
                },
                onRevoke: { _ in }
            ),
            logger: KafkaTestSupport.logger
        )

        let messages = try await KafkaTestSupport.collect(consumer, count: 40 - 5)

        XCTAssertEqual(Set(assigned.withLock { $0 }), [partition0, TopicPartition(topic: "orders", partition: 1)])
        let fromPartition0 = messages.filter { $0.partition == 0 }.map(\.offset)
        let fromPartition1 = messages.filter { $0.partition == 1 }.map(\.offset)
        XCTAssertEqual(fromPartition0, Array(5..<Int64(counts[0]!)))
        XCTAssertEqual(fromPartition1, Array(0..<Int64(counts[1] ?? 0)))
        XCTAssertEqual(consumer.highWatermark(partition0), Int64(counts[0]!))
        await consumer.close()
    }

    func testGivenPartitionsAreReadFromTheirOffsetsAloneWithoutAGroup() async throws {
        let reports = try await produce("ledger", partitions: 3, count: 90)
        let counts = Dictionary(grouping: reports, by: \.partition).mapValues(\.count)
        XCTAssertGreaterThan(counts[0] ?? 0, 7, "partition 0 must hold more than 7 records for this test")
        XCTAssertGreaterThan(counts[1] ?? 0, 0, "partition 1 must hold records for this test")
        let partition0 = TopicPartition(topic: "ledger", partition: 0)
        let partition2 = TopicPartition(topic: "ledger", partition: 2)
        let consumer = try KafkaConsumer(
            configuration: KafkaTestSupport.consumerConfiguration(broker),
            partitions: [partition0, partition2],
            startingAt: [partition0: 7],
            logger: KafkaTestSupport.logger
        )

        let expected = counts[0]! - 7 + (counts[2] ?? 0)
        let messages = try await KafkaTestSupport.collect(consumer, count: expected)

        XCTAssertEqual(messages.count, expected)
        XCTAssertEqual(messages.filter { $0.partition == 0 }.map(\.offset), Array(7..<Int64(counts[0]!)))
        XCTAssertEqual(messages.filter { $0.partition == 2 }.map(\.offset), Array(0..<Int64(counts[2] ?? 0)))
        XCTAssertFalse(messages.contains { $0.partition == 1 }, "a partition not given is not read")
        XCTAssertEqual(consumer.assignment, [partition0, partition2])
        XCTAssertEqual(consumer.highWatermark(partition0), Int64(counts[0]!))
        await consumer.close()
    }

    func testSeekMovesTheReadPositionBackEvenPastAlreadyPrefetchedBatches() async throws {
        _ = try await produce("replay", partitions: 1, count: 10)
        var configuration = KafkaTestSupport.consumerConfiguration(broker)
        configuration.maxBatchSize = 2
        let consumer = try KafkaConsumer(
            configuration: configuration,
            topics: ["replay"],
            rebalance: KafkaTestSupport.startAtBeginning,
            logger: KafkaTestSupport.logger
        )
        let partition = TopicPartition(topic: "replay", partition: 0)

        let first = try await KafkaTestSupport.collect(consumer, count: 4)
        // Let the poller prefetch the next batch and wait with a third one in hand.
        try await Task.sleep(for: .milliseconds(500))
        try consumer.seek(partition, to: 1)
        let again = try await KafkaTestSupport.collect(consumer, count: 9)

        XCTAssertEqual(first.map(\.offset), [0, 1, 2, 3])
        XCTAssertEqual(again.map(\.offset), Array(1..<10))
        XCTAssertEqual(consumer.highWatermark(partition), 10)
        XCTAssertThrowsError(try consumer.seek(TopicPartition(topic: "replay", partition: 7), to: 0))
        await consumer.close()
        XCTAssertThrowsError(try consumer.seek(partition, to: 0))
        XCTAssertNil(consumer.highWatermark(partition))
    }

    func testCommittedOffsetsAreWhereAnotherGroupClientResumes() async throws {
        _ = try await produce("lag", partitions: 1, count: 10)
        let consumer = try KafkaConsumer(
            configuration: KafkaTestSupport.consumerConfiguration(broker, group: "lag-tool"),
            topics: ["lag"],
            rebalance: KafkaTestSupport.startAtBeginning,
            logger: KafkaTestSupport.logger
        )
        _ = try await KafkaTestSupport.collect(consumer, count: 10)

        consumer.commit([TopicPartition(topic: "lag", partition: 0): 6])
        // Closing waits for commits in flight.
        await consumer.close()

        let resumed = try await broker.kcat([
            "-G", "lag-tool", "-X", "session.timeout.ms=2000", "-X", "heartbeat.interval.ms=500",
            "-X", "auto.offset.reset=latest", "-e", "-q", "-f", "%o\n", "lag",
        ])
        XCTAssertEqual(resumed.split(separator: "\n"), ["6", "7", "8", "9"])
    }

    func testAnOnAssignErrorEndsTheBatchesWithThatError() async throws {
        struct StoreUnavailable: Error {}
        _ = try await produce("failing", partitions: 1, count: 1)
        let consumer = try KafkaConsumer(
            configuration: KafkaTestSupport.consumerConfiguration(broker),
            topics: ["failing"],
            rebalance: KafkaRebalanceHandler(onAssign: { _ in throw StoreUnavailable() }, onRevoke: { _ in }),
            logger: KafkaTestSupport.logger
        )

        do {
            _ = try await KafkaTestSupport.collect(consumer, count: 1)
            XCTFail("the batches must end with the onAssign error")
        } catch is StoreUnavailable {
            // expected
        }
        XCTAssertEqual(consumer.assignment, [])
        await consumer.close()
    }

    func testClosingEndsTheBatchesOfAWaitingIterator() async throws {
        try await KafkaAdmin.createTopics([("quiet", 1)], bootstrapServers: broker.bootstrapServers)
        let consumer = try KafkaConsumer(
            configuration: KafkaTestSupport.consumerConfiguration(broker),
            topics: ["quiet"],
            rebalance: KafkaTestSupport.startAtBeginning,
            logger: KafkaTestSupport.logger
        )
        let iteration = Task {
            var batches = 0
            for try await _ in consumer.batches() { batches += 1 }
            return batches
        }
        try await KafkaTestSupport.eventually("the consumer is assigned its partition") { !consumer.assignment.isEmpty }

        await consumer.close()
        await consumer.close()

        let batches = try await iteration.value
        XCTAssertEqual(batches, 0)
        XCTAssertEqual(consumer.assignment, [])
    }

    func testWakeGivesAWaitingIteratorAnEmptyTurnAndALaterOneOnce() async throws {
        let reports = try await produce("woken", partitions: 1, count: 3)
        let partition = TopicPartition(topic: "woken", partition: 0)
        let consumer = try KafkaConsumer(configuration: KafkaTestSupport.consumerConfiguration(broker), partitions: [partition],
                                         startingAt: [partition: Int64(reports.count)], logger: KafkaTestSupport.logger)
        var batches = consumer.batches().makeAsyncIterator()
        // Nothing to read: a wake while the iterator waits is an empty turn.
        let waiting = Task { try await batches.next() }
        try await Task.sleep(for: .milliseconds(300))
        consumer.wake()
        let turn = try await waiting.value
        XCTAssertEqual(turn?.count, 0)
        // Wakes before the next turn count as one, and a record written meanwhile comes after it.
        consumer.wake()
        consumer.wake()
        var iterator = consumer.batches().makeAsyncIterator()
        let woken = try await iterator.next()
        XCTAssertEqual(woken?.count, 0)
        let producer = try KafkaProducer.make(broker)
        _ = try await producer.send(KafkaTestSupport.records(topic: "woken", count: 1, prefix: "late"))
        await producer.shutdown()
        let next = try await iterator.next()
        XCTAssertEqual(next?.map(\.offset), [Int64(reports.count)], "the second wake gave no second empty turn")
        await consumer.close()
    }
}
