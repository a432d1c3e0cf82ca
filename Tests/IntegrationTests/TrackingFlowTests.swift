#if canImport(Glibc)
import Glibc
#endif
import Contracts
import Foundation
import Logging
import OutboundRendering
import Projections
import SQLiteProjections
import TestSupport
import XCTest

/// Engagement tracking end to end (docs/API.md#engagement-tracking): real broker, real ingest and
/// processor binaries, broadlogIds read from the outbound records the devices would have received.
final class TrackingFlowTests: XCTestCase {
    private var stack: PushlineStack!

    override func tearDown() async throws {
        await stack?.stop()
    }

    /// A tracked send to `devices` devices (users `u-0…`): its delivery id and each device's
    /// broadlogId (`_mId`) by message index, as read from the outbound topic.
    private func trackedSend(_ app: AdminAPI.AppCreatedAnswer, users: Int, tracking: String = "on",
                             outboundBefore: Int = 0) async throws -> (id: UUID, broadlogs: [String]) {
        let id = try await stack.send(["userIds": (0..<users).map { "u-\($0)" }, "title": "Gate change", "tracking": tracking], app: app)
        let records = try await stack.waitForOutbound(outboundBefore + users).map(\.record).filter { $0.deliveryId == id }
        XCTAssertEqual(records.count, users)
        let byIndex = try records.map { record -> (Int, String) in
            guard case .object(let payload) = record.payload else { throw TestFailure("payload is not an object") }
            // The iOS payload carries `_mId` at the top, the Android one inside `data`.
            var mId = payload["_mId"]
            if case .object(let data)? = payload["data"] { mId = data["_mId"] }
            guard case .string(let broadlogId)? = mId, broadlogId == record.messageId,
                  let index = MessageId.index(of: broadlogId, deliveryId: id) else { throw TestFailure("no _mId in \(record)") }
            return (index, broadlogId)
        }
        return (id, byIndex.sorted { $0.0 < $1.0 }.map(\.1))
    }

    private func event(_ delivery: UUID, _ broadlogId: String, _ action: Any) -> [String: Any] {
        ["deliveryId": delivery.uuidString, "broadlogId": broadlogId, "action": action]
    }

    private func waitForStats(_ expected: TrackingAPI.DeliveryStats, app: AdminAPI.AppCreatedAnswer,
                              timeout: Duration = .seconds(60)) async throws {
        var last: TrackingAPI.DeliveryStats?
        do {
            try await eventually("statistics of \(expected.deliveryId)", timeout: timeout) {
                last = try await self.stack.stats(UUID(uuidString: expected.deliveryId)!, app: app)
                return last == expected
            }
        } catch {
            XCTFail("expected \(expected), last seen \(String(describing: last))\n\(stack.logs())")
            throw error
        }
    }

    /// Duplicates count once, an open or click without an impression counts, string and
    /// integer actions are one thing, and a late event changes only its own count.
    func testEachDeviceCountsOncePerActionAndRepeatsAreReported() async throws {
        stack = try await PushlineStack.start()
        let app = try await stack.createApp()
        _ = try await stack.registerDevices(4, app: app)
        let (d, ids) = try await trackedSend(app, users: 4)

        try await stack.track([
            event(d, ids[0], "7"), event(d, ids[1], "7"), event(d, ids[2], 7), event(d, ids[0], "7"),
            event(d, ids[1], "2"), event(d, ids[3], "1"), event(d, ids[3], 2),  // device 3: click and open, no impression
        ], app: app)
        try await stack.track([event(d, ids[0], 7), event(d, ids[3], "1")], app: app)
        let single = try await stack.call(.POST, "/v1/apps/\(app.mobileAppId)/tracking", json: event(d, ids[1], "2"), token: app.apiToken)
        XCTAssertEqual(single.status, 202, single.text)
        XCTAssertEqual(try single.decode(TrackingAPI.Accepted.self).accepted, 1)

        try await waitForStats(TrackingAPI.DeliveryStats(deliveryId: d, sent: 4, impressions: 3, clicks: 2, opens: 1, repeatsIgnored: 4),
                               app: app)
        let stats = try await stack.stats(d, app: app)
        XCTAssertEqual(stats?.clickThroughRate, 2.0 / 3.0)
        XCTAssertEqual(stats?.openRate, 0.25)

        // A later event lands on top of exactly these counts: nothing was counted twice meanwhile.
        try await stack.track([event(d, ids[3], "7")], app: app)
        try await waitForStats(TrackingAPI.DeliveryStats(deliveryId: d, sent: 4, impressions: 4, clicks: 2, opens: 1, repeatsIgnored: 4),
                               app: app)
        let counted = try await stack.processorMetric(#"pushline_processor_tracking_events_total{outcome="counted"}"#)
        XCTAssertEqual(counted, 11)
    }

    /// Tracking-off deliveries and another delivery's broadlogId are rejected into a metric and
    /// never reach the statistics. Another app's events on the delivery id are that app's: they
    /// park under it (as for an id it has not sent) and never reach the statistics either; nor
    /// can another app read them.
    func testRejectedEventsAreCountedInAMetricNotInTheStatistics() async throws {
        stack = try await PushlineStack.start()
        let app = try await stack.createApp()
        let other = try await stack.createApp(name: "other app")
        _ = try await stack.registerDevices(2, app: app)
        let tracked = try await trackedSend(app, users: 2)
        let quiet = try await trackedSend(app, users: 2, tracking: "off", outboundBefore: 2)

        try await stack.track([event(quiet.id, quiet.broadlogs[0], "7"), event(quiet.id, quiet.broadlogs[1], "1")], app: app)
        try await stack.track([event(tracked.id, quiet.broadlogs[0], "7"), event(tracked.id, "0-0123456789abcdef", "7")], app: app)
        try await stack.track([event(tracked.id, tracked.broadlogs[0], "7")], app: other)
        try await stack.track([event(tracked.id, tracked.broadlogs[1], "2")], app: app)

        func rejected(_ reason: String) async throws -> Double {
            try await stack.processorMetric(#"pushline_processor_tracking_rejected_total{reason="\#(reason)"}"#)
        }
        try await eventually("rejections counted") {
            let (off, foreign) = (try await rejected("tracking-off"), try await rejected("foreign-broadlog"))
            let parked = try await stack.processorMetric(#"pushline_processor_tracking_events_total{outcome="parked"}"#)
            return off == 2 && foreign == 2 && parked == 1
        }
        try await waitForStats(TrackingAPI.DeliveryStats(deliveryId: tracked.id, sent: 2, impressions: 0, clicks: 1, opens: 0,
                                                         repeatsIgnored: 0), app: app)
        let quietStats = try await stack.stats(quiet.id, app: app)
        XCTAssertEqual(quietStats, TrackingAPI.DeliveryStats(deliveryId: quiet.id, sent: 2, impressions: 0, clicks: 0, opens: 0,
                                                             repeatsIgnored: 0))
        let foreign = try await stack.stats(tracked.id, app: other)
        XCTAssertNil(foreign, "another app's delivery is a 404")
        let unknown = try await stack.stats(UUID(), app: app)
        XCTAssertNil(unknown)
        let rows = try await stack.sqlite("SELECT COUNT(*) FROM tracking_events")
        XCTAssertEqual(rows, ["2"], "rejected events leave no row: one counted, and the other app's parked")
    }

    /// With the deployment's key (as every deployment that sends pushes has it), a recipient holding
    /// its payload's `_dId` and `_mId` cannot report for any other recipient: the ids it could
    /// compute (the unkeyed series, or a made-up one) count nothing, its own counts once.
    func testARecipientCannotReportForAnotherRecipientFromTheDeliveryIdAlone() async throws {
        stack = try await PushlineStack.start(ingestEnvironment: ["PUSHLINE_SECRETS_KEY": TestPushKeys.secretsKey()])
        let app = try await stack.createApp()
        _ = try await stack.registerDevices(3, app: app)
        let d = try await stack.send(["userIds": ["u-0", "u-1", "u-2"], "title": "Gate change", "tracking": "on"], app: app)
        let received = try await stack.waitForOutbound(3).map(\.record).filter { $0.deliveryId == d }.map(\.messageId).sorted()
        XCTAssertEqual(received.count, 3)
        XCTAssertEqual(received.map { $0.split(separator: "-")[0] }, ["0", "1", "2"], "the <index>-<16 hex> ids the SDK expects")
        for (index, id) in received.enumerated() {
            XCTAssertNotEqual(id, MessageId.make(deliveryId: d, index: index), "the id is not the one the delivery id gives")
        }
        // Device 0 reports for itself, then for devices 1 and 2 with every id it can compute.
        try await stack.track([event(d, received[0], "7")], app: app, token: app.clientToken)
        try await stack.track([event(d, MessageId.make(deliveryId: d, index: 1), "7"), event(d, MessageId.make(deliveryId: d, index: 2), "2"),
                               event(d, "1-" + String(received[0].dropFirst(2)), "1"), event(d, received[0], "7")],
                              app: app, token: app.clientToken)
        try await eventually("forged reports refused") {
            try await self.stack.processorMetric(#"pushline_processor_tracking_rejected_total{reason="foreign-broadlog"}"#) == 3
        }
        try await waitForStats(TrackingAPI.DeliveryStats(deliveryId: d, sent: 3, impressions: 1, clicks: 0, opens: 0, repeatsIgnored: 1),
                               app: app)
    }

    /// Events applied before their send (the tracking topic ran ahead) are counted once the
    /// send is applied; those the send does not own are rejected then.
    func testEventsAppliedBeforeTheirSendAreSettledByIt() async throws {
        stack = try await PushlineStack.start()
        let app = try await stack.createApp()
        _ = try await stack.registerDevices(3, app: app)
        let d = UUID()
        // The ids the send will give devices 0…2, and one past them.
        let ids = (0..<4).map { MessageId.make(deliveryId: d, index: $0) }
        try await stack.track([event(d, ids[0], "7"), event(d, ids[0], "1"), event(d, ids[1], "2"), event(d, ids[0], "7"),
                               event(d, ids[3], "7")], app: app)
        try await eventually("events parked") {
            try await self.stack.processorMetric(#"pushline_processor_tracking_events_total{outcome="parked"}"#) == 5
        }
        let before = try await stack.stats(d, app: app)
        XCTAssertNil(before, "no delivery yet")

        try await stack.produce(NotificationRequested(deliveryId: d, mobileAppId: app.mobileAppId,
                                                      target: NotificationTarget(userIds: ["u-0", "u-1", "u-2"]),
                                                      content: NotificationContent(title: "late send")))
        try await waitForStats(TrackingAPI.DeliveryStats(deliveryId: d, sent: 3, impressions: 1, clicks: 1, opens: 1, repeatsIgnored: 1),
                               app: app)
        let sentIds = try await stack.waitForOutbound(3).map(\.record.messageId).sorted()
        XCTAssertEqual(sentIds, Array(ids.prefix(3)).sorted(), "the parked ids are the ones the send gave its devices")
        try await eventually("the event past the sent count rejected") {
            try await self.stack.processorMetric(#"pushline_processor_tracking_rejected_total{reason="foreign-broadlog"}"#) == 1
        }
        let rows = try await stack.sqlite("SELECT COUNT(*) FROM tracking_events")
        XCTAssertEqual(rows, ["3"])
    }
}

/// 50,000 events with many repeats, applied by a processor that is SIGKILLed mid-stream and
/// restarted: every count comes out exact. Then `pushline-processor rebuild` replays the topics
/// from offset 0 into a new store, which ends identical, table for table.
final class TrackingCrashTests: XCTestCase {
    private var stack: PushlineStack!

    override func tearDown() async throws {
        await stack?.stop()
    }

    func testSIGKILLDuringFiftyThousandEventsLosesAndDoublesNothing() async throws {
        stack = try await PushlineStack.start(processorEnvironment: ["PUSHLINE_MAX_BATCH": "1"])
        let app = try await stack.createApp()
        let devices = 500, deliveries = 10, requests = 50, perRequest = 1000
        _ = try await stack.registerDevices(devices, app: app)
        var ids: [UUID] = []
        for n in 0..<deliveries {
            ids.append(try await stack.send(["userIds": (0..<devices).map { "u-\($0)" }, "title": "send \(n)"], app: app))
        }
        var broadlogs: [UUID: [Int: String]] = [:]
        for record in try await stack.waitForOutbound(devices * deliveries, timeout: .seconds(120)).map(\.record) {
            guard let d = record.deliveryId, let index = MessageId.index(of: record.messageId, deliveryId: d) else { continue }
            broadlogs[d, default: [:]][index] = record.messageId
        }
        XCTAssertEqual(broadlogs.values.map(\.count), Array(repeating: devices, count: deliveries))

        // All events wait in Kafka while the processor is down, so that it is killed in the middle of them.
        try await stack.processor.stop(signal: SIGTERM)
        let actions: [(TrackingAction, String)] = [(.impression, "7"), (.click, "2"), (.open, "1")]
        var random = SplitMix64(seed: 42)  // the same events on every run
        var seen: [UUID: [TrackingAction: Set<Int>]] = [:]
        var reported: [UUID: Int] = [:]
        for _ in 0..<requests {
            var batch: [[String: Any]] = []
            for _ in 0..<perRequest {
                let d = ids[random.next(deliveries)], device = random.next(devices), (action, code) = actions[random.next(3)]
                seen[d, default: [:]][action, default: []].insert(device)
                reported[d, default: 0] += 1
                batch.append(["deliveryId": d.uuidString, "broadlogId": broadlogs[d]![device]!, "action": code])
            }
            try await stack.track(batch, app: app)
        }
        let total = requests * perRequest
        let expected = ids.map { d in
            let counts = actions.map { seen[d]?[$0.0]?.count ?? 0 }
            return (d, counts)
        }
        let unique = expected.flatMap(\.1).reduce(0, +)
        XCTAssertLessThan(unique, total / 2, "sanity: most events are repeats")

        try stack.processor.start()
        try await stack.processor.waitHealthy("\(stack.processorURL)/health")
        try await eventually("part of the events applied", timeout: .seconds(60)) {
            try await self.stack.processorMetric(#"pushline_processor_tracking_events_total{outcome="counted"}"#) >= 5000
        }
        try await stack.processor.stop(signal: SIGKILL)
        let atKill = try await stack.sqlite("SELECT COUNT(*) + COALESCE(SUM(repeats), 0) FROM tracking_events").first.flatMap { Int($0) } ?? -1
        XCTAssertGreaterThan(atKill, 0)
        XCTAssertLessThan(atKill, total, "killed in the middle of the events")

        try stack.processor.start()
        try await eventually("all events applied", timeout: .seconds(180)) {
            try await self.stack.sqlite("SELECT COUNT(*) + COALESCE(SUM(repeats), 0) FROM tracking_events") == ["\(total)"]
        }
        // Every event counted exactly once: as a device's first report of an action, or as a repeat.
        for (d, counts) in expected {
            let stats = try await stack.stats(d, app: app)
            let repeats = reported[d, default: 0] - counts.reduce(0, +)
            XCTAssertEqual(stats.map { [$0.sent, $0.impressions, $0.clicks, $0.opens, $0.repeatsIgnored] }, [devices] + counts + [repeats],
                           "delivery \(d)")
        }

        // Restored from the changelog: the same tables, row for row, and no outbound record sent again.
        let outboundBefore = try await stack.countRecords(topic: stack.topics.outbound)
        let rebuiltPath = stack.directory.appendingPathComponent("rebuilt.sqlite").path
        try await stack.rebuild(into: rebuiltPath)
        let original = try await stack.openStore().dump()
        let rebuilt = try await SQLiteProjectionStore(path: rebuiltPath, logger: Logger(label: "test")).dump()
        XCTAssertEqual(rebuilt.split(separator: "\n").count, original.split(separator: "\n").count)
        XCTAssertTrue(rebuilt == original, "the rebuilt store differs from the original")
        XCTAssertTrue(original.contains("tracking_events "), "sanity: the dump holds the tracking rows")
        // Two processes sharing the shards (`--join`: each applies those it holds in the group), in
        // small transactions, build the same store too. The schema is made first, so that
        // neither process migrates while the other does.
        let joinedPath = stack.directory.appendingPathComponent("joined.sqlite").path
        _ = try SQLiteProjectionStore(path: joinedPath, logger: Logger(label: "test"))
        let stack: PushlineStack = self.stack
        async let first = stack.rebuild(store: "sqlite:\(joinedPath)", arguments: ["--from", "commands", "--join", "--batch", "300"])
        async let second = stack.rebuild(store: "sqlite:\(joinedPath)", arguments: ["--from", "commands", "--join", "--batch", "300"])
        let logs = try await [first, second]
        let joined = try await SQLiteProjectionStore(path: joinedPath, logger: Logger(label: "test")).dump()
        XCTAssertTrue(joined == original, "the store rebuilt by two processes differs from the original")
        XCTAssertTrue(logs.contains { $0.contains("took shards") }, "a process applied shards:\n\(logs.joined())")
        let outboundAfter = try await stack.countRecords(topic: stack.topics.outbound)
        XCTAssertEqual(outboundAfter, outboundBefore, "a rebuild publishes nothing")
        do {
            try await stack.rebuild(into: stack.storePath)
            XCTFail("a rebuild into a store that holds state must refuse")
        } catch let failure as TestFailure {
            XCTAssertTrue("\(failure)".contains("already holds consumed offsets"), "\(failure)")
        }
        do {
            _ = try await stack.rebuild(store: "sqlite:\(stack.directory.path)/never.sqlite", arguments: ["--batch", "0"])
            XCTFail("a batch of 0 records must be refused")
        } catch let failure as TestFailure {
            XCTAssertTrue("\(failure)".contains("--batch must be between 1 and 100000"), "\(failure)")
        }
    }
}
