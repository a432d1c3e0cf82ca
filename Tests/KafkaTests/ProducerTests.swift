import Contracts
import Foundation
import Kafka
import Logging
import TestSupport
import XCTest

final class ProducerTests: XCTestCase {
    private var broker: TestBroker!

    override func setUp() async throws {
        broker = try await TestBroker.start()
    }

    override func tearDown() async throws {
        try await broker?.stop()
    }

    func testSendingOneRecordReturnsItsDeliveryReportAndTheRecordReadsBackIntact() async throws {
        try await KafkaAdmin.createTopics([("single", 1)], bootstrapServers: broker.bootstrapServers)
        let producer = try KafkaProducer.make(broker)

        let first = try await producer.send(
            KafkaProducerRecord(
                topic: "single",
                key: "user-1",
                value: Data("hello".utf8),
                headers: [KafkaHeader(name: "type", value: "greeting"), KafkaHeader(name: "v", value: "1")]
            )
        )
        let second = try await producer.send(KafkaProducerRecord(topic: "single", key: nil, value: Data("world".utf8)))
        await producer.shutdown()

        XCTAssertEqual(first, KafkaDeliveryReport(topic: "single", partition: 0, offset: 0))
        XCTAssertEqual(second, KafkaDeliveryReport(topic: "single", partition: 0, offset: 1))
        let lines = try await broker.kcat(["-C", "-t", "single", "-e", "-q", "-f", "%o|%k|%s|%h\n"])
            .split(separator: "\n").map(String.init)
        XCTAssertEqual(lines, ["0|user-1|hello|type=greeting,v=1", "1||world|"])
    }

    /// Shards rest on knowing where librdkafka's partitioner puts a key (`RecordKey.partition`):
    /// the processor checks that every command is in its app's shard.
    func testKeysLandInThePartitionRecordKeyComputes() async throws {
        try await KafkaAdmin.createTopics([("keyed", 12)], bootstrapServers: broker.bootstrapServers)
        let producer = try KafkaProducer.make(broker)
        let keys = (0..<200).map { _ in RecordKey.app(UUID()) } + ["a", "admin-token:x", "ü/😀"]
        let reports = try await producer.send(keys.map { KafkaProducerRecord(topic: "keyed", key: $0, value: Data("v".utf8)) })
        await producer.shutdown()
        XCTAssertEqual(reports.map(\.partition), keys.map { RecordKey.partition(of: $0, partitions: 12) })
        XCTAssertGreaterThan(Set(reports.map(\.partition)).count, 6, "the keys spread over the partitions")
    }

    func testSendingABatchReturnsReportsInRecordOrderWithIncreasingOffsets() async throws {
        try await KafkaAdmin.createTopics([("batch", 1)], bootstrapServers: broker.bootstrapServers)
        let producer = try KafkaProducer.make(broker)

        let reports = try await producer.send(KafkaTestSupport.records(topic: "batch", count: 500))
        let more = try await producer.send(KafkaTestSupport.records(topic: "batch", count: 3, prefix: "more-"))
        await producer.shutdown()

        XCTAssertEqual(reports.map(\.offset), (0..<500).map(Int64.init))
        XCTAssertEqual(more.map(\.offset), [500, 501, 502])
        XCTAssertTrue((reports + more).allSatisfy { $0.topic == "batch" && $0.partition == 0 })
        let lines = try await broker.kcat(["-C", "-t", "batch", "-e", "-q", "-f", "%o|%k|%s|%h\n"])
            .split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.count, 503)
        XCTAssertEqual(lines[0], "0|key-0|value-0|index=0")
        XCTAssertEqual(lines[499], "499|key-499|value-499|index=499")
        XCTAssertEqual(lines[502], "502|more-key-2|more-value-2|index=2")
    }

    /// Records written in place into the one reused buffer read back as written: each its own
    /// key, headers and value (a short value after a long one keeps nothing of it).
    func testRecordsWrittenInPlaceReadBackAsWritten() async throws {
        try await KafkaAdmin.createTopics([("in-place", 1)], bootstrapServers: broker.bootstrapServers)
        let producer = try KafkaProducer.make(broker)
        let values = (0..<300).map { n in n % 2 == 0 ? String(repeating: "v", count: 2_000) + "-\(n)" : "short-\(n)" }

        try await producer.send(count: values.count, topic: "in-place") { index, record in
            record.key = index % 3 == 0 ? nil : "key-\(index)"
            record.headers = index % 2 == 0 ? [KafkaHeader(name: "type", value: "long")] : []
            record.value.append(contentsOf: values[index].utf8)
        }
        await producer.shutdown()

        let lines = try await broker.kcat(["-C", "-t", "in-place", "-e", "-q", "-f", "%k|%h|%s\n"])
            .split(separator: "\n").map(String.init)
        XCTAssertEqual(lines, values.indices.map { index in
            "\(index % 3 == 0 ? "" : "key-\(index)")|\(index % 2 == 0 ? "type=long" : "")|\(values[index])"
        })
    }

    /// Records librdkafka refuses (its local queue is full) fail the send once the others are
    /// delivered; after a shutdown every record is refused.
    func testAnInPlaceSendFailsWhenRecordsAreRefusedAndAfterShutdown() async throws {
        try await KafkaAdmin.createTopics([("refused", 1)], bootstrapServers: broker.bootstrapServers)
        var configuration = KafkaProducerConfiguration()
        configuration.bootstrapServers = broker.bootstrapServers
        configuration.properties = ["queue.buffering.max.messages": "10"]
        let producer = try KafkaProducer(configuration: configuration, logger: Logger(label: "test"))
        do {
            try await producer.send(count: 50, topic: "refused") { index, record in record.value.append(UInt8(index)) }
            XCTFail("a send past the local queue must throw")
        } catch let error as KafkaError {
            XCTAssertEqual(error.name, "_QUEUE_FULL")
        }
        let delivered = try await broker.kcat(["-C", "-t", "refused", "-e", "-q", "-f", "%o\n"]).split(separator: "\n")
        XCTAssertEqual(delivered.count, 10, "the records that fitted the queue are delivered")

        await producer.shutdown()
        do {
            try await producer.send(count: 3, topic: "refused") { _, record in record.value.append(1) }
            XCTFail("send after shutdown must throw")
        } catch let error as KafkaError {
            XCTAssertEqual(error.name, "_DESTROY")
        }
    }

    func testBrokerIsReachableWhileItRunsAndSendAfterShutdownFails() async throws {
        let producer = try KafkaProducer.make(broker)
        let reachable = await producer.isBrokerReachable(timeout: .seconds(5))
        XCTAssertTrue(reachable)

        await producer.shutdown()
        await producer.shutdown()
        do {
            _ = try await producer.send(KafkaProducerRecord(topic: "late", key: nil, value: Data()))
            XCTFail("send after shutdown must throw")
        } catch let error as KafkaError {
            XCTAssertEqual(error.name, "_DESTROY")
        }
        let reachableAfterShutdown = await producer.isBrokerReachable(timeout: .seconds(1))
        XCTAssertFalse(reachableAfterShutdown)
    }

    /// `properties` (PUSHLINE_KAFKA_PROPERTIES) reach the connection: asked to speak TLS to this
    /// plaintext broker, the producer gets no acknowledgement, where the same producer without
    /// the setting does.
    func testTLSPropertiesPassedThroughApplyToTheBrokerConnection() async throws {
        try await KafkaAdmin.createTopics([("tls", 1)], bootstrapServers: broker.bootstrapServers)
        var configuration = KafkaProducerConfiguration()
        configuration.bootstrapServers = broker.bootstrapServers
        configuration.deliveryTimeout = .seconds(2)
        let plain = try KafkaProducer(configuration: configuration, logger: KafkaTestSupport.logger)
        configuration.properties = ["security.protocol": "ssl", "enable.ssl.certificate.verification": "false"]
        let tls = try KafkaProducer(configuration: configuration, logger: KafkaTestSupport.logger)

        let delivered = try await plain.send(KafkaProducerRecord(topic: "tls", key: nil, value: Data("plain".utf8)))
        XCTAssertEqual(delivered.offset, 0)
        do {
            _ = try await tls.send(KafkaProducerRecord(topic: "tls", key: nil, value: Data("tls".utf8)))
            XCTFail("a TLS client cannot deliver to a plaintext listener")
        } catch let error as KafkaError {
            XCTAssertEqual(error.name, "_MSG_TIMED_OUT")
        }
        await plain.shutdown()
        await tls.shutdown()
    }
}

extension KafkaProducer {
    static func make(_ broker: TestBroker) throws -> KafkaProducer {
        try KafkaTestSupport.producer(broker)
    }
}
