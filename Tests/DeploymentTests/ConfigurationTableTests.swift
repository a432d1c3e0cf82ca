import Foundation
import XCTest

/// docs/CONFIGURATION.md's table is the one list of Pushline's settings: every variable an
/// executable reads is in it, and it lists nothing that no executable reads.
final class ConfigurationTableTests: XCTestCase {
    static let path = "docs/CONFIGURATION.md"

    func testTheTableListsExactlyTheVariablesTheExecutablesRead() throws {
        let documented = CodeFacts.configurationTable(in: try CodeFacts.document(Self.path))
        let read = try CodeFacts.variablesOfEveryExecutable(repository: DeploymentTests.repository)
        XCTAssertTrue(read.isSuperset(of: ["PUSHLINE_TOPIC_PREFIX", "PUSHLINE_ADMIN_TOKEN", "PUSHLINE_INGEST_URL"]), "\(read.sorted())")
        XCTAssertEqual(read.subtracting(documented).sorted(), [], "read by the code but not in \(Self.path)'s table")
        XCTAssertEqual(documented.subtracting(read).sorted(), [], "in \(Self.path)'s table but read by no executable")
    }

    func testTheTableIsReadRowByRowToItsEnd() {
        let document = """
            # X
            | Variable | Default |
            |---|---|
            | `PUSHLINE_A` | `1` mentions `PUSHLINE_NOT_A_ROW` |
            | `PUSHLINE_B` / `PUSHLINE_C` | `2` \\| `3` |

            | `PUSHLINE_D` | `3` |
            """
        XCTAssertEqual(CodeFacts.configurationTable(in: document), ["PUSHLINE_A", "PUSHLINE_B", "PUSHLINE_C"])
        XCTAssertEqual(MarkdownTable.rows(in: document, firstHeader: "Variable").last, ["`PUSHLINE_B` / `PUSHLINE_C`", "`2` | `3`"])
    }
}
