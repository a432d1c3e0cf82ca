import Foundation
import XCTest

/// The shared store suites run on PostgreSQL only through the declarations in
/// `PostgresSuites.swift`; a test added to a suite without one there would silently run on
/// SQLite alone.
final class PostgresSuiteCoverageTests: XCTestCase {
    static let sharedSuites = ["MutationTests", "OffsetTests", "OutboxTests", "LoadTests", "ReadTests", "DumpTests",
                               "LargeCommitTests", "TrackingStoreTests", "DeadLetterStoreTests"]

    func testEveryTestOfTheSharedSuitesIsDeclaredForPostgreSQL() throws {
        let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        let declared = try String(contentsOf: directory.appendingPathComponent("PostgresSuites.swift"), encoding: .utf8)
        for suite in Self.sharedSuites {
            let source = try String(contentsOf: directory.appendingPathComponent("\(suite).swift"), encoding: .utf8)
            let tests = source.matches(of: /\n    func (test\w+)\(\)/).map { String($0.output.1) }
            XCTAssertFalse(tests.isEmpty, suite)
            XCTAssertTrue(declared.contains("final class Postgres\(suite): \(suite) {"), "no PostgreSQL class for \(suite)")
            for test in tests {
                XCTAssertTrue(declared.contains("override func \(test)()"), "\(suite).\(test) is not declared in PostgresSuites.swift")
            }
        }
    }
}
