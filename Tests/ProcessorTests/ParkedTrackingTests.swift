import Contracts
import Foundation
import Logging
import OutboundRendering
import Projections
import ProjectionStores
import TestSupport
import WireCodec
import XCTest
@testable import Processor
@testable import Handlers

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
                                   rules: DecisionRules(trackingParkTtlMs: 24 * 3600 * 1000))
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

    /// The send of a delivery comes 25.5 hours after its report (park time 24 hours), with a
    /// report of another delivery at 25 hours. The send finds nothing whether or not that other
    /// report is in its batch: expiry follows the commands' times, not where batches end.
    func testExpiryDoesNotDependOnWhereBatchesEnd() async throws {
        let org = UUID(), tokenHash = ApiTokens.hash("t")
        let setup = try [
            record(AppCreated(orgId: org, mobileAppId: appId, name: "a", tokenId: UUID(), tokenHash: tokenHash), partition: 0, offset: 0),
            record(DeviceRegistrationRequested(registrationRequestId: UUID(), orgId: org, mobileAppId: appId, userId: "u", platform: .ios,
                                               deviceToken: String(repeating: "ab", count: 32), apiTokenHash: tokenHash, trackStatus: false,
                                               callback: nil), partition: 1, offset: 0),
        ]
        let send = NotificationRequested(deliveryId: UUID(), mobileAppId: appId, target: NotificationTarget(userIds: ["u"]),
                                         content: NotificationContent(text: "late"))
        let early = try report(send.deliveryId, hoursAfter: 0, offset: 0)
        let other = try report(UUID(), hoursAfter: 25, offset: 1)
        let late = try record(send, partition: 2, offset: 0, at: at.addingTimeInterval(25.5 * 3600))

        let together = try await apply([setup, [early], [other, late]], name: "together.sqlite").store
        let apart = try await apply([setup, [early], [other], [late]], name: "apart.sqlite").store
        let stats = try await together.deliveryStats(app: appId, deliveryId: send.deliveryId)
        XCTAssertEqual(stats?.delivery.sent, 1)
        XCTAssertEqual(stats?.opens, 0, "parked longer than the park time before its send: expired")
        let dump = try await together.dump()
        let apartDump = try await apart.dump()
        XCTAssertEqual(apartDump, dump)
        XCTAssertFalse(dump.contains("delivery_id=\"\(send.deliveryId.lowercasedString)\" app_id"), "no row or mark of the expired pair is left")
    }

    /// Seeded histories of sends and reports (before and after their sends, another app's, past
    /// the sent count, of a delivery never sent) spread over days of command time with a park
    /// time of one day, applied through the real applier into SQLite in one batch, one record
    /// per batch and random splits: every split ends in the same tables.
    func testRandomTrackingHistoriesEndAlikeWhateverTheBatches() async throws {
        for seed in UInt64(1)...6 {
            var random = SplitMix64(seed: seed)
            let org = UUID(), otherApp = UUID(), tokenHash = ApiTokens.hash("t")
            var setup = [try record(AppCreated(orgId: org, mobileAppId: appId, name: "a", tokenId: UUID(), tokenHash: tokenHash),
                                    partition: 0, offset: 0)]
            for i in 0..<3 {
                setup.append(try record(DeviceRegistrationRequested(
                    registrationRequestId: UUID(), orgId: org, mobileAppId: appId, userId: "u", platform: .ios,
                    deviceToken: String(repeating: "c\(i)", count: 32), apiTokenHash: tokenHash, trackStatus: false, callback: nil),
                    partition: 1, offset: Int64(i)))
            }
            let deliveries = (0..<4).map { _ in random.uuid() }
            var sent = Set<UUID>()
            var history: [ConsumedRecord] = []
            var time = at.addingTimeInterval(3600)
            var offsets: [Int64] = [0, 0]
            for _ in 0..<60 {
                // Distinct times: the log's order is the order of the history.
                time = time.addingTimeInterval(Double(1 + random.next(10 * 3600)))
                let delivery = deliveries[random.next(deliveries.count)]
                // The last delivery is never sent.
                if random.next(4) == 0, delivery != deliveries.last, sent.insert(delivery).inserted {
                    let send = NotificationRequested(deliveryId: delivery, mobileAppId: appId, target: NotificationTarget(userIds: ["u"]),
                                                     content: NotificationContent(text: "s"), tracking: random.next(4) > 0)
                    history.append(try record(send, partition: 0, offset: offsets[0], at: time))
                    offsets[0] += 1
                } else {
                    let events = (0..<(1 + random.next(3))).map { _ in
                        TrackingEvent(broadlogId: MessageId.make(deliveryId: delivery, index: random.next(5)),
                                      action: [.impression, .click, .open][random.next(3)])
                    }
                    let report = TrackingReported(mobileAppId: random.next(5) == 0 ? otherApp : appId, deliveryId: delivery, events: events)
                    history.append(try record(report, partition: 0, offset: offsets[1], at: time))
                    offsets[1] += 1
                }
            }
            var splits: [[[ConsumedRecord]]] = [[history], history.map { [$0] }]
            for _ in 0..<3 {
                var batches: [[ConsumedRecord]] = [], rest = history[...]
                while !rest.isEmpty {
                    let n = 1 + random.next(8)
                    batches.append(Array(rest.prefix(n)))
                    rest = rest.dropFirst(n)
                }
                splits.append(batches)
            }
            var dumps: [String] = []
            for (index, batches) in splits.enumerated() {
                dumps.append(try await apply([setup] + batches, name: "history-\(seed)-\(index).sqlite").store.dump())
            }
            XCTAssertTrue(dumps[0].contains("tracking_events "), "seed \(seed): the history counts something")
            for (index, dump) in dumps.enumerated().dropFirst() {
                XCTAssertEqual(dump, dumps[0], "seed \(seed), split \(index): the same history ended otherwise")
            }
        }
    }
}
