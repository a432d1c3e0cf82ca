import Contracts
import XCTest

/// `RecordHeaders`, the one codec of the headers on Pushline's records.
final class RecordHeadersTests: XCTestCase {
    func testACommandsHeadersAreTypeVersionAndRequestIdInThatOrder() {
        let fields = RecordHeaders(type: "DeviceRegistrationRequested", version: 2, requestId: "r-1").fields
        XCTAssertEqual(fields.map(\.name), ["type", "v", "request-id"])
        XCTAssertEqual(fields.map(\.value), ["DeviceRegistrationRequested", "2", "r-1"])
    }

    func testAnOutputRecordHasVersionOneAndNoRequestId() {
        let fields = RecordHeaders(type: "apns").fields
        XCTAssertEqual(fields.map(\.name), ["type", "v"])
        XCTAssertEqual(fields.map(\.value), ["apns", "1"])
    }

    func testReadingWhatWasWrittenGivesItBack() {
        let written = RecordHeaders(type: "NotificationRequested", version: 1, requestId: "abc")
        XCTAssertEqual(RecordHeaders(written.fields), written)
    }

    func testUnknownHeadersAreIgnoredAVersionThatIsNoIntegerIsNilAndTheLastOfARepeatedNameCounts() {
        let read = RecordHeaders([(name: "traceparent", value: "00-x"), (name: "type", value: "A"), (name: "v", value: "one"),
                                  (name: "type", value: "B")])
        XCTAssertEqual(read.type, "B")
        XCTAssertNil(read.version)
        XCTAssertNil(read.requestId)
    }
}
