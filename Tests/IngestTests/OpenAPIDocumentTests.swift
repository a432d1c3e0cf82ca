import Contracts
import Foundation
import Hummingbird
import HummingbirdTesting
@testable import Ingest
import XCTest
import Yams

/// `Services/Ingest/Ops/openapi.yaml` stays true: it documents exactly the routes the router
/// has, it is what `GET /openapi.yaml` serves, and it is OpenAPI 3.1.
final class OpenAPIDocumentTests: XCTestCase {
    static let documentURL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Services/Ingest/Ops/openapi.yaml")

    func testEveryRouteIsDocumentedAndEveryDocumentedRouteExists() throws {
        let differences = try Self.differences(documented: Self.documentedRoutes(), implemented: Self.implementedRoutes(Self.router()))
        XCTAssertTrue(differences.isEmpty, differences.description)
    }

    func testARouteAddedWithoutDocumentationIsReported() throws {
        let router = Self.router()
        router.get("undocumented/:thing") { _, _ in HTTPResponse.Status.noContent }
        router.patch("health") { _, _ in HTTPResponse.Status.noContent }
        let differences = try Self.differences(documented: Self.documentedRoutes(), implemented: Self.implementedRoutes(router))
        XCTAssertEqual(differences.undocumented, ["GET /undocumented/{}", "PATCH /health"])
        XCTAssertEqual(differences.unimplemented, [])
        XCTAssertTrue(differences.description.contains("GET /undocumented/{}"), differences.description)
    }

    func testADocumentedRouteThatDoesNotExistIsReported() throws {
        let documented = try Self.documentedRoutes().union(["DELETE /admin/v1/apps/{}"])
        let differences = Self.differences(documented: documented, implemented: Self.implementedRoutes(Self.router()))
        XCTAssertEqual(differences.unimplemented, ["DELETE /admin/v1/apps/{}"])
        XCTAssertEqual(differences.undocumented, [])
    }

    func testOpenAPIYamlServesExactlyTheFileBytes() async throws {
        let file = try Data(contentsOf: Self.documentURL)
        let response = try await Harness().test { client in try await client.execute(uri: "/openapi.yaml", method: .get) }
        XCTAssertEqual(response.status, .ok)
        XCTAssertEqual(response.headers[.contentType], "application/yaml")
        XCTAssertEqual(Data(response.body.readableBytesView), file, "GET /openapi.yaml differs from \(Self.documentURL.path)")
    }

    /// Every refusal's `code` is in the `Problem` schema's list, and the list holds no code the
    /// service never gives.
    func testTheProblemSchemaListsExactlyTheCodesTheServiceGives() throws {
        let schemas = try XCTUnwrap((try Self.document()["components"] as? [String: Any])?["schemas"] as? [String: Any])
        let problem = try XCTUnwrap(schemas["Problem"] as? [String: Any])
        let code = try XCTUnwrap((problem["properties"] as? [String: Any])?["code"] as? [String: Any])
        XCTAssertEqual(code["enum"] as? [String], ProblemCode.known.map(\.rawValue))
        XCTAssertEqual(problem["required"] as? [String], ["error", "code"])
    }

    func testDocumentIsOpenAPI31() throws {
        let document = try Self.document()
        let version = try XCTUnwrap(document["openapi"] as? String, "no openapi version string")
        XCTAssertTrue(version.hasPrefix("3.1."), "openapi: \(version)")
    }

    /// The refusals of the shared middleware and body rules, which schemathesis rarely or never
    /// provokes, are documented wherever they can happen: 429 on every route the source rate
    /// limit covers, 400/413/415 on every JSON body, 400/401/403 on the app routes, 401 on the
    /// admin routes.
    func testEveryOperationDocumentsTheRefusalsOfItsMiddleware() throws {
        let paths = try XCTUnwrap(try Self.document()["paths"] as? [String: [String: Any]])
        var missing: [String] = []
        for (path, item) in paths {
            for (method, value) in item where Self.httpMethods.contains(method) {
                let operation = try XCTUnwrap(value as? [String: Any], "\(method) \(path)")
                let statuses = Set((operation["responses"] as? [String: Any] ?? [:]).keys)
                let schemes = Set((operation["security"] as? [[String: Any]] ?? []).flatMap(\.keys))
                let body = (operation["requestBody"] as? [String: Any])?["content"] as? [String: Any]
                var expected: Set<String> = []
                if !["/health", "/metrics"].contains(path) { expected.insert("429") }
                if body?["application/json"] != nil { expected.formUnion(["400", "413", "415"]) }
                if schemes.contains("AppBearer") { expected.formUnion(["400", "401", "403", "503"]) }
                if schemes.contains("AdminBearer") { expected.formUnion(["401", "503"]) }
                for status in expected.subtracting(statuses).sorted() {
                    missing.append("\(method.uppercased()) \(path): \(status)")
                }
            }
        }
        XCTAssertEqual(missing.sorted(), [], "responses missing from Services/Ingest/Ops/openapi.yaml")
    }

    /// Every operation names its scope in `x-pushline-scope`, and that is the scope the router
    /// enforces (`RouteScopes.table`, which `RouteScopeMiddleware` looks every request up in);
    /// its security and refusals say the same.
    func testEveryOperationNamesTheScopeTheRouterEnforces() throws {
        let paths = try XCTUnwrap(try Self.document()["paths"] as? [String: [String: Any]])
        var enforced: [String: String] = [:]
        for (route, scope) in RouteScopes.table {
            enforced["\(route.method.rawValue.uppercased()) \(Self.normalized(route.path))"] = scope.rawValue
        }
        var documented: [String: String] = [:]
        var problems: [String] = []
        for (path, item) in paths {
            for (method, value) in item where Self.httpMethods.contains(method) {
                let name = "\(method.uppercased()) \(Self.normalized(path))"
                let operation = try XCTUnwrap(value as? [String: Any], name)
                guard let scope = operation["x-pushline-scope"] as? String else {
                    problems.append("\(name): no x-pushline-scope")
                    continue
                }
                documented[name] = scope
                let schemes = Set((operation["security"] as? [[String: Any]] ?? []).flatMap(\.keys))
                let statuses = Set((operation["responses"] as? [String: Any] ?? [:]).keys)
                switch scope {
                case "admin" where !schemes.contains("AdminBearer"): problems.append("\(name): admin scope without AdminBearer")
                case "client", "server":
                    if !statuses.contains("403") { problems.append("\(name): \(scope) scope without a 403") }
                    if !schemes.contains("AppBearer") && !path.hasPrefix("/api/v1.0/") {
                        problems.append("\(name): \(scope) scope without AppBearer")
                    }
                case "none" where !schemes.isEmpty: problems.append("\(name): no scope but security \(schemes)")
                default: break
                }
            }
        }
        XCTAssertEqual(problems.sorted(), [])
        XCTAssertEqual(documented, enforced, "x-pushline-scope in Services/Ingest/Ops/openapi.yaml against RouteScopes.table")
    }

    // MARK: - Helpers

    static let httpMethods: Set<String> = ["get", "put", "post", "delete", "patch", "head", "options", "trace"]

    /// Routes as `METHOD /path` with every path parameter written `{}`, so that the document's
    /// `{mobileAppId}` and the router's `:mobileAppId` (shown as `{mobileAppId}`) compare equal.
    struct Differences: CustomStringConvertible {
        /// Routes the router has and the document lacks.
        var undocumented: [String]
        /// Routes the document has and the router lacks.
        var unimplemented: [String]

        var isEmpty: Bool { undocumented.isEmpty && unimplemented.isEmpty }

        var description: String {
            "routes without documentation in Services/Ingest/Ops/openapi.yaml: \(undocumented); "
                + "documented routes the router does not have: \(unimplemented)"
        }
    }

    static func differences(documented: Set<String>, implemented: Set<String>) -> Differences {
        Differences(undocumented: implemented.subtracting(documented).sorted(),
                    unimplemented: documented.subtracting(implemented).sorted())
    }

    static func router() -> Router<IngestRequestContext> {
        let harness = Harness()
        return buildRouter(configuration: harness.configuration, publisher: harness.publisher, store: harness.store,
                           metrics: TestMetrics.registry)
    }

    static func implementedRoutes(_ router: Router<IngestRequestContext>) -> Set<String> {
        Set(router.routes.map { "\($0.method.rawValue.uppercased()) \(normalized($0.path.description))" })
    }

    static func documentedRoutes() throws -> Set<String> {
        let paths = try XCTUnwrap(try document()["paths"] as? [String: Any], "the document has no paths")
        var routes: Set<String> = []
        for (path, item) in paths {
            let operations = try XCTUnwrap(item as? [String: Any], "path \(path) is not a mapping")
            for method in operations.keys where httpMethods.contains(method) {
                routes.insert("\(method.uppercased()) \(normalized(path))")
            }
        }
        return routes
    }

    static func document() throws -> [String: Any] {
        let text = try String(contentsOf: documentURL, encoding: .utf8)
        return try XCTUnwrap(try Yams.load(yaml: text) as? [String: Any], "the document is not a YAML mapping")
    }

    /// `/a/{x}/b/:y/` → `/a/{}/b/{}`.
    static func normalized(_ path: String) -> String {
        let components = path.split(separator: "/", omittingEmptySubsequences: true).map { component in
            component.hasPrefix(":") || (component.hasPrefix("{") && component.hasSuffix("}")) ? "{}" : String(component)
        }
        return "/" + components.joined(separator: "/")
    }
}
