import Contracts
import Foundation
import Logging
import Projections
import ProjectionStores
import TestSupport
import WireCodec
import XCTest
@testable import Processor
@testable import Handlers

/// Registration statuses and acks are kept for their time to live in command times of their app
/// part, then pruned (docs/ARCHITECTURE.md#bounded-growth): through the real applier and SQLite,
/// whatever the batches.
final class PruningTests: ApplierTestCase {
    let org = UUID(), tokenHash = ApiTokens.hash("t")
    let day: TimeInterval = 86_400
    let rules = DecisionRules(registrationStatusTtlMs: 86_400_000, ackTtlMs: 2 * 86_400_000)

    private func token(_ n: Int) -> String { String(format: "%064x", n) }

    private func registration(_ app: UUID, _ n: Int, user: String = "u", requestId: UUID = UUID()) -> DeviceRegistrationRequested {
        DeviceRegistrationRequested(registrationRequestId: requestId, orgId: org, mobileAppId: app, userId: user, platform: .ios,
                                    deviceToken: token(n), apiTokenHash: tokenHash, trackStatus: true, callback: nil)
    }

    private func statusIds(_ store: any ProjectionStore, app: UUID, _ ids: [UUID]) async throws -> Set<UUID> {
        Set(try await store.registrationStatuses(app: app, requestIds: ids).keys)
    }

    func testAStatusGoesOnceItsAppsCommandTimePassesItsTimeToLiveAndAnAckLater() async throws {
        let app = UUID(), quiet = UUID()
        let first = UUID(), quietStatus = UUID()
        let send = NotificationRequested(deliveryId: UUID(), mobileAppId: app, target: NotificationTarget(userIds: ["u"]),
                                         content: NotificationContent(text: "hi"), managed: true)
        let ack = NotificationAcknowledged(mobileAppId: app, notificationId: send.notificationId, deviceToken: token(1))
        let setup = try [
            record(AppCreated(orgId: org, mobileAppId: app, name: "a", tokenId: UUID(), tokenHash: tokenHash), partition: 0, offset: 0),
            record(AppCreated(orgId: org, mobileAppId: quiet, name: "q", tokenId: UUID(), tokenHash: tokenHash), partition: 0, offset: 1),
            record(registration(app, 1, requestId: first), partition: 1, offset: 0),
            record(registration(quiet, 9, requestId: quietStatus), partition: 1, offset: 1),
            record(send, partition: 2, offset: 0, at: at.addingTimeInterval(60)),
            record(ack, partition: 2, offset: 1, at: at.addingTimeInterval(120)),
        ]
        let almostADay = try record(registration(app, 2), partition: 1, offset: 2, at: at.addingTimeInterval(day - 1))
        let pastADay = try record(registration(app, 3), partition: 1, offset: 3, at: at.addingTimeInterval(day + 1))
        let pastTwoDays = try record(registration(app, 4), partition: 1, offset: 4, at: at.addingTimeInterval(2 * day + 121))
        let (store, _) = try await apply([setup, [almostADay]], name: "kept.sqlite", rules: rules)
        let kept = try await statusIds(store, app: app, [first])
        XCTAssertEqual(kept, [first], "kept for its whole time to live")

        let (pruned, _) = try await apply([setup, [almostADay], [pastADay]], name: "pruned.sqlite", rules: rules)
        let gone = try await statusIds(pruned, app: app, [first])
        XCTAssertEqual(gone, [], "gone once a command of its app is a day later")
        let quietKept = try await statusIds(pruned, app: quiet, [quietStatus])
        XCTAssertEqual(quietKept, [quietStatus], "another app's status goes by that app's own commands only")
        let prunedDump = try await pruned.dump()
        XCTAssertTrue(prunedDump.contains("\nacks "), "the ack is kept for two days")

        let (later, _) = try await apply([setup, [almostADay, pastADay, pastTwoDays]], name: "later.sqlite", rules: rules)
        let laterDump = try await later.dump()
        XCTAssertFalse(laterDump.contains("\nacks "), "the ack goes two days after it was made")
    }

    /// Seeded histories of two apps over days of command time (tracked registrations, managed
    /// sends, acks of them and made-up ones), with a status time to live of a day and an ack time
    /// to live of two, applied in one batch, one record per batch and random splits: every split
    /// ends in the same tables, and the statuses left are exactly those of the last day of their
    /// app's commands.
    func testPruningEndsTheSameWhateverTheBatches() async throws {
        var seedsWithAcks = 0
        for seed in UInt64(1)...5 {
            var random = SplitMix64(seed: seed)
            let apps = [UUID(), UUID()]
            var setup: [ConsumedRecord] = []
            for (n, app) in apps.enumerated() {
                setup.append(try record(AppCreated(orgId: org, mobileAppId: app, name: "a", tokenId: UUID(), tokenHash: tokenHash),
                                        partition: 0, offset: Int64(n)))
            }
            var history: [ConsumedRecord] = []
            var statuses: [(app: UUID, id: UUID, at: Date)] = []
            var lastTime: [UUID: Date] = [:]
            var sends: [UUID: [String]] = [:]
            var time = at
            var offset: Int64 = 0
            for _ in 0..<80 {
                time = time.addingTimeInterval(Double(1 + random.next(6 * 3600)))
                let app = apps[Int(random.next() % 2)]
                lastTime[app] = time
                offset += 1
                switch random.next(4) {
                case 0, 1:
                    let id = UUID()
                    statuses.append((app, id, time))
                    history.append(try record(registration(app, Int(random.next(6)), user: "u\(random.next(2))", requestId: id),
                                              partition: 1, offset: offset, at: time))
                case 2:
                    let send = NotificationRequested(deliveryId: UUID(), mobileAppId: app, target: NotificationTarget(userIds: ["u0", "u1"]),
                                                     content: NotificationContent(text: "s"), managed: true)
                    sends[app, default: []].append(send.notificationId)
                    history.append(try record(send, partition: 1, offset: offset, at: time))
                default:
                    let known = sends[app] ?? []
                    let nid = known.isEmpty || random.next(4) == 0 ? UUID().uuidString.lowercased() : known[random.next(known.count)]
                    history.append(try record(NotificationAcknowledged(mobileAppId: app, notificationId: nid, deviceToken: token(random.next(6))),
                                              partition: 1, offset: offset, at: time))
                }
            }
            var splits: [[[ConsumedRecord]]] = [[history], history.map { [$0] }]
            for _ in 0..<3 {
                var batches: [[ConsumedRecord]] = [], rest = history[...]
                while !rest.isEmpty {
                    let n = 1 + random.next(10)
                    batches.append(Array(rest.prefix(n)))
                    rest = rest.dropFirst(n)
                }
                splits.append(batches)
            }
            var dumps: [String] = []
            for (index, batches) in splits.enumerated() {
                let (store, _) = try await apply([setup] + batches, name: "history-\(seed)-\(index).sqlite", rules: rules)
                dumps.append(try await store.dump())
                for app in apps {
                    let mine = statuses.filter { $0.app == app }
                    let expected = Set(mine.filter { $0.at >= lastTime[app]!.addingTimeInterval(-day) }.map(\.id))
                    let left = try await statusIds(store, app: app, mine.map(\.id))
                    XCTAssertEqual(left, expected, "seed \(seed), split \(index): the statuses of the last day of the app's commands")
                    XCTAssertLessThan(expected.count, mine.count, "seed \(seed): the history prunes some")
                }
            }
            if dumps[0].contains("\nacks ") { seedsWithAcks += 1 }
            for (index, dump) in dumps.enumerated().dropFirst() {
                XCTAssertEqual(dump, dumps[0], "seed \(seed), split \(index): the same history ended otherwise")
            }
        }
        XCTAssertGreaterThan(seedsWithAcks, 0, "some history ends with acks that counted and are not yet pruned")
    }

    /// A batch deletes the statuses it prunes in their ids' order, by bytes: the order of their
    /// text too (what it sorted by before, at the cost of two formatted strings per comparison),
    /// so the commit and its changelog entry are what they were.
    func testStatusesArePrunedInTheOrderOfTheirIdsBytesWhichIsTheirTextsOrder() {
        var generator = SystemRandomNumberGenerator()
        let ids = (0..<2_000).map { n -> UUID in
            // Random ids, some with their first or their last byte set.
            var bytes = UUID().uuid
            if n % 3 == 0 { bytes.15 = UInt8.random(in: 0...255, using: &generator) }
            if n % 5 == 0 { bytes.0 = UInt8(n % 256) }
            return UUID(uuid: bytes)
        }
        XCTAssertEqual(ids.sorted(by: KeyOrder.less), ids.sorted { $0.uuidString < $1.uuidString })
    }
}
