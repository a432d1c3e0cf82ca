import Contracts
import Foundation
import Hummingbird
import Projections

/// Guards the Bearer routes of one app (`…/apps/{mobileAppId}/…`): `Authorization: Bearer <api
/// token>` must carry a live API token of the app in the path, with the scope the route needs
/// (`RouteScopes.table`, docs/API.md#authentication).
///
/// - `mobileAppId` not a UUID → 400 naming it.
/// - No or a malformed `Authorization` → 401 (with `WWW-Authenticate: Bearer`).
/// - Any token that is not a live token of the app (unknown, revoked, forged, or another app's)
///   → 401, all alike: the answer tells nobody whether a token is live elsewhere, and costs no
///   store read beyond the app's (docs/API.md#authentication).
/// - A live token of the app without the route's scope → 403 naming the missing scope.
/// - A legacy token (no scopes: every scope, or only `client` where `PUSHLINE_LEGACY_TOKEN_SCOPE`
///   says so) on a server route is admitted and counted in
///   `pushline_ingest_legacy_token_requests_total`, so that operators see what still uses one.
///
/// The token is only ever handled as its hash, which the route finds with the app's row in
/// `context.authenticatedApp()`. App credentials come from `AppAuthCache`, else from the store
/// through `readStore` (a store failure is a 503): a flood of forged tokens reads the store once
/// per app and TTL.
struct AppAuthMiddleware: RouterMiddleware {
    typealias Context = IngestRequestContext

    let store: any ProjectionReader
    let cache: AppAuthCache
    /// `PUSHLINE_LEGACY_TOKEN_SCOPE`: the scopes a legacy token keeps (nil: every scope).
    let legacyScopes: [ApiTokenScope]?
    let metrics: IngestMetrics

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let mobileAppId = try FieldRules.uuidParameter("mobileAppId", in: context)
        guard let token = AdminAuthMiddleware.bearerToken(request.headers[.authorization]) else {
            throw IngestError.rejected(.unauthorized, Problem(
                error: "an API token of this app is required: Authorization: Bearer <token>", field: "Authorization", code: .tokenMissing))
        }
        let scope = try context.requiredTokenScope()
        let tokenHash = ApiTokens.hash(token)
        guard let authenticated = try await authenticate(mobileAppId, tokenHash: tokenHash, context: context) else {
            throw IngestError.rejected(.unauthorized, Problem(error: "the API token is not a live token of this app", field: "Authorization", code: .tokenInvalid))
        }
        guard authenticated.grants(scope) else { throw ScopeRefusal.problem(missing: scope, field: "Authorization") }
        if authenticated.isLegacy, scope == .server { metrics.countLegacyTokenRequest(route: context.endpointPath ?? "") }
        var context = context
        context.authenticatedApp = AuthenticatedApp(app: authenticated.app, tokenHash: tokenHash, scope: scope)
        context.logger[metadataKey: "mobile_app_id"] = .string(mobileAppId.uuidString.lowercased())
        return try await next(request, context)
    }

    private func authenticate(_ appId: UUID, tokenHash: String, context: Context) async throws -> AppAuthenticator.Authenticated? {
        try await AppAuthenticator(store: store, cache: cache, legacyScopes: legacyScopes).app(appId, tokenHash: tokenHash, context: context)
    }
}
