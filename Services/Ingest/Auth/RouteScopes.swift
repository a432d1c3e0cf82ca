import Contracts
import Hummingbird

/// What a route asks of its caller (docs/API.md#token-scopes): an app's API token with the
/// `client` or the `server` scope, the admin bearer token, or nothing.
public enum RouteScope: String, Sendable, CaseIterable {
    case client, server, admin, none

    /// The API token scope the route needs; nil for admin and open routes.
    public var tokenScope: ApiTokenScope? {
        switch self {
        case .client: .client
        case .server: .server
        case .admin, .none: nil
        }
    }
}

/// The one table of every route's scope. `RouteScopeMiddleware` looks each request's matched
/// route up in it, so what a route enforces is what this table says; `RouteScopeTests` holds the
/// table to the router (no route without an entry, no entry without a route), and
/// `OpenAPIDocumentTests` holds each operation's `x-pushline-scope` to it.
///
/// Paths are the router's templates (`{name}` for a parameter), as `context.endpointPath` has them.
public enum RouteScopes {
    public struct Route: Hashable, Sendable {
        public var method: HTTPRequest.Method
        public var path: String

        public init(_ method: HTTPRequest.Method, _ path: String) {
            self.method = method
            self.path = path
        }
    }

    private static let registration = "/api/v1.0/orgs/{orgId}/pushdeviceregistration"
    private static let admin = "/admin/v1/apps"

    public static let table: [Route: RouteScope] = [
        // The device registration API (token in the body): what a device does.
        Route(.post, "\(registration)/devices"): .client,
        Route(.post, "\(registration)/devices/batch"): .client,
        Route(.post, "\(registration)/devices/status"): .client,
        Route(.post, "\(registration)/devices/cleanup"): .client,
        Route(.post, "\(registration)/devices/cleanup/batch"): .client,
        // BW device service, KF5 token API, engagement tracking: the device's own calls.
        Route(.put, "/bwmi/v1/apps/{mobileAppId}/devices"): .client,
        Route(.delete, "/bwmi/v1/apps/{mobileAppId}/devices"): .client,
        Route(.put, "/bwmi/v1/apps/{mobileAppId}/acks"): .client,
        Route(.get, "/bwmi/v1/apps/{mobileAppId}/devices/{deviceToken}/notifications"): .client,
        Route(.post, "/kf5/v1/apps/{mobileAppId}/tokens"): .client,
        Route(.delete, "/kf5/v1/apps/{mobileAppId}/tokens"): .client,
        Route(.post, "/v1/apps/{mobileAppId}/tracking"): .client,
        Route(.post, "/v1/apps/{mobileAppId}/devices/changes"): .client,
        // What the app's backend does: send, read statistics and outcomes.
        Route(.post, "/v1/apps/{mobileAppId}/notifications"): .server,
        Route(.get, "/v1/apps/{mobileAppId}/notifications"): .server,
        Route(.delete, "/v1/apps/{mobileAppId}/notifications/{deliveryId}"): .server,
        Route(.put, "/v1/apps/{mobileAppId}/users/{userId}/settings"): .server,
        Route(.get, "/v1/apps/{mobileAppId}/users/{userId}/settings"): .server,
        Route(.get, "/v1/apps/{mobileAppId}/deliveries/{deliveryId}"): .server,
        Route(.get, "/v1/apps/{mobileAppId}/deliveries/{deliveryId}/outcomes"): .server,
        Route(.post, "/v1/apps/{mobileAppId}/devices/changes/batch"): .server,
        Route(.post, "/v1/apps/{mobileAppId}/audiences/count"): .server,
        // The admin API (admin bearer token).
        Route(.post, admin): .admin,
        Route(.get, admin): .admin,
        Route(.get, "\(admin)/{mobileAppId}"): .admin,
        Route(.patch, "\(admin)/{mobileAppId}"): .admin,
        Route(.post, "\(admin)/{mobileAppId}/tokens"): .admin,
        Route(.delete, "\(admin)/{mobileAppId}/tokens/{tokenId}"): .admin,
        Route(.put, "\(admin)/{mobileAppId}/credentials/{provider}"): .admin,
        Route(.get, "\(admin)/{mobileAppId}/credentials/{provider}"): .admin,
        Route(.delete, "\(admin)/{mobileAppId}/credentials/{provider}"): .admin,
        Route(.post, "\(admin)/{mobileAppId}/identity-secret"): .admin,
        Route(.put, "\(admin)/{mobileAppId}/identity"): .admin,
        Route(.get, "\(admin)/{mobileAppId}/webhook-signing-secret"): .admin,
        Route(.post, "/admin/v1/admin-tokens"): .admin,
        Route(.get, "/admin/v1/admin-tokens"): .admin,
        Route(.delete, "/admin/v1/admin-tokens/{adminTokenId}"): .admin,
        Route(.get, "/admin/v1/audit"): .admin,
        // Operations.
        Route(.get, "/health"): .none,
        Route(.get, "/metrics"): .none,
        Route(.get, "/noop"): .none,
        Route(.post, "/noop"): .none,
        Route(.get, "/openapi.yaml"): .none,
    ]

    /// The scope of a route, nil when the table has no such route.
    public static func scope(_ method: HTTPRequest.Method, _ path: String) -> RouteScope? {
        table[Route(method, path)]
    }
}

/// Looks the matched route up in `RouteScopes.table` and puts its scope in the context, for
/// `AppAuthMiddleware` and the registration API to enforce. A route the table lacks is a
/// programming error, answered 500 (and caught by `RouteScopeTests` first). Requests that match
/// no route pass on to the 404.
struct RouteScopeMiddleware: RouterMiddleware {
    typealias Context = IngestRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let path = context.endpointPath else { return try await next(request, context) }
        guard let scope = RouteScopes.scope(request.method, path) else { throw MissingRouteScope(route: "\(request.method) \(path)") }
        var context = context
        context.routeScope = scope
        return try await next(request, context)
    }
}

/// A route was added without an entry in `RouteScopes.table`: 500.
struct MissingRouteScope: Error, CustomStringConvertible {
    var route: String
    var description: String { "route \(route) has no entry in RouteScopes.table" }
}

extension IngestRequestContext {
    /// The API token scope the matched route needs (`RouteScopeMiddleware`); throws (500) on a
    /// route whose scope is not an API token scope, which only a programming error can cause.
    func requiredTokenScope() throws -> ApiTokenScope {
        guard let scope = routeScope?.tokenScope else {
            throw MissingRouteScope(route: (endpointPath ?? "?") + " (no API token scope)")
        }
        return scope
    }
}

/// The 403 of a live token of the app that lacks the route's scope (docs/API.md#token-scopes).
enum ScopeRefusal {
    static func problem(missing scope: ApiTokenScope, field: String) -> IngestError {
        .rejected(.forbidden, Problem(error: "this token lacks the \"\(scope.rawValue)\" scope: \(advice(scope))", field: field, code: .scopeMissing))
    }

    private static func advice(_ scope: ApiTokenScope) -> String {
        switch scope {
        case .server: "send with a server token (it stays on the app's servers; a client token ships in the app and cannot send)"
        case .client: "use a client token (or a token with both scopes) for device calls"
        }
    }
}
