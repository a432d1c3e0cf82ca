import Foundation
import Kafka
import TestSupport
import XCTest

/// Behaviour without any broker: a free port nothing listens on.
final class UnreachableBrokerTests: XCTestCase {
    private func unreachableProducer() throws -> KafkaProducer {
        var configuration = KafkaProducerConfiguration()
        configuration.bootstrapServers = "127.0.0.1:\(TestBroker.freePort())"
        configuration.deliveryTimeout = .milliseconds(1_500)
        return try KafkaProducer(configuration: configuration, logger: KafkaTestSupport.logger)
    }

    func testSendToAnUnreachableBrokerThrowsTimedOutAfterTheDeliveryTimeout() async throws {
        let producer = try unreachableProducer()
        let started = ContinuousClock.now
        do {
            _ = try await producer.send(KafkaProducerRecord(topic: "nowhere", key: "k", value: Data("v".utf8)))
            XCTFail("send must throw")
        } catch let error as KafkaError {
            XCTAssertEqual(error.name, "_MSG_TIMED_OUT")
            XCTAssertTrue(error.isRetriable)
        }
        let elapsed = ContinuousClock.now - started
        XCTAssertGreaterThanOrEqual(elapsed, .milliseconds(1_000))
        XCTAssertLessThan(elapsed, .seconds(5))
        await producer.shutdown()
    }

    /// librdkafka's per-message error string of a delivery report is the record's payload, so
    /// the error must be described by its code instead (the payload is neither an explanation
    /// nor NUL-terminated).
    func testAFailedDeliveryIsDescribedByItsErrorNotByTheRecord() async throws {
        let producer = try unreachableProducer()
        do {
            _ = try await producer.send(KafkaProducerRecord(topic: "nowhere", key: "k", value: Data("record-body".utf8)))
            XCTFail("send must throw")
        } catch let error as KafkaError {
            XCTAssertEqual(error.name, "_MSG_TIMED_OUT")
            XCTAssertFalse(error.message.contains("record-body"), error.message)
            XCTAssertEqual(error.message, "Local: Message timed out")
        }
        await producer.shutdown()
    }

    func testBatchSendToAnUnreachableBrokerThrowsTimedOutOnceAllReportsAreIn() async throws {
        let producer = try unreachableProducer()
        do {
            _ = try await producer.send(KafkaTestSupport.records(topic: "nowhere", count: 10))
            XCTFail("send must throw")
        } catch let error as KafkaError {
            XCTAssertEqual(error.name, "_MSG_TIMED_OUT")
        }
        await producer.shutdown()
    }

    func testBrokerIsNotReachableWhenNothingListens() async throws {
        let producer = try unreachableProducer()
        let started = ContinuousClock.now
        let reachable = await producer.isBrokerReachable(timeout: .milliseconds(500))
        XCTAssertFalse(reachable)
        XCTAssertLessThan(ContinuousClock.now - started, .seconds(3))
        await producer.shutdown()
    }
}
