import Contracts
import Foundation
import Projections

/// The handler of an admin command: the app table is a projection of the admin topic like any
/// other. Admin commands need only their app's row. An app in parts gets each of its admin
/// commands once in every part, and each part keeps its own rows of the app
/// (docs/ARCHITECTURE.md#one-app-in-parts); what is kept once — an idempotency key's first
/// request, the audit trail — part 0 writes.
package protocol AdminCommandHandler: CommandHandler {
    /// The app the command is about.
    func app(of command: Handled) -> UUID
}

extension AdminCommandHandler {
    package func addNeeds(of command: Handled, to query: inout StateQuery) { query.appIds.insert(app(of: command)) }
}

package struct AppCreatedHandler: AdminCommandHandler {
    package func app(of c: AppCreated) -> UUID { c.mobileAppId }

    package func apply(_ c: AppCreated, _ context: CommandContext, to state: inout BatchState) -> HandlerResult {
        // A keyed create's app id is its key's: a known one is a retry (or the key with another
        // body), which must change nothing, not even bring back a token revoked since.
        if let stamp = c.idempotency {
            guard state.app(c.mobileAppId, part: context.part) == nil else { return .rejected("idempotent-repeat") }
            if context.part == 0 {
                state.record(IdempotencyKeyRow(scope: stamp.scope, key: stamp.key, resourceId: c.mobileAppId,
                                               requestHash: stamp.requestHash, firstAt: context.at))
            }
        }
        // A replayed or repeated creation must not reset settings changed since.
        if state.app(c.mobileAppId, part: context.part) == nil {
            state.upsert(AppRow(appId: c.mobileAppId, orgId: c.orgId, name: c.name, createdAt: context.at, part: context.part))
        }
        state.upsert(ApiTokenRow(tokenId: c.tokenId, appId: c.mobileAppId, tokenHash: c.tokenHash, createdAt: context.at,
                                 scopes: c.tokenScopes, part: context.part))
        // Records from before scopes have no client token.
        if let clientTokenId = c.clientTokenId, let clientTokenHash = c.clientTokenHash {
            state.upsert(ApiTokenRow(tokenId: clientTokenId, appId: c.mobileAppId, tokenHash: clientTokenHash, createdAt: context.at,
                                     scopes: AppCreated.clientTokenScopes, part: context.part))
        }
        return .applied
    }
}

package struct ApiTokenIssuedHandler: AdminCommandHandler {
    package func app(of c: ApiTokenIssued) -> UUID { c.mobileAppId }

    package func apply(_ c: ApiTokenIssued, _ context: CommandContext, to state: inout BatchState) -> HandlerResult {
        guard state.app(c.mobileAppId, part: context.part) != nil else { return .rejected("unknown-app") }
        if let stamp = c.idempotency {
            // The token id is the key's: a known one is a retry, which must not undo a revocation.
            guard !state.tokens(of: c.mobileAppId, part: context.part).contains(where: { $0.tokenId == c.tokenId }) else {
                return .rejected("idempotent-repeat")
            }
            if context.part == 0 {
                state.record(IdempotencyKeyRow(scope: stamp.scope, key: stamp.key, resourceId: c.tokenId, requestHash: stamp.requestHash,
                                               firstAt: context.at))
            }
        }
        state.upsert(ApiTokenRow(tokenId: c.tokenId, appId: c.mobileAppId, tokenHash: c.tokenHash, createdAt: context.at,
                                 scopes: c.scopes, part: context.part))
        return .applied
    }
}

package struct ApiTokenRevokedHandler: AdminCommandHandler {
    package func app(of c: ApiTokenRevoked) -> UUID { c.mobileAppId }

    package func apply(_ c: ApiTokenRevoked, _ context: CommandContext, to state: inout BatchState) -> HandlerResult {
        guard var token = state.tokens(of: c.mobileAppId, part: context.part).first(where: { $0.tokenId == c.tokenId }) else {
            return .rejected("unknown-token")
        }
        guard !token.revoked else { return .applied }
        token.revoked = true
        state.upsert(token)
        return .applied
    }
}

package struct AppSettingsChangedHandler: AdminCommandHandler {
    package func app(of c: AppSettingsChanged) -> UUID { c.mobileAppId }

    package func addNeeds(of c: AppSettingsChanged, to query: inout StateQuery) {
        query.appIds.insert(c.mobileAppId)
        // Caps set in the batch count from each user's pushes already counted: a send after it
        // in the batch needs its users' settings as stored.
        if c.frequencyCaps != nil { query.capsChangedApps.insert(c.mobileAppId) }
    }

    package func apply(_ c: AppSettingsChanged, _ context: CommandContext, to state: inout BatchState) -> HandlerResult {
        guard var app = state.app(c.mobileAppId, part: context.part) else { return .rejected("unknown-app") }
        if let name = c.name { app.name = name }
        if let url = c.callbackUrl { app.callbackUrl = url.isEmpty ? nil : url }
        if let headers = c.callbackHeaders { app.callbackHeaders = headers }
        if let retries = c.webhookRetries { app.webhookRetries = retries }
        // Normalized again (ingest wrote them normalized): the rule a registration is judged by is this one.
        if let hosts = c.webhookHosts { app.webhookHosts = hosts.isEmpty ? nil : hosts.compactMap(WebhookHosts.normalized) }
        if let zone = c.timeZone { app.timeZone = zone.isEmpty ? nil : zone }
        // Canonical again; text no reader takes removes them rather than keeping a rule nobody set.
        if let quiet = c.quietHours { app.quietHours = QuietHours(quiet)?.description }
        if let caps = c.frequencyCaps { app.frequencyCaps = FrequencyCap.list(caps).flatMap { $0.isEmpty ? nil : FrequencyCap.text($0) } }
        state.upsert(app)
        return .applied
    }
}

package struct PushCredentialsSetHandler: AdminCommandHandler {
    package func app(of c: PushCredentialsSet) -> UUID { c.mobileAppId }

    package func apply(_ c: PushCredentialsSet, _ context: CommandContext, to state: inout BatchState) -> HandlerResult {
        guard var app = state.app(c.mobileAppId, part: context.part) else { return .rejected("unknown-app") }
        // Ingest writes exactly one provider per command; a record with neither changes nothing.
        guard c.apns != nil || c.fcm != nil else { return .rejected("no-credentials") }
        var credentials = app.pushCredentials ?? PushCredentials()
        if let apns = c.apns { credentials.apns = apns }
        if let fcm = c.fcm { credentials.fcm = fcm }
        app.pushCredentials = credentials
        state.upsert(app)
        return .applied
    }
}

package struct PushCredentialsRemovedHandler: AdminCommandHandler {
    package func app(of c: PushCredentialsRemoved) -> UUID { c.mobileAppId }

    package func apply(_ c: PushCredentialsRemoved, _ context: CommandContext, to state: inout BatchState) -> HandlerResult {
        guard var app = state.app(c.mobileAppId, part: context.part) else { return .rejected("unknown-app") }
        var credentials = app.pushCredentials ?? PushCredentials()
        switch c.provider {
        case .apns: credentials.apns = nil
        case .fcm: credentials.fcm = nil
        }
        // No credentials left is stored as none at all, whatever the order they were removed in.
        app.pushCredentials = credentials.isEmpty ? nil : credentials
        state.upsert(app)
        return .applied
    }
}

package struct UserIdentityChangedHandler: AdminCommandHandler {
    package func app(of c: UserIdentityChanged) -> UUID { c.mobileAppId }

    /// Requiring assertions needs a secret to make them with, as of this point of the log: ingest
    /// refuses such a change, so a record asking for it is refused here too.
    package func apply(_ c: UserIdentityChanged, _ context: CommandContext, to state: inout BatchState) -> HandlerResult {
        guard var app = state.app(c.mobileAppId, part: context.part) else { return .rejected("unknown-app") }
        if let secret = c.secret { app.identitySecret = secret }
        if let required = c.required {
            guard !required || app.identitySecret != nil else { return .rejected("no-identity-secret") }
            app.identityRequired = required
        }
        state.upsert(app)
        return .applied
    }
}

package struct AdminTokenIssuedHandler: CommandHandler {
    package func addNeeds(of c: AdminTokenIssued, to query: inout StateQuery) { query.adminTokenIds.insert(c.adminTokenId) }

    package func apply(_ c: AdminTokenIssued, _ context: CommandContext, to state: inout BatchState) -> HandlerResult {
        // A repeated issue must not undo a revocation applied since. A keyed one's id is its key's,
        // so a known one is a retry of it.
        guard state.adminTokens[c.adminTokenId] == nil else { return c.idempotency == nil ? .applied : .rejected("idempotent-repeat") }
        if let stamp = c.idempotency {
            state.record(IdempotencyKeyRow(scope: stamp.scope, key: stamp.key, resourceId: c.adminTokenId, requestHash: stamp.requestHash,
                                           firstAt: context.at))
        }
        state.upsert(AdminTokenRow(adminTokenId: c.adminTokenId, name: c.name, tokenHash: c.tokenHash, createdAt: context.at))
        return .applied
    }
}

package struct AdminTokenRevokedHandler: CommandHandler {
    package func addNeeds(of c: AdminTokenRevoked, to query: inout StateQuery) { query.adminTokenIds.insert(c.adminTokenId) }

    package func apply(_ c: AdminTokenRevoked, _ context: CommandContext, to state: inout BatchState) -> HandlerResult {
        guard var token = state.adminTokens[c.adminTokenId] else { return .rejected("unknown-admin-token") }
        guard !token.revoked else { return .applied }
        token.revoked = true
        token.revokedAt = context.at
        state.upsert(token)
        return .applied
    }
}
