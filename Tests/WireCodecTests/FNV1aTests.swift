import WireCodec
import XCTest

final class FNV1aTests: XCTestCase {
    func testPublishedTestVectors() {
        XCTAssertEqual(FNV1a.hash(""), 0xCBF2_9CE4_8422_2325)
        XCTAssertEqual(FNV1a.hash("a"), 0xAF63_DC4C_8601_EC8C)
        XCTAssertEqual(FNV1a.hash("foobar"), 0x8594_4171_F739_67E8)
    }
}
