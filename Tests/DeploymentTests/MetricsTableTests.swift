import Foundation
import XCTest

/// The README's metrics table lists exactly the metrics the services register: a metric added,
/// renamed or removed without the README fails here.
final class MetricsTableTests: XCTestCase {
    func testTheReadmeTableListsExactlyTheMetricsTheServicesRegister() throws {
        let readme = try String(contentsOf: DeploymentTests.repository.appendingPathComponent("README.md"), encoding: .utf8)
        let documented = CodeFacts.metricsTable(inReadme: readme)
        let registered = try CodeFacts.metricsOfEveryExecutable(repository: DeploymentTests.repository)
        XCTAssertTrue(registered.isSuperset(of: ["pushline_ingest_requests_total", "pushline_processor_active", "pushline_sender_pushes_total"]),
                      "\(registered.sorted())")
        XCTAssertEqual(registered.subtracting(documented).sorted(), [], "registered by a service but not in the README's table")
        XCTAssertEqual(documented.subtracting(registered).sorted(), [], "in the README's table but registered by no service")
    }

    func testTheTableIsReadRowByRowUpToTheNextHeading() {
        let readme = """
            ## Operating
            ### Metrics
            | Metric | Labels | Meaning |
            |---|---|---|
            | `pushline_a_total` | — | mentions `pushline_not_a_row` |
            | `pushline_b` | `x` | b |
            ### Security settings
            | `pushline_c` | — | c |
            """
        XCTAssertEqual(CodeFacts.metricsTable(inReadme: readme), ["pushline_a_total", "pushline_b"])
    }
}
