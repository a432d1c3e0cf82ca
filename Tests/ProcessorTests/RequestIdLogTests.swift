import Contracts
import Foundation
import Logging
import Projections
import ProjectionStores
import Synchronization
import XCTest
@testable import Processor
@testable import Handlers

/// A log handler that keeps every line with its metadata.
private final class CapturedLogs: Sendable {
    struct Line: Sendable {
        var level: Logger.Level
        var message: String
        var metadata: Logger.Metadata
    }

    let lines = Mutex<[Line]>([])

    var logger: Logger {
        Logger(label: "test") { _ in Handler(captured: self) }
    }

    func first(_ message: String) -> Line? { lines.withLock { $0.first { $0.message == message } } }

    private struct Handler: LogHandler {
        let captured: CapturedLogs
        var logLevel: Logger.Level = .debug
        var metadata: Logger.Metadata = [:]

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let line = Line(level: event.level, message: event.message.description,
                            metadata: metadata.merging(event.metadata ?? [:]) { $1 })
            captured.lines.withLock { $0.append(line) }
        }
    }
}

/// The ingest request id travels with a command (`request-id` record header) into the
/// processor's log lines about that command.
final class RequestIdLogTests: ApplierTestCase {
    func testRejectedAndMalformedCommandsAreLoggedWithTheirRequestId() async throws {
        let logs = CapturedLogs()
        let store = try await ProjectionStoreFactory.open("sqlite:" + directory.appendingPathComponent("log.sqlite").path,
                                                          logger: Logger(label: "test"))
        let applier = BatchApplier(store: store, outbound: RecordingOutbound(), verifier: TokenFormatVerifier(), logger: logs.logger)
        // No app exists: the registration is rejected (invalid-api-token).
        var rejected = try record(DeviceRegistrationRequested(
            registrationRequestId: UUID(), orgId: UUID(), mobileAppId: UUID(), userId: "u-1", platform: .ios,
            deviceToken: String(repeating: "a", count: 64), apiTokenHash: "forged", trackStatus: true, callback: nil),
            partition: 0, offset: 0)
        rejected.requestId = "req-rejected"
        var malformed = rejected
        malformed.offset = 1
        malformed.value = Data("not json".utf8)
        malformed.requestId = "req-malformed"

        _ = try await applier.apply([rejected, malformed], expected: [:])

        let rejection = try XCTUnwrap(logs.first("command rejected"), "the rejection is logged")
        XCTAssertEqual(rejection.level, .debug)
        XCTAssertEqual(rejection.metadata["request_id"], "req-rejected")
        XCTAssertEqual(rejection.metadata["reason"], "invalid-api-token")
        XCTAssertEqual(rejection.metadata["type"], "\(CommandType.deviceRegistrationRequested.rawValue)")
        let skipped = try XCTUnwrap(logs.first("skipping malformed record"), "the malformed record is logged")
        XCTAssertEqual(skipped.metadata["request_id"], "req-malformed")
        XCTAssertEqual(skipped.metadata["offset"], "1")
    }
}
