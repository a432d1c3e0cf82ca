import Contracts
import Foundation
import Projections

// The admin commands: the app table is a projection of the admin topic like any other. They run
// first in their batch (`BatchPhase.admin`) and need only their app's row.

struct AppCreatedHandler: CommandHandler {
    var phase: BatchPhase { .admin }

    func addNeeds(of c: AppCreated, to query: inout StateQuery) { query.appIds.insert(c.mobileAppId) }

    func apply(_ c: AppCreated, _ context: CommandContext, to state: inout BatchState) -> HandlerResult {
        // A replayed or repeated creation must not reset settings changed since.
        if state.apps[c.mobileAppId] == nil {
            state.upsert(AppRow(appId: c.mobileAppId, orgId: c.orgId, name: c.name, createdAt: context.at))
        }
        state.upsert(ApiTokenRow(tokenId: c.tokenId, appId: c.mobileAppId, tokenHash: c.tokenHash, createdAt: context.at))
        return .applied
    }
}

struct ApiTokenIssuedHandler: CommandHandler {
    var phase: BatchPhase { .admin }

    func addNeeds(of c: ApiTokenIssued, to query: inout StateQuery) { query.appIds.insert(c.mobileAppId) }

    func apply(_ c: ApiTokenIssued, _ context: CommandContext, to state: inout BatchState) -> HandlerResult {
        guard state.apps[c.mobileAppId] != nil else { return .rejected("unknown-app") }
        state.upsert(ApiTokenRow(tokenId: c.tokenId, appId: c.mobileAppId, tokenHash: c.tokenHash, createdAt: context.at))
        return .applied
    }
}

struct ApiTokenRevokedHandler: CommandHandler {
    var phase: BatchPhase { .admin }

    func addNeeds(of c: ApiTokenRevoked, to query: inout StateQuery) { query.appIds.insert(c.mobileAppId) }

    func apply(_ c: ApiTokenRevoked, _ context: CommandContext, to state: inout BatchState) -> HandlerResult {
        guard var token = state.tokens[c.mobileAppId]?.first(where: { $0.tokenId == c.tokenId }) else {
            return .rejected("unknown-token")
        }
        guard !token.revoked else { return .applied }
        token.revoked = true
        state.upsert(token)
        return .applied
    }
}

struct AppSettingsChangedHandler: CommandHandler {
    var phase: BatchPhase { .admin }

    func addNeeds(of c: AppSettingsChanged, to query: inout StateQuery) { query.appIds.insert(c.mobileAppId) }

    func apply(_ c: AppSettingsChanged, _ context: CommandContext, to state: inout BatchState) -> HandlerResult {
        guard var app = state.apps[c.mobileAppId] else { return .rejected("unknown-app") }
        if let name = c.name { app.name = name }
        if let url = c.callbackUrl { app.callbackUrl = url.isEmpty ? nil : url }
        if let headers = c.callbackHeaders { app.callbackHeaders = headers }
        if let retries = c.webhookRetries { app.webhookRetries = retries }
        state.upsert(app)
        return .applied
    }
}
