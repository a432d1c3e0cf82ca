import Foundation
import WireCodec
import XCTest

final class JSONWriterTests: XCTestCase {
    func written(_ body: (inout JSONWriter) -> Void) -> String {
        var w = JSONWriter(capacity: 16)
        body(&w)
        return String(decoding: w.bytes, as: UTF8.self)
    }

    func testCommasAreInsertedAtEveryNestingLevel() {
        let json = written { w in
            w.beginObject()
            w.key("a"); w.beginArray(); w.int(1); w.int(2); w.beginObject(); w.key("b"); w.bool(true); w.endObject(); w.beginArray(); w.endArray(); w.endArray()
            w.key("c"); w.null()
            w.key("d"); w.beginObject(); w.endObject()
            w.key("e"); w.bool(false)
            w.key("f"); w.raw(Array("[1,\"x\"]".utf8))
            w.key("g"); w.intString(-42)
            w.endObject()
        }
        XCTAssertEqual(json, #"{"a":[1,2,{"b":true},[]],"c":null,"d":{},"e":false,"f":[1,"x"],"g":"-42"}"#)
    }

    func testNilFieldsWriteNothing() {
        let json = written { w in
            w.beginObject()
            w.field("a", nil as String?)
            w.field("b", "x")
            w.field("c", nil as Int?)
            w.field("d", 3)
            w.field("e", intString: nil)
            w.field("f", intString: 4)
            w.field("g", nil as String?)
            w.endObject()
        }
        XCTAssertEqual(json, #"{"b":"x","d":3,"f":"4"}"#)
    }

    func testIntegersIncludingTheExtremes() throws {
        let values = [0, 7, -1, 10, 1817, -1_000_000, Int.max, Int.min]
        let json = written { w in
            w.beginArray()
            for v in values { w.int(v) }
            w.endArray()
        }
        XCTAssertEqual(json, "[0,7,-1,10,1817,-1000000,9223372036854775807,-9223372036854775808]")
        XCTAssertEqual(try JSONDecoder().decode([Int].self, from: Data(json.utf8)), values)
    }

    func testEscapingFollowsRFC8259() throws {
        let nasty = "a\"b\\c\nd\re\tf\u{8}g\u{c}h\u{1}i\u{1f}j/k\u{7f}"
        let json = written { w in
            w.beginObject(); w.key(nasty); w.string(nasty); w.endObject()
        }
        let escaped = #"a\"b\\c\nd\re\tf\bg\fh\u0001i\u001fj/k"# + "\u{7f}"
        XCTAssertEqual(json, "{\"\(escaped)\":\"\(escaped)\"}")
        let parsed = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: String]
        XCTAssertEqual(parsed, [nasty: nasty])
    }

    func testNonASCIIAndSlashesPassThroughUnescaped() throws {
        let text = "推送通知 🚀 café https://a.b/c?d=e,f"
        let json = written { w in w.beginArray(); w.string(text); w.string(""); w.endArray() }
        XCTAssertEqual(json, "[\"\(text)\",\"\"]")
        XCTAssertEqual(Array(json.utf8), Array("[\"".utf8) + Array(text.utf8) + Array("\",\"\"]".utf8))
        let parsed = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String]
        XCTAssertEqual(parsed, [text, ""])
    }

    func testEscapingAStringWithEmojiAndControlCharactersTogether() throws {
        let text = "👍\u{0}\"é\u{2028}"
        let json = written { w in w.beginArray(); w.string(text); w.endArray() }
        XCTAssertEqual(json, "[\"👍\\u0000\\\"é\u{2028}\"]")
        XCTAssertEqual(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String], [text])
    }

    func testResetKeepsNothingButTheStorage() {
        var w = JSONWriter()
        w.beginArray(); w.int(1)
        w.reset()
        XCTAssertTrue(w.bytes.isEmpty)
        w.beginArray(); w.int(2); w.endArray()
        XCTAssertEqual(String(decoding: w.bytes, as: UTF8.self), "[2]", "no comma left over from before the reset")
        XCTAssertEqual(w.data, Data("[2]".utf8))
    }

    func testUUIDsAreWrittenLowerCase() {
        for _ in 0..<1000 {
            let id = UUID()
            XCTAssertEqual(written { $0.uuid(id) }, "\"\(id.uuidString.lowercased())\"")
        }
    }
}
