#if canImport(Glibc)
import Glibc
#endif
import Contracts
import Foundation
import OutboundRendering
import TestSupport
import XCTest

/// Large sends: every device gets exactly one record with its own message id, also when the
/// processor is stopped in the middle of a fan-out. Records are counted with kcat.
final class FanOutTests: XCTestCase {
    private var stack: PushlineStack!

    override func tearDown() async throws {
        await stack?.stop()
    }

    func testSendToOneThousandUsersAndOneThousandTokens() async throws {
        stack = try await PushlineStack.start()
        let app = try await stack.createApp()
        let tokens = try await stack.registerDevices(1000, app: app)
        let byUsers = try await stack.send(["userIds": (0..<1000).map { "u-\($0)" }, "title": "to users"], app: app)
        let byTokens = try await stack.send(["deviceTokens": tokens, "title": "to tokens"], app: app)
        let records = try await stack.waitForOutbound(2000).map(\.record)
        XCTAssertEqual(records.count, 2000)
        for delivery in [byUsers, byTokens] {
            let mine = records.filter { $0.deliveryId == delivery }
            XCTAssertEqual(Set(mine.map(\.deviceToken)), Set(tokens))
            XCTAssertEqual(Set(mine.map(\.messageId)).count, 1000)
            XCTAssertTrue(mine.allSatisfy { MessageId.index(of: $0.messageId, deliveryId: delivery) != nil })
        }
        XCTAssertEqual(records.filter { $0.platform == .android }.count, 1000)
    }

    /// 40 sends to 1,000 devices each, all in Kafka before the processor starts on them, one
    /// per batch. `signal` stops the processor once a few sends are out (wherever it is then:
    /// reading, publishing or committing), and a new one finishes the rest. Returns the raw
    /// records by (delivery, message id), the number of outbound records out at the stop, and
    /// the number of records expected.
    private func fanOut(stoppingWith signal: Int32) async throws -> (copies: [String: [String]], outboundAtStop: Int, total: Int) {
        stack = try await PushlineStack.start(processorEnvironment: ["PUSHLINE_MAX_BATCH": "1"])
        let app = try await stack.createApp()
        let devices = 1000, deliveries = 40, total = devices * deliveries
        _ = try await stack.registerDevices(devices, app: app)
        let users = (0..<devices).map { "u-\($0)" }
        let stack = self.stack!
        try await stack.processor.stop()
        for n in 0..<deliveries {
            _ = try await stack.send(["userIds": users, "title": "fan-out \(n)"], app: app)
        }
        try stack.processor.start()
        var outboundAtStop = 0
        try await eventually("a few sends published", timeout: .seconds(60)) {
            outboundAtStop = try await stack.outboundEndOffset()
            return outboundAtStop >= 3 * devices
        }
        try await stack.restartProcessor(signal: signal)
        try await eventually("every delivery applied", timeout: .seconds(180)) {
            try await stack.sqlite("SELECT COUNT(*) FROM deliveries") == ["\(deliveries)"]
        }
        let records = try await stack.waitForOutbound(devices * deliveries, timeout: .seconds(120))
        var copies: [String: [String]] = [:]
        for (raw, r) in records { copies["\(r.deliveryId!)/\(r.messageId)", default: []].append(raw) }
        return (copies, outboundAtStop, total)
    }

    func testProcessorKilledMidFanOutRepeatsOnlyTheInFlightBatch() async throws {
        let run = try await fanOut(stoppingWith: SIGKILL)
        XCTAssertLessThan(run.outboundAtStop, run.total, "the kill landed before the fan-out ended")
        XCTAssertEqual(run.copies.count, run.total, "every device got every delivery, each with its own message id")
        let repeated = run.copies.filter { $0.value.count > 1 }
        XCTAssertTrue(repeated.values.allSatisfy { $0.count == 2 && Set($0).count == 1 }, "a repeat is one identical copy")
        let repeatedDeliveries = Set(repeated.keys.map { $0.split(separator: "/")[0] })
        XCTAssertLessThanOrEqual(repeatedDeliveries.count, 1, "only the batch in flight at the kill is repeated: \(repeatedDeliveries)")
        print("SIGKILL mid-fan-out: \(repeated.count) repeated records of \(run.copies.count); \(run.outboundAtStop) records out at the kill")
    }

    func testProcessorStoppedGracefullyMidFanOutRepeatsNothing() async throws {
        let run = try await fanOut(stoppingWith: SIGTERM)
        XCTAssertLessThan(run.outboundAtStop, run.total, "the stop landed before the fan-out ended")
        XCTAssertEqual(run.copies.count, run.total)
        XCTAssertEqual(run.copies.values.filter { $0.count > 1 }.count, 0, "a graceful stop finishes its batch and repeats nothing")
    }
}
