@testable import Processor
@testable import Handlers
import XCTest

/// `WakeSignal`: waiting for a wake-up with a deadline, without sleeping in a loop.
final class WakeSignalTests: XCTestCase {
    func testASignalGivenBeforeTheWaitIsKeptForIt() async {
        let signal = WakeSignal()
        signal.signal()
        let woken = await signal.wait(timeout: .seconds(60))
        XCTAssertTrue(woken)
    }

    func testAKeptSignalWakesOneWaitOnly() async {
        let signal = WakeSignal()
        signal.signal()
        signal.signal()
        let first = await signal.wait(timeout: .seconds(60))
        let second = await signal.wait(timeout: .milliseconds(10))
        XCTAssertTrue(first)
        XCTAssertFalse(second, "two signals while nobody waited are one wake-up")
    }

    func testAWaitWithoutASignalEndsAtItsDeadlineUnwoken() async {
        let woken = await WakeSignal().wait(timeout: .milliseconds(10))
        XCTAssertFalse(woken)
    }

    func testASignalWakesTheTaskWaitingForIt() async {
        let signal = WakeSignal()
        let waiter = Task { await signal.wait(timeout: .seconds(600)) }
        // Whether the waiter is already waiting or not, it is woken: by the signal or by the kept one.
        signal.signal()
        let woken = await waiter.value
        XCTAssertTrue(woken, "woken, not timed out")
    }

    func testACancelledWaitEndsUnwokenAndLeavesNoSignalBehind() async {
        let signal = WakeSignal()
        let waiter = Task { await signal.wait(timeout: .seconds(600)) }
        waiter.cancel()
        let woken = await waiter.value
        XCTAssertFalse(woken)
        signal.signal()
        let next = await signal.wait(timeout: .seconds(60))
        XCTAssertTrue(next, "a later signal still reaches the next wait")
    }
}
