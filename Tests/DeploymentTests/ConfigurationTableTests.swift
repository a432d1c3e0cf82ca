import Foundation
import XCTest

/// docs/CONFIGURATION.md's table is the one list of Pushline's settings: every variable an
/// executable reads is in it, it lists nothing that no executable reads, and each row's default
/// and "Used by" are what the code reads it with and who reads it.
final class ConfigurationTableTests: XCTestCase {
    static let path = "docs/CONFIGURATION.md"

    func testTheTableListsExactlyTheVariablesTheExecutablesRead() throws {
        let documented = CodeFacts.configurationTable(in: try CodeFacts.document(Self.path))
        let read = try CodeFacts.variablesOfEveryExecutable(repository: DeploymentTests.repository)
        XCTAssertTrue(read.isSuperset(of: ["PUSHLINE_TOPIC_PREFIX", "PUSHLINE_ADMIN_TOKEN", "PUSHLINE_INGEST_URL"]), "\(read.sorted())")
        XCTAssertEqual(read.subtracting(documented).sorted(), [], "read by the code but not in \(Self.path)'s table")
        XCTAssertEqual(documented.subtracting(read).sorted(), [], "in \(Self.path)'s table but read by no executable")
    }

    /// The configurations read every variable the sources name, so the defaults and readers
    /// recorded below are every read there is.
    func testTheConfigurationsReadEveryVariableTheSourcesName() throws {
        let recorded = try ConfigurationReads.recorded(repository: DeploymentTests.repository)
        let names = recorded.values.reduce(into: Set<String>()) { $0.formUnion($1.keys) }
        let read = try CodeFacts.variablesOfEveryExecutable(repository: DeploymentTests.repository)
        XCTAssertEqual(read.subtracting(names).sorted(), [], "named in the sources, read by none of the configurations")
        XCTAssertEqual(recorded[.processor]?["PUSHLINE_LOG_LEVEL"], [.value("info"), .value("warning")])
        XCTAssertEqual(recorded[.ingest]?["PUSHLINE_ADMIN_TOKEN"], [.required])
        XCTAssertEqual(recorded[.sender]?["PUSHLINE_SENDER_PORT"], [.value("8082")])
    }

    func testEachRowsDefaultAndUsersAreTheCodes() throws {
        let rows = MarkdownTable.rows(in: try CodeFacts.document(Self.path), firstHeader: "Variable")
        XCTAssertGreaterThan(rows.count, 40)
        let problems = ConfigurationReads.problems(table: rows, recorded: try ConfigurationReads.recorded(repository: DeploymentTests.repository))
        XCTAssertEqual(problems, [], "\n" + problems.joined(separator: "\n"))
    }

    /// A default or a "Used by" changed on one side only is reported, by variable.
    func testADefaultOrAUserThatDriftedIsReported() throws {
        let recorded = try ConfigurationReads.recorded(repository: DeploymentTests.repository)
        func problems(_ row: String) -> [String] {
            ConfigurationReads.problems(table: MarkdownTable.rows(in: "| Variable | Default | Used by | Meaning |\n|---|---|---|---|\n" + row,
                                                                  firstHeader: "Variable"),
                                        recorded: recorded)
        }
        XCTAssertEqual(problems("| `PUSHLINE_PARTITIONS` | `12` | all | p |"), [])
        XCTAssertEqual(problems("| `PUSHLINE_PARTITIONS` | `13` | all | p |"), ["PUSHLINE_PARTITIONS: default `13` in the table, `12` in the code"])
        XCTAssertEqual(problems("| `PUSHLINE_PARTITIONS` | `12` | ingest, processor | p |"),
                       ["PUSHLINE_PARTITIONS: used by ingest, processor in the table, all in the code"])
        XCTAssertEqual(problems("| `PUSHLINE_INGEST_HOST` / `PUSHLINE_INGEST_PORT` | `127.0.0.1` / `8081` | ingest | a |"),
                       ["PUSHLINE_INGEST_PORT: default `8081` in the table, `8080` in the code"])
        XCTAssertEqual(problems("| `PUSHLINE_INGEST_HOST` / `PUSHLINE_INGEST_PORT` | `127.0.0.1` | ingest | a |"),
                       ["PUSHLINE_INGEST_HOST / PUSHLINE_INGEST_PORT: 1 defaults for 2 variables"])
        XCTAssertEqual(problems("| `PUSHLINE_LOG_LEVEL` | `info` | all | l |"),
                       ["PUSHLINE_LOG_LEVEL: the code also reads it with the default `warning`, which the table does not name"])
        XCTAssertEqual(problems("| `PUSHLINE_ADMIN_TOKEN` | — | ingest, `pushline` | t |"),
                       ["PUSHLINE_ADMIN_TOKEN: an executable requires it, which the table does not say"])
        XCTAssertEqual(problems("| `PUSHLINE_SENDER_CA_FILE` | none | sender | c |"), [])
        XCTAssertEqual(problems("| `PUSHLINE_SENDER_PORT` | some port | sender, nobody | p |"),
                       ["PUSHLINE_SENDER_PORT: [\"nobody\"] in Used by is not an executable",
                        "PUSHLINE_SENDER_PORT: the table's default is prose (some port), the code's `8082`"])
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
