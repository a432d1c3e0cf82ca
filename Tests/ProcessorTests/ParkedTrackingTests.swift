import Contracts
import Foundation
import Logging
import Projections
import XCTest
@testable import Processor

/// Reports of a delivery whose send never comes are kept for the park time, counted in command
/// times: through the real applier and SQLite, a report newer by more than that time expires them.
final class ParkedTrackingTests: ApplierTestCase {
    let appId = UUID()

    private func report(_ deliveryId: UUID, hoursAfter hours: Double, offset: Int64) throws -> ConsumedRecord {
        let command = TrackingReported(mobileAppId: appId, deliveryId: deliveryId,
                                       events: [TrackingEvent(broadlogId: MessageId.make(deliveryId: deliveryId, index: 0), action: .open)])
        let encoded = try EncodedCommand(command, topics: topics, id: UUID(), at: at.addingTimeInterval(hours * 3600), encoder: WireJSON.encoder())
        return ConsumedRecord(partition: PartitionKey(topic: encoded.topic, partition: 0), offset: offset, type: encoded.type,
                              version: encoded.version, value: encoded.value)
    }

    func testParkedReportsExpireByCommandTimeNotByTheClock() async throws {
        let store = try await ProjectionStoreFactory.open("sqlite:" + directory.appendingPathComponent("parked.sqlite").path,
                                                          logger: Logger(label: "test"))
        let applier = BatchApplier(store: store, outbound: RecordingOutbound(), verifier: TokenFormatVerifier(), logger: Logger(label: "test"),
                                   trackingParkTime: .seconds(24 * 3600))
        let forged = UUID(), other = UUID()
        var positions = try await applier.apply([try report(forged, hoursAfter: 0, offset: 0)], expected: [:])
        let parked = try await store.load(StateQuery(trackedDeliveries: [forged]))
        XCTAssertEqual(parked.trackedEvents[forged]?.count, 1, "parked: its send may still come")

        // A report 23 hours later leaves it; one 25 hours later (command time) expires it.
        let expected = positions
        for (key, value) in try await applier.apply([try report(other, hoursAfter: 23, offset: 1)], expected: expected) { positions[key] = value }
        let kept = try await store.load(StateQuery(trackedDeliveries: [forged]))
        XCTAssertEqual(kept.trackedEvents[forged]?.count, 1)
        _ = try await applier.apply([try report(other, hoursAfter: 25, offset: 2)], expected: positions)
        let expired = try await store.load(StateQuery(trackedDeliveries: [forged, other]))
        XCTAssertNil(expired.trackedEvents[forged], "no send within a day of its report: gone")
        XCTAssertEqual(expired.trackedEvents[other]?.count, 1, "the newer delivery's reports stay parked")
    }
}
