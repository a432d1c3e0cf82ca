import Foundation
import XCTest

/// docs/ARCHITECTURE.md's threat model is a table of attacks, each naming the tests that play it.
/// This walks the table: every claim names at least one test, and every test named exists (its
/// class declared in a file of `Tests/` that also declares the method), so that a claim cannot
/// outlive the test that proves it, nor be written without one.
final class ThreatModelTests: XCTestCase {
    func testEveryClaimOfTheThreatModelNamesTestsThatExist() throws {
        let rows = MarkdownTable.rows(in: try CodeFacts.document("docs/ARCHITECTURE.md"), firstHeader: "Attack")
        XCTAssertGreaterThanOrEqual(rows.count, 10, "the threat model's table is where ARCHITECTURE.md has it")
        let sources = try Self.testSources()
        for row in rows {
            XCTAssertEqual(row.count, 4, "\(row)")
            let proofs = row.last.map(Self.testNames) ?? []
            XCTAssertFalse(proofs.isEmpty, "no test proves: \(row[0])")
            for (type, method) in proofs {
                let declared = sources.contains { $0.contains("class \(type):") && $0.contains("func \(method)(") }
                XCTAssertTrue(declared, "\(row[0]): no test \(type).\(method) in Tests/")
            }
        }
    }

    func testTestNamesAreReadFromTheirCodeSpans() {
        let names = Self.testNames("`A.testOne`, `B.testTwo` and `not a name`")
        XCTAssertEqual(names.map { "\($0.type).\($0.method)" }, ["A.testOne", "B.testTwo"])
    }

    /// The `Type.testMethod` names in the code spans of a cell.
    static func testNames(_ cell: String) -> [(type: String, method: String)] {
        cell.matches(of: #/`([A-Za-z0-9_]+)\.(test[A-Za-z0-9_]+)`/#).map { (String($0.output.1), String($0.output.2)) }
    }

    /// The text of every Swift file under `Tests/`.
    static func testSources() throws -> [String] {
        let root = DeploymentTests.repository.appendingPathComponent("Tests")
        guard let files = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil) else { return [] }
        return try files.compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" }.map { try String(contentsOf: $0, encoding: .utf8) }
    }
}
