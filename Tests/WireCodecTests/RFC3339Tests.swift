import Foundation
import WireCodec
import XCTest

final class RFC3339Tests: XCTestCase {
    func testRFC3339WritesAndReadsMillisecondsInUTCAcrossTheCalendar() {
        let seconds = Date.ISO8601FormatStyle()
        // Leap days, year ends, before 1970, and a spread of instants; the expected text is
        // Foundation's for the whole second plus the milliseconds counted in integers.
        var instants: [Int64] = [0, -1, -86_400_500, 951_782_400_000, 1_709_164_800_999, 4_102_444_799_001, -2_208_988_800_000, 99_438_537_308]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2000 { instants.append(Int64.random(in: -3_000_000_000_000...6_000_000_000_000, using: &generator)) }
        for ms in instants {
            let whole = ms >= 0 ? ms / 1000 : (ms - 999) / 1000
            let millis = ms - whole * 1000
            var expected = seconds.format(Date(timeIntervalSince1970: Double(whole)))
            expected.removeLast()
            expected += "." + String(String(millis + 1000).dropFirst()) + "Z"
            let date = Date(timeIntervalSince1970: Double(ms) / 1000)
            let text = RFC3339.string(from: date)
            XCTAssertEqual(text, expected, "ms=\(ms)")
            XCTAssertEqual(RFC3339.date(from: text), date, "reads back exactly: \(text)")
        }
        XCTAssertEqual(RFC3339.date(from: "2026-11-22T10:00:00Z")?.timeIntervalSince1970, 1_795_341_600)
        XCTAssertEqual(RFC3339.date(from: "2026-11-22T12:00:00+02:00")?.timeIntervalSince1970, 1_795_341_600)
        XCTAssertNil(RFC3339.date(from: "2026-13-22T10:00:00Z"))
        for day in ["2026-02-29", "1900-02-29", "2026-04-31", "2026-11-31", "2026-06-31"] {
            XCTAssertNil(RFC3339.date(from: day + "T10:00:00Z"), "\(day) does not exist")
        }
        XCTAssertEqual(RFC3339.date(from: "2024-02-29T00:00:00Z")?.timeIntervalSince1970, 1_709_164_800)
        XCTAssertEqual(RFC3339.date(from: "2000-02-29T00:00:00Z")?.timeIntervalSince1970, 951_782_400)
        XCTAssertNotNil(RFC3339.date(from: "2026-12-31T23:59:59Z"))
        XCTAssertNil(RFC3339.date(from: "yesterday"))
    }
}
