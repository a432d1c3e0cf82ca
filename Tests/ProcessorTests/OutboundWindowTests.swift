import Contracts
import Foundation
import Kafka
import Logging
import Projections
import ProjectionStores
import TestSupport
import XCTest
@testable import Processor
@testable import Handlers

/// A fan-out larger than the producer's local queue is published in windows that fit it, and
/// completes, every record once — against a real broker (before, the whole fan-out was handed
/// to the producer at once, the records past the queue failed with `_QUEUE_FULL`, and the whole
/// fan-out was sent again, forever).
final class OutboundWindowTests: ApplierTestCase {
    func testAFanOutLargerThanTheProducerQueueCompletesWithEveryRecordOnce() async throws {
        try await TestBroker.with { try await run($0) }
    }

    private func run(_ broker: TestBroker) async throws {
        let queue = 1_000, users = 30, devicesPerUser = 100
        var configuration = KafkaProducerConfiguration()
        configuration.bootstrapServers = broker.bootstrapServers
        configuration.properties = ["queue.buffering.max.messages": "\(queue)"]
        let producer = try KafkaProducer(configuration: configuration, logger: Logger(label: "test"))
        let outboundTopic = "window-test.outbound"
        try await KafkaAdmin.createTopics([(outboundTopic, 4)], bootstrapServers: broker.bootstrapServers)
        let store = try await ProjectionStoreFactory.open("sqlite:" + directory.appendingPathComponent("fanout.sqlite").path,
                                                          logger: Logger(label: "test"))
        let applier = BatchApplier(store: store, outbound: KafkaOutboundPublisher(producer: producer, topic: outboundTopic),
                                   verifier: TokenFormatVerifier(), logger: Logger(label: "test"),
                                   outboundWindow: BatchApplier.outboundWindow(forQueue: queue))
        let appId = UUID(), org = UUID(), tokenHash = ApiTokens.hash("t")
        var setup = [try record(AppCreated(orgId: org, mobileAppId: appId, name: "a", tokenId: UUID(), tokenHash: tokenHash),
                                partition: 0, offset: 0)]
        for n in 0..<(users * devicesPerUser) {
            setup.append(try record(DeviceRegistrationRequested(
                registrationRequestId: UUID(), orgId: org, mobileAppId: appId, userId: "u-\(n % users)", platform: .ios,
                deviceToken: String(format: "%064x", n), apiTokenHash: tokenHash, trackStatus: false, callback: nil),
                partition: 1, offset: Int64(n)))
        }
        _ = try await applier.apply(setup, expected: [:])
        let send = NotificationRequested(deliveryId: UUID(), mobileAppId: appId,
                                         target: NotificationTarget(userIds: (0..<users).map { "u-\($0)" }), content: NotificationContent(text: "hi"))

        // Bounded, so that the old behaviour (republishing forever) fails instead of hanging.
        let sendRecord = try record(send, partition: 2, offset: 0)
        let next = try await withThrowingTaskGroup(of: [PartitionKey: Int64]?.self) { group in
            group.addTask { try await applier.apply([sendRecord], expected: [:]) }
            group.addTask { try await Task.sleep(for: .seconds(120)); return nil }
            defer { group.cancelAll() }
            return try await group.next() ?? nil
        }
        XCTAssertNotNil(next, "the fan-out completed")
        await producer.shutdown()

        let ids = try await broker.kcat(["-C", "-t", outboundTopic, "-o", "beginning", "-e", "-q", "-f", "%k\\n"])
            .split(separator: "\n")
        XCTAssertEqual(ids.count, users * devicesPerUser, "every device's record, once")
        XCTAssertEqual(Set(ids).count, users * devicesPerUser)
    }
}
