import Foundation
import Kafka
import TestSupport
import XCTest

/// Several idempotent producers appending to one partition of the durable broker at once, as
/// ingest and the processor's progress marks do (or several ingest replicas). The broker keeps
/// its producers' sequence numbers and the partition's end in objects it rewrites with
/// conditional writes; `scripts/s3-store` makes the local object store honour them. Over the
/// store without them, the producers failed with OUT_OF_ORDER_SEQUENCE_NUMBER and most records
/// were lost.
final class DurableBrokerWritersTests: XCTestCase {
    private var broker: TestBroker!

    override func setUp() async throws {
        broker = try await TestBroker.start(durable: true)
        try await KafkaAdmin.createTopics([("writers", 1)], bootstrapServers: broker.bootstrapServers)
    }

    override func tearDown() async throws {
        try await broker?.stop()
    }

    func testThreeProducersAppendingToOnePartitionAtOnceAllDeliverEveryRecordInTheirOrder() async throws {
        let producers = 3, batches = 40, perBatch = 50
        try await withThrowingTaskGroup(of: Void.self) { group in
            for p in 0..<producers {
                group.addTask { [broker] in
                    let producer = try KafkaTestSupport.producer(broker!)
                    for b in 0..<batches {
                        let records = (0..<perBatch).map { n in
                            KafkaProducerRecord(topic: "writers", key: "p\(p)", value: Data("\(p):\(b * perBatch + n)".utf8), partition: 0)
                        }
                        _ = try await producer.send(records)
                    }
                    await producer.shutdown()
                }
            }
            try await group.waitForAll()
        }
        let total = producers * batches * perBatch
        var configuration = KafkaTestSupport.consumerConfiguration(broker)
        configuration.fetchWaitMax = .seconds(2)
        let consumer = try KafkaConsumer(configuration: configuration, partitions: [TopicPartition(topic: "writers", partition: 0)],
                                         startingAt: [:], logger: KafkaTestSupport.logger)
        let messages = try await KafkaTestSupport.collect(consumer, count: total, within: .seconds(120))
        XCTAssertEqual(messages.count, total)
        XCTAssertEqual(messages.map(\.offset), (0..<Int64(total)).map { $0 }, "offsets dense and distinct")
        var seen = [[Int]](repeating: [], count: producers)
        for message in messages {
            let parts = String(decoding: message.value, as: UTF8.self).split(separator: ":").compactMap { Int($0) }
            seen[parts[0]].append(parts[1])
        }
        for p in 0..<producers {
            XCTAssertEqual(seen[p], Array(0..<(batches * perBatch)), "producer \(p)'s records, each once, in order")
        }
    }
}
