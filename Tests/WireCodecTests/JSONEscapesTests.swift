import WireCodec
import XCTest

final class JSONEscapesTests: XCTestCase {
    func testEscapedNulIsFoundOnlyWhereItIsAnEscape() {
        let cases: [(String, Bool)] = [
            (#"{"a":"x\u0000"}"#, true),
            (#"{"a":"\u00001"}"#, true),
            (#"{"a":"\\\u0000"}"#, true),      // an escaped backslash, then the escape
            (#"{"a":"\\u0000"}"#, false),       // an escaped backslash, then the text u0000
            (#"{"a":"\u0001 \n \"u0000\""}"#, false),
            (#"{"a":"u0000"}"#, false),
            (#"{"a":"\u000"#, false),            // cut short
        ]
        for (json, expected) in cases {
            XCTAssertEqual(Array(json.utf8).withUnsafeBytes { JSONEscapes.containNUL($0) }, expected, json)
        }
    }
}
