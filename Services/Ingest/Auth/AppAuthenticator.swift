import Contracts
import Foundation
import Hummingbird
import Projections

/// Tells whether an API token (as its hash) is a live token of an app, from `AppAuthCache`, else
/// from the projection store. Shared by the Bearer routes (`AppAuthMiddleware`) and the
/// registration API's routes (`RegistrationGate`), so both judge a token the same way.
///
/// A cached entry that does not admit the token is not trusted to refuse it: the store is read
/// again, so a token issued since the entry was read works as soon as it is projected. An app
/// the store does not have is remembered as missing for the cache's TTL, so a flood of made-up
/// app ids costs one store read per id and TTL.
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
        switch cache.lookup(appId) {
        case .known(let cached):
            if let token = cached.admits(tokenHash) { return Authenticated(app: cached.app, scopes: token.scopes, legacyScopes: legacyScopes) }
        case .missing: return nil
        case nil: break
        }
        let readAt = ContinuousClock.now
        let (app, tokens) = try await readStore(context) {
            (try await store.app(appId), try await store.apiTokens(app: appId))
        }
        guard let app else {
            cache.rememberMissing(appId, readAt: readAt)
            return nil
        }
        let credentials = AppCredentials(app: app, tokens: tokens)
        cache.remember(credentials, readAt: readAt)
        return credentials.admits(tokenHash).map { Authenticated(app: app, scopes: $0.scopes, legacyScopes: legacyScopes) }
    }
}
