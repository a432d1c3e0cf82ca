import Foundation
import XCTest

/// The README's configuration table is the one list of Pushline's settings: every variable an
/// executable reads is in it, and it lists nothing that no executable reads.
final class ConfigurationTableTests: XCTestCase {
    func testTheReadmeTableListsExactlyTheVariablesTheExecutablesRead() throws {
        let readme = try String(contentsOf: DeploymentTests.repository.appendingPathComponent("README.md"), encoding: .utf8)
        let documented = CodeFacts.configurationTable(inReadme: readme)
        let read = try CodeFacts.variablesOfEveryExecutable(repository: DeploymentTests.repository)
        XCTAssertTrue(read.isSuperset(of: ["PUSHLINE_TOPIC_PREFIX", "PUSHLINE_ADMIN_TOKEN", "PUSHLINE_INGEST_URL"]), "\(read.sorted())")
        XCTAssertEqual(read.subtracting(documented).sorted(), [], "read by the code but not in the README's table")
        XCTAssertEqual(documented.subtracting(read).sorted(), [], "in the README's table but read by no executable")
    }

    func testTheTableIsReadRowByRowUpToTheNextSection() {
        let readme = """
            # X
            ## Configuration
            | Variable | Default |
            |---|---|
            | `PUSHLINE_A` | `1` mentions `PUSHLINE_NOT_A_ROW` |
            | `PUSHLINE_B` / `PUSHLINE_C` | `2` |
            ## Next
            | `PUSHLINE_D` | `3` |
            """
        XCTAssertEqual(CodeFacts.configurationTable(inReadme: readme), ["PUSHLINE_A", "PUSHLINE_B", "PUSHLINE_C"])
    }
}
