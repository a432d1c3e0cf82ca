import Foundation
import Kafka
import Logging
import Synchronization
import XCTest
@testable import Ingest

/// Ingest's `/health` asks the broker at most once at a time: a burst of probes shares one check
/// (each check is a thread of its own), and a fresh answer is reused for a second.
final class HealthCheckTests: XCTestCase {
    func testABurstOfProbesSharesOneBrokerCheck() async throws {
        var configuration = KafkaProducerConfiguration()
        configuration.bootstrapServers = "127.0.0.1:1"
        let producer = try KafkaProducer(configuration: configuration, logger: Logger(label: "test"))
        let checks = Atomic<Int>(0)
        let publisher = KafkaCommandPublisher(producer: producer) {
            checks.add(1, ordering: .relaxed)
            try? await Task.sleep(for: .milliseconds(200))
            return true
        }
        let answers = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<200 { group.addTask { await publisher.isReady() } }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        XCTAssertEqual(answers, Array(repeating: true, count: 200))
        XCTAssertEqual(checks.load(ordering: .relaxed), 1, "200 concurrent probes, one broker check")
        _ = await publisher.isReady()
        XCTAssertEqual(checks.load(ordering: .relaxed), 1, "a fresh answer is reused")
        await producer.shutdown()
    }
}
