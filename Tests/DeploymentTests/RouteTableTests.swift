import Foundation
import Ingest
import XCTest

/// docs/API.md's route table names exactly ingest's routes: `RouteScopes.table`, which
/// `TokenScopeTests` holds to the router (no route without an entry, no entry without a route).
final class RouteTableTests: XCTestCase {
    static let path = "docs/API.md"

    static var implemented: Set<String> {
        Set(RouteScopes.table.keys.map { "\($0.method.rawValue.uppercased()) \(RouteTable.normalized($0.path))" })
    }

    func testTheTableNamesExactlyTheRoutesOfTheRouter() throws {
        let rows = MarkdownTable.rows(in: try CodeFacts.document(Self.path), firstHeader: "Route")
        let (documented, unreadable) = RouteTable.routes(in: rows)
        XCTAssertEqual(unreadable, [])
        XCTAssertTrue(documented.isSuperset(of: ["GET /noop", "GET /v1/apps/{}/deliveries/{}/outcomes", "POST /api/v1.0/orgs/{}/pushdeviceregistration/devices/batch"]),
                      "\(documented.sorted())")
        let differences = RouteTable.differences(documented: documented, implemented: Self.implemented)
        XCTAssertEqual(differences.undocumented, [], "routes of the router missing from \(Self.path)'s table")
        XCTAssertEqual(differences.unknown, [], "routes in \(Self.path)'s table the router does not have")
    }

    func testARouteMissingOrExtraIsReported() {
        let rows = MarkdownTable.rows(in: """
            | Route | Answer |
            |---|---|
            | `POST /v1/apps/{id}/notifications` | `202` |
            | `GET /v1/apps/{id}/deliveries/{deliveryId}?limit=`, `…/deliveries/{deliveryId}/outcomes` | `200` |
            | `PUT /admin/v1/apps/{id}/credentials/apns`, `DELETE …/credentials/{apns\\|fcm}` | `202` |
            | `GET /v1/apps/{id}/nothing/` | `200` |
            """, firstHeader: "Route")
        let (documented, unreadable) = RouteTable.routes(in: rows)
        XCTAssertEqual(unreadable, [])
        XCTAssertEqual(documented, ["POST /v1/apps/{}/notifications", "GET /v1/apps/{}/deliveries/{}", "GET /v1/apps/{}/deliveries/{}/outcomes",
                                    "PUT /admin/v1/apps/{}/credentials/apns", "DELETE /admin/v1/apps/{}/credentials/{}", "GET /v1/apps/{}/nothing"])
        let implemented: Set<String> = ["POST /v1/apps/{}/notifications", "GET /v1/apps/{}/deliveries/{}", "GET /v1/apps/{}/deliveries/{}/outcomes",
                                        "PUT /admin/v1/apps/{}/credentials/{}", "DELETE /admin/v1/apps/{}/credentials/{}", "GET /noop"]
        let differences = RouteTable.differences(documented: documented, implemented: implemented)
        XCTAssertEqual(differences.undocumented, ["GET /noop"])
        XCTAssertEqual(differences.unknown, ["GET /v1/apps/{}/nothing"])
        XCTAssertEqual(RouteTable.routes(in: [["`…/unknown/x`"]]).unreadable, ["…/unknown/x"])
    }
}
