import Foundation
import XCTest

/// docs/METRICS.md's table lists exactly the metrics the services register: a metric added,
/// renamed or removed without the table fails here.
final class MetricsTableTests: XCTestCase {
    static let path = "docs/METRICS.md"

    func testTheTableListsExactlyTheMetricsTheServicesRegister() throws {
        let documented = CodeFacts.metricsTable(in: try CodeFacts.document(Self.path))
        let registered = try CodeFacts.metricsOfEveryExecutable(repository: DeploymentTests.repository)
        XCTAssertTrue(registered.isSuperset(of: ["pushline_ingest_requests_total", "pushline_processor_active", "pushline_sender_pushes_total"]),
                      "\(registered.sorted())")
        XCTAssertEqual(registered.subtracting(documented).sorted(), [], "registered by a service but not in \(Self.path)'s table")
        XCTAssertEqual(documented.subtracting(registered).sorted(), [], "in \(Self.path)'s table but registered by no service")
    }

    func testTheTableIsReadRowByRowToItsEnd() {
        let document = """
            ## Metrics
            | Metric | Labels | Meaning |
            |---|---|---|
            | `pushline_a_total` | — | mentions `pushline_not_a_row` |
            | `pushline_b` | `x` | b |

            | `pushline_c` | — | c |
            """
        XCTAssertEqual(CodeFacts.metricsTable(in: document), ["pushline_a_total", "pushline_b"])
    }
}
