import Contracts
import Foundation
import Projections

/// Applies admin commands: the app table is a projection of the admin topic like any other.
enum AdminHandlers {
    static func apply(_ c: AppCreated, at: Date, to state: inout BatchState) -> HandlerResult {
        // A replayed or repeated creation must not reset settings changed since.
        if state.apps[c.mobileAppId] == nil {
            state.upsert(AppRow(appId: c.mobileAppId, orgId: c.orgId, name: c.name, createdAt: at))
        }
        state.upsert(ApiTokenRow(tokenId: c.tokenId, appId: c.mobileAppId, tokenHash: c.tokenHash, createdAt: at))
        return .applied
    }

    static func apply(_ c: ApiTokenIssued, at: Date, to state: inout BatchState) -> HandlerResult {
        guard state.apps[c.mobileAppId] != nil else { return .rejected("unknown-app") }
        state.upsert(ApiTokenRow(tokenId: c.tokenId, appId: c.mobileAppId, tokenHash: c.tokenHash, createdAt: at))
        return .applied
    }

    static func apply(_ c: ApiTokenRevoked, to state: inout BatchState) -> HandlerResult {
        guard var token = state.tokens[c.mobileAppId]?.first(where: { $0.tokenId == c.tokenId }) else {
            return .rejected("unknown-token")
        }
        guard !token.revoked else { return .applied }
        token.revoked = true
        state.upsert(token)
        return .applied
    }

    static func apply(_ c: AppSettingsChanged, to state: inout BatchState) -> HandlerResult {
        guard var app = state.apps[c.mobileAppId] else { return .rejected("unknown-app") }
        if let name = c.name { app.name = name }
        if let url = c.callbackUrl { app.callbackUrl = url.isEmpty ? nil : url }
        if let headers = c.callbackHeaders { app.callbackHeaders = headers }
        if let retries = c.webhookRetries { app.webhookRetries = retries }
        state.upsert(app)
        return .applied
    }
}

/// What a handler did with a command, for metrics and logs.
enum HandlerResult: Equatable {
    case applied
    /// Not applied, by rule (e.g. an invalid API token); the reason is a metric label.
    case rejected(String)
}
