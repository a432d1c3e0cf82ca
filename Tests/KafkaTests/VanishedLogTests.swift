import Foundation
import Kafka
import TestSupport
import XCTest

/// A stored offset beyond a partition's end means the log the application's state was
/// built from is gone (a memory broker restarted); the batches must end, not wait.
final class VanishedLogTests: XCTestCase {
    private var broker: TestBroker!

    override func setUp() async throws {
        broker = try await TestBroker.start()
    }

    override func tearDown() async throws {
        try await broker?.stop()
    }

    func testStartOffsetBeyondTheEndEndsTheBatchesWithAVanishedLogError() async throws {
        try await KafkaAdmin.createTopics([("ledger", 2)], bootstrapServers: broker.bootstrapServers)
        let producer = try KafkaProducer.make(broker)
        let reports = try await producer.send(KafkaTestSupport.records(topic: "ledger", count: 20))
        await producer.shutdown()
        let end = reports.filter { $0.partition == 1 }.count
        let consumer = try KafkaConsumer(
            configuration: KafkaTestSupport.consumerConfiguration(broker),
            topics: ["ledger"],
            rebalance: KafkaRebalanceHandler(
                onAssign: { _ in [TopicPartition(topic: "ledger", partition: 1): 100] },
                onRevoke: { _ in }
            ),
            logger: KafkaTestSupport.logger
        )

        do {
            _ = try await KafkaTestSupport.collect(consumer, count: 1000, within: .seconds(20))
            XCTFail("the batches must end with an error")
        } catch let error as KafkaError {
            XCTAssertEqual(error.name, "OFFSET_OUT_OF_RANGE")
            XCTAssertFalse(error.isRetriable)
            XCTAssertTrue(
                error.message.contains("stored offset 100 is beyond the end \(end) of ledger[1]"),
                error.message
            )
            XCTAssertTrue(error.message.contains("no longer exists"), error.message)
        }
        await consumer.close()
    }

    func testStartOffsetAtTheEndWaitsForNewRecords() async throws {
        try await KafkaAdmin.createTopics([("tail", 1)], bootstrapServers: broker.bootstrapServers)
        let producer = try KafkaProducer.make(broker)
        _ = try await producer.send(KafkaTestSupport.records(topic: "tail", count: 3))
        let partition = TopicPartition(topic: "tail", partition: 0)
        let consumer = try KafkaConsumer(
            configuration: KafkaTestSupport.consumerConfiguration(broker),
            topics: ["tail"],
            rebalance: KafkaRebalanceHandler(onAssign: { _ in [partition: 3] }, onRevoke: { _ in }),
            logger: KafkaTestSupport.logger
        )
        // The iterator must be waiting, otherwise nothing is fetched.
        let reading = Task { try await KafkaTestSupport.collect(consumer, count: 1) }
        try await KafkaTestSupport.eventually("a fetch response reported the end") { consumer.highWatermark(partition) == 3 }

        _ = try await producer.send(KafkaTestSupport.records(topic: "tail", count: 1, prefix: "new-"))
        let messages = try await reading.value

        XCTAssertEqual(messages.map(\.offset), [3])
        XCTAssertEqual(messages.first?.key, "new-key-0")
        await consumer.close()
        await producer.shutdown()
    }
}
