import Kafka
import Processor
@testable import Handlers
import Projections
import XCTest

/// `pushline lag`'s arithmetic: the store keeps the next offset to apply, the broker's end
/// offset is the next offset to be written, so the lag is their difference.
final class ConsumerLagTests: XCTestCase {
    private let topics = ["p.commands.admin", "p.commands.registration"]

    func testLagIsEndOffsetMinusStoredNextOffset() {
        let rows = ConsumerLag.rows(topics: topics,
                                    endOffsets: [TopicPartition(topic: topics[0], partition: 0): 10],
                                    applied: [PartitionKey(topic: topics[0], partition: 0): 7])
        XCTAssertEqual(rows, [PartitionLag(topic: topics[0], partition: 0, endOffset: 10, appliedOffset: 7)])
        XCTAssertEqual(rows.first?.lag, 3, "records at offsets 7, 8 and 9 are not applied yet")
    }

    func testCaughtUpPartitionHasLagZero() {
        let rows = ConsumerLag.rows(topics: topics, endOffsets: [TopicPartition(topic: topics[1], partition: 2): 5],
                                    applied: [PartitionKey(topic: topics[1], partition: 2): 5])
        XCTAssertEqual(rows.map(\.lag), [0])
    }

    func testShardsSumTheLagAndTheAppliedOffsetsOfTheirPartitionsInEveryTopic() {
        let rows = ConsumerLag.rows(topics: topics,
                                    endOffsets: [TopicPartition(topic: topics[0], partition: 0): 10, TopicPartition(topic: topics[1], partition: 0): 4,
                                                 TopicPartition(topic: topics[0], partition: 1): 2, TopicPartition(topic: topics[1], partition: 1): 3],
                                    applied: [PartitionKey(topic: topics[0], partition: 0): 7, PartitionKey(topic: topics[1], partition: 0): 4,
                                              PartitionKey(topic: topics[1], partition: 1): 5])
        XCTAssertEqual(ConsumerLag.shards(rows), [ShardLag(shard: 0, lag: 3, applied: 11),
                                                  ShardLag(shard: 1, lag: 2, applied: 5)],
                       "a store ahead of the log (-2) adds no lag")
    }

    func testPartitionWithoutStoredOffsetLagsByItsWholeLog() {
        let rows = ConsumerLag.rows(topics: topics, endOffsets: [TopicPartition(topic: topics[0], partition: 1): 4], applied: [:])
        XCTAssertEqual(rows.map(\.lag), [4])
        XCTAssertEqual(rows.map(\.appliedOffset), [nil])
    }

    func testStoreAheadOfTheLogShowsNegativeLag() {
        let rows = ConsumerLag.rows(topics: topics, endOffsets: [TopicPartition(topic: topics[0], partition: 0): 2],
                                    applied: [PartitionKey(topic: topics[0], partition: 0): 9])
        XCTAssertEqual(rows.map(\.lag), [-7])
    }

    func testPartitionUnknownToTheBrokerHasNoLagAndRowsAreOrderedByTopicsThenPartition() {
        let rows = ConsumerLag.rows(
            topics: topics,
            endOffsets: [TopicPartition(topic: topics[1], partition: 1): 1, TopicPartition(topic: topics[1], partition: 0): 1,
                         TopicPartition(topic: "other", partition: 0): 8],
            applied: [PartitionKey(topic: topics[0], partition: 3): 2])
        XCTAssertEqual(rows.map { "\($0.topic)[\($0.partition)]" }, ["p.commands.admin[3]", "p.commands.registration[0]", "p.commands.registration[1]"])
        XCTAssertEqual(rows.first?.endOffset, nil)
        XCTAssertEqual(rows.first?.lag, nil)
    }
}
