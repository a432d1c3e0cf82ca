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

    /// The app when `tokenHash` is one of its live tokens, else nil. A store failure throws
    /// (`readStore`: 503).
    func app(_ appId: UUID, tokenHash: String, context: IngestRequestContext) async throws -> AppRow? {
        switch cache.lookup(appId) {
        case .known(let cached) where cached.admits(tokenHash): return cached.app
        case .missing: return nil
        default: break
        }
        let readAt = ContinuousClock.now
        let (app, tokens) = try await readStore(context) {
            (try await store.app(appId), try await store.apiTokens(app: appId))
        }
        guard let app else {
            cache.rememberMissing(appId, readAt: readAt)
            return nil
        }
        let credentials = AppCredentials(app: app, liveTokenHashes: tokens.filter { !$0.revoked }.map(\.tokenHash))
        cache.remember(credentials, readAt: readAt)
        return credentials.admits(tokenHash) ? app : nil
    }
}
