import Contracts
import Foundation
import Hummingbird
import Projections

/// Tells whether an API token (as its hash) is a live token of an app, from `AppAuthCache`, else
/// from the projection store. Shared by the Bearer routes (`AppAuthMiddleware`), the registration
/// API's write routes (`RegistrationGate`) and its status route, so all judge a token the same way.
///
/// A fresh cached entry of the app decides alone, for a token it lacks too (`AppAuthCache` says
/// why that is sound); an app the store does not have is remembered as missing for the cache's
/// TTL. So a flood of forged tokens, one or each a new one, costs one store read per app and TTL,
/// and a flood of made-up app ids one per id and TTL.
struct AppAuthenticator: Sendable {
    let store: any ProjectionReader
    let cache: AppAuthCache
    /// The scopes a legacy token has here (`PUSHLINE_LEGACY_TOKEN_SCOPE`): nil, every scope.
    let legacyScopes: [ApiTokenScope]?

    /// An app and the scopes of the live token of it that was presented.
    struct Authenticated: Sendable {
        var app: AppRow
        /// Nil: a legacy token, with the scopes `legacyScopes` leaves it (`ApiTokenScopes.grant`).
        var scopes: [ApiTokenScope]?
        var legacyScopes: [ApiTokenScope]?

        func grants(_ scope: ApiTokenScope) -> Bool { ApiTokenScopes.grant(scopes ?? legacyScopes, scope) }
        var isLegacy: Bool { scopes == nil }
    }

    /// The app and the token's scopes when `tokenHash` is one of its live tokens, else nil. A
    /// store failure throws (`readStore`: 503).
    func app(_ appId: UUID, tokenHash: String, context: IngestRequestContext) async throws -> Authenticated? {
        switch cache.verdict(appId, tokenHash: tokenHash) {
        case .admitted(let app, let scopes): return Authenticated(app: app, scopes: scopes, legacyScopes: legacyScopes)
        case .refused: return nil
        case nil: break
        }
        let (store, cache) = (store, cache)
        let read = try await cache.read(appId) {
            let readAt = ContinuousClock.now
            let (app, tokens) = try await readStore(context) {
                (try await store.app(appId), try await store.apiTokens(app: appId))
            }
            guard let app else {
                cache.rememberMissing(appId, readAt: readAt)
                return .missing
            }
            let credentials = AppCredentials(app: app, tokens: tokens)
            cache.remember(credentials, readAt: readAt)
            return .found(credentials)
        }
        guard case .found(let credentials) = read else { return nil }
        return credentials.admits(tokenHash).map { Authenticated(app: credentials.app, scopes: $0.scopes, legacyScopes: legacyScopes) }
    }
}
