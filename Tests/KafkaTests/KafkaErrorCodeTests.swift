import Kafka
import XCTest

/// `KafkaError.Code`: librdkafka's codes by name, so that callers and tests match on names
/// instead of raw numbers or strings.
final class KafkaErrorCodeTests: XCTestCase {
    func testNamedCodesAreLibrdkafkasCodes() {
        let expected: [(KafkaError.Code, Int32, String)] = [
            (.messageTimedOut, -192, "_MSG_TIMED_OUT"), (.destroyed, -197, "_DESTROY"), (.invalidArgument, -186, "_INVALID_ARG"),
            (.timedOut, -185, "_TIMED_OUT"), (.transport, -195, "_TRANSPORT"), (.fatal, -150, "_FATAL"),
            (.queueFull, -184, "_QUEUE_FULL"), (.offsetOutOfRange, 1, "OFFSET_OUT_OF_RANGE"),
            (.messageTooLarge, 10, "MSG_SIZE_TOO_LARGE"), (.recordListTooLarge, 18, "RECORD_LIST_TOO_LARGE"),
        ]
        for (code, raw, name) in expected {
            XCTAssertEqual(code.rawValue, raw, name)
            XCTAssertEqual(code.description, name)
            XCTAssertEqual(KafkaError.Code(rawValue: raw), code)
        }
    }

    func testOnlyTheTooLargeCodesMeanARecordTooLarge() {
        func error(_ code: KafkaError.Code) -> KafkaError {
            KafkaError(code: code, name: code.description, message: "", isRetriable: false)
        }
        XCTAssertTrue(error(.messageTooLarge).isRecordTooLarge)
        XCTAssertTrue(error(.recordListTooLarge).isRecordTooLarge)
        XCTAssertFalse(error(.messageTimedOut).isRecordTooLarge)
    }
}
