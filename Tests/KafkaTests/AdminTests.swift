import Foundation
import Kafka
import TestSupport
import XCTest

final class AdminTests: XCTestCase {
    private var broker: TestBroker!

    override func setUp() async throws {
        broker = try await TestBroker.start()
    }

    override func tearDown() async throws {
        try await broker?.stop()
    }

    private func partitionCount(_ topic: String) async throws -> Int {
        let listing = try await broker.kcat(["-L", "-t", topic])
        let pattern = "topic \"\(topic)\" with "
        guard let range = listing.range(of: pattern) else { return 0 }
        return Int(listing[range.upperBound...].prefix { $0.isNumber }) ?? 0
    }

    func testCreateTopicsCreatesTheRequestedPartitionCountsAndIsIdempotent() async throws {
        try await KafkaAdmin.createTopics([("commands", 6), ("events", 2)], bootstrapServers: broker.bootstrapServers)
        try await KafkaAdmin.createTopics([("commands", 9), ("outbox", 3)], bootstrapServers: broker.bootstrapServers)

        let commands = try await partitionCount("commands")
        let events = try await partitionCount("events")
        let outbox = try await partitionCount("outbox")
        XCTAssertEqual(commands, 6, "an existing topic keeps its partitions")
        XCTAssertEqual(events, 2)
        XCTAssertEqual(outbox, 3)
    }

    func testPartitionsListsEveryPartitionOfTheAskedTopicsOnly() async throws {
        try await KafkaAdmin.createTopics([("commands", 3), ("events", 2)], bootstrapServers: broker.bootstrapServers)
        let partitions = try await KafkaAdmin.partitions(of: ["commands", "missing"], bootstrapServers: broker.bootstrapServers)
        XCTAssertEqual(partitions, (0..<3).map { TopicPartition(topic: "commands", partition: $0) })
    }

    func testCreateTopicsWithAnInvalidPartitionCountThrowsKafkaError() async throws {
        do {
            try await KafkaAdmin.createTopics([("broken", 0)], bootstrapServers: broker.bootstrapServers)
            XCTFail("zero partitions must be refused (Tansu would create an unusable topic)")
        } catch let error as KafkaError {
            XCTAssertEqual(error.name, "_INVALID_ARG")
            XCTAssertTrue(error.message.contains("broken"), error.message)
        }
    }
}
