import Foundation
import WireCodec
import XCTest

final class JSONValueTests: XCTestCase {
    func testJSONValueKeepsNumbersAndBooleansApart() throws {
        XCTAssertEqual(try JSONValue.parse(#"[1, true, 0, false, 1.5, null, "1", -3, 1374224245011]"#),
                       .array([.number(1), .bool(true), .number(0), .bool(false), .number(1.5), .null, .string("1"), .number(-3),
                               .number(1_374_224_245_011)]))
        XCTAssertNotEqual(try JSONValue.parse(#"{"a":1}"#), try JSONValue.parse(#"{"a":true}"#))
        XCTAssertNotEqual(try JSONValue.parse(#"{"a":1}"#), try JSONValue.parse(#"{"a":"1"}"#))
        XCTAssertEqual(try JSONValue.parse(#"{"a":1,"b":[{}]}"#), try JSONValue.parse(#"{"b":[{}],"a":1.0}"#))
        let value = try JSONValue.parse(#"{"a":[1,true,null,"x",{"b":2.5}]}"#)
        XCTAssertEqual(try JSONValue.parse(JSONEncoder().encode(value)), value)
    }
}
