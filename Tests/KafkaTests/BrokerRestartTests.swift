import Foundation
import Kafka
import TestSupport
import XCTest

/// The producer while its (durable) broker is stopped and started again on the same port and log.
final class BrokerRestartTests: XCTestCase {
    private var broker: TestBroker!

    override func setUp() async throws {
        broker = try await TestBroker.start(durable: true)
        try await KafkaAdmin.createTopics([("restart", 1)], bootstrapServers: broker.bootstrapServers)
    }

    override func tearDown() async throws {
        try await broker?.stop()
    }

    private func producer() throws -> KafkaProducer {
        var configuration = KafkaProducerConfiguration()
        configuration.bootstrapServers = broker.bootstrapServers
        configuration.deliveryTimeout = .seconds(1)
        return try KafkaProducer(configuration: configuration, logger: KafkaTestSupport.logger)
    }

    private func record(_ value: String) -> KafkaProducerRecord {
        KafkaProducerRecord(topic: "restart", key: "k", value: Data(value.utf8))
    }

    /// librdkafka notices a delivery timeout only when the broker's thread wakes; with its
    /// default reconnect backoff (up to 10 s) sends to a broker that went away failed up to
    /// ten times later than their 1 s bound.
    func testSendsWhileTheBrokerIsDownFailSoonAfterTheDeliveryTimeout() async throws {
        let producer = try producer()
        _ = try await producer.send(record("before"))
        try await broker.stopKeepingLog()
        for n in 0..<5 {
            let started = ContinuousClock.now
            do {
                _ = try await producer.send(record("during-\(n)"))
                XCTFail("a send without a broker must fail")
            } catch let error as KafkaError {
                XCTAssertEqual(error.name, "_MSG_TIMED_OUT")
            }
            let elapsed = ContinuousClock.now - started
            XCTAssertLessThan(elapsed, .seconds(3), "send \(n) failed only after \(elapsed)")
        }
        await producer.shutdown()
    }

    /// A record that timed out makes librdkafka bump the idempotent producer's epoch by itself;
    /// Tansu refuses the bumped epoch with PRODUCER_FENCED on every later record, and librdkafka
    /// never gets out of that. The producer replaces such a handle, so sending works again.
    func testSendsSucceedAgainAfterRecordsTimedOutWhileTheBrokerWasDown() async throws {
        let producer = try producer()
        let before = try await producer.send(record("before"))
        XCTAssertEqual(before.offset, 0)
        try await broker.stopKeepingLog()
        do {
            _ = try await producer.send(record("during"))
            XCTFail("a send without a broker must fail")
        } catch let error as KafkaError {
            XCTAssertEqual(error.name, "_MSG_TIMED_OUT")
        }
        try await broker.startAgain()

        // The first sends after the restart may fail (the fenced handle's last ones); then
        // sends succeed, and their records follow the one from before the outage.
        var failures: [KafkaError] = []
        var delivered: KafkaDeliveryReport?
        for n in 0..<40 {
            do {
                delivered = try await producer.send(record("after-\(n)"))
                break
            } catch let error as KafkaError {
                failures.append(error)
                try await Task.sleep(for: .milliseconds(250))
            }
        }
        XCTAssertNotNil(delivered, "no send succeeded after the broker came back: \(failures.map(\.description))")
        let more = try await producer.send(KafkaTestSupport.records(topic: "restart", count: 10, prefix: "more-"))
        XCTAssertEqual(more.count, 10)
        await producer.shutdown()
        print("sends that failed after the restart before one succeeded: \(failures.map(\.name))")

        let values = try await broker.kcat(["-C", "-t", "restart", "-e", "-q", "-f", "%s\n"]).split(separator: "\n")
        XCTAssertEqual(values.first, "before")
        XCTAssertEqual(Array(values.suffix(10)), (0..<10).map { "more-value-\($0)"[...] })
    }
}
