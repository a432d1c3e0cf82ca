import Foundation
@testable import Ingest
import Kafka
import Projections
import XCTest

/// An admin change's 2xx waits until the change is applied: past its partition's offset, and,
/// while a send read in pages holds its app, past the app's own row (`HeldLane`), which the
/// partition's offset overtakes.
final class AdminChangeAppliedTests: XCTestCase {
    private let lane = PartitionKey(topic: "pushline.commands.admin", partition: 0)

    private func waits(_ store: InMemoryProjectionStore, offset: Int64, app: UUID?) async -> Bool {
        let applied = AdminChangeApplied(store: store, timeout: .milliseconds(60), authCacheTTL: .zero)
        do {
            try await applied.wait(for: [KafkaDeliveryReport(topic: lane.topic, partition: lane.partition, offset: offset)], app: app,
                                   written: "the change")
            return false
        } catch {
            XCTAssertTrue("\(error)".contains("no processor applied it"), "\(error)")
            return true
        }
    }

    func testAChangeOfAHeldAppIsAppliedOnlyPastItsRow() async throws {
        let store = InMemoryProjectionStore()
        let (held, other) = (UUID(), UUID())
        await store.setApplied(offsets: [lane: 10], held: [HeldLane(held: HeldApp(app: held, part: 0), lane: lane, next: 5, eventTime: 0)])

        let heldWaits = await waits(store, offset: 7, app: held)
        XCTAssertTrue(heldWaits, "the offset is past it, but the held app's row is not")
        let beforeRow = await waits(store, offset: 4, app: held)
        XCTAssertFalse(beforeRow, "below the row, the held app's change is applied")
        let otherWaits = await waits(store, offset: 7, app: other)
        XCTAssertFalse(otherWaits, "another app's change is applied at the partition's offset")
        let noApp = await waits(store, offset: 7, app: nil)
        XCTAssertFalse(noApp, "so is a change about no app")
        let pastOffset = await waits(store, offset: 10, app: other)
        XCTAssertTrue(pastOffset, "nothing is applied at or past the partition's offset")

        await store.setApplied(offsets: [lane: 10])
        let letGo = await waits(store, offset: 7, app: held)
        XCTAssertFalse(letGo, "once the hold is let go, the offset decides")
    }
}
