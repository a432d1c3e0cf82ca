import Contracts
import Foundation
import TestSupport
import XCTest

/// The live edge on the durable broker as `make run` starts it (scripts/one-machine.env): a lone
/// command is decided after one round of progress marks, appended by the processor and taken as
/// read, and never waits for marks to come back through the broker's fetches
/// (docs/ARCHITECTURE.md#state-is-a-function-of-the-log). On that broker a fetch lists the stored
/// objects of every partition it asks for, one partition after another, so every mark read back
/// cost the processor a pass over all of them; ingest marked every idle partition after each
/// command, and the processor could not mark a partition again before its last mark came back,
/// which is how the default stack took seconds to a minute per command and stalled.
///
/// Nothing here is timed: the test counts what the log holds.
final class LiveEdgeTests: XCTestCase {
    private var stack: PushlineStack?

    override func tearDown() async throws {
        await stack?.stop()
    }

    func testEachLoneCommandOnTheDefaultStackCostsExactlyOneMarkPerOtherPartition() async throws {
        let partitions = try PushlineStack.oneMachineSetting("PUSHLINE_PARTITIONS")
        let environment = ["PUSHLINE_PARTITIONS": partitions]
        let stack = try await PushlineStack.start(processorEnvironment: environment, ingestEnvironment: environment, durableBroker: true)
        self.stack = stack
        let app = try await stack.createApp()
        let lanes = stack.topics.commandTopics.count * Int(partitions)!
        let registrations = 20
        for n in 0..<registrations {
            // One at a time, each decided before the next is sent.
            let answer = try await HTTPClientHelpers.post(stack.registrationURL(org: app.orgId, "devices"), json: DeviceRegistrationAPI.Registration(
                MobileAppId: app.mobileAppId.uuidString, UserId: "lone-\(n)", ApiToken: app.apiToken, ApnsDeviceToken: Tokens.apns(n)),
                headers: [DeviceRegistrationAPI.trackRegistrationHeader: "true"])
            XCTAssertEqual(answer.status, 202)
            let id = try answer.decode(DeviceRegistrationAPI.RegistrationAccepted.self).RegistrationRequestId
            let statuses = try await stack.decidedStatuses(org: app.orgId, app: app.mobileAppId, token: app.apiToken, ids: [id])
            XCTAssertEqual(statuses.map(\.Status), [.Success])
        }
        // The app's creation and each registration: one mark on every other command partition, and
        // nothing else (ingest writes none; no mark was written twice for want of reading it back).
        let marks = try await progressMarks(stack)
        XCTAssertEqual(marks, (registrations + 1) * (lanes - 1), "lanes \(lanes)")
        let metrics = try await HTTPClientHelpers.get("\(stack.processorURL)/metrics").text
        XCTAssertTrue(metrics.contains("pushline_processor_progress_marks_total \((registrations + 1) * (lanes - 1))"), metrics)
    }

    /// The progress marks in every command topic, read with kcat.
    private func progressMarks(_ stack: PushlineStack) async throws -> Int {
        var count = 0
        for topic in stack.topics.commandTopics {
            let out = try await stack.broker.kcat(["-C", "-t", topic, "-o", "beginning", "-e", "-q", "-f", "%s\\n"])
            count += out.split(separator: "\n").filter { ProgressMark.at(in: Data($0.utf8)) != nil }.count
        }
        return count
    }
}
