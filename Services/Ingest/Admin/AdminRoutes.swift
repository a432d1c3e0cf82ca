import Contracts
import Foundation
import Hummingbird
import Projections
import WireCodec

/// The admin API (docs/API.md#admin-api) under `/admin/v1`, behind `AdminAuthMiddleware`: apps,
/// their API tokens and settings. Changes are commands like everything else (the app table is a
/// projection); each is answered once a processor applied it (`AdminChangeApplied`), so a 2xx
/// means every route of every ingest instance already sees it.
struct AdminRoutes: Sendable {
    static let basePath: RouterPath = "admin/v1"

    let writer: CommandWriter
    let store: any ProjectionReader
    let applied: AdminChangeApplied
    /// `PUSHLINE_IDEMPOTENCY_WINDOW_HOURS`.
    let idempotencyWindow: Duration
    /// What keyed creates derive raw tokens from.
    let tokenKey: CreatedTokenKey
    /// Seals the values of `callbackHeaders` (`SealedHeaders`); nil: written as given.
    let secrets: SecretsKeyring?
    let maxBodyBytes: Int

    func addRoutes(to group: RouterGroup<IngestRequestContext>) {
        group.post("apps", use: createApp)
        group.get("apps", use: listApps)
        group.get("apps/:mobileAppId", use: getApp)
        group.patch("apps/:mobileAppId", use: updateApp)
        group.post("apps/:mobileAppId/tokens", use: issueToken)
        group.delete("apps/:mobileAppId/tokens/:tokenId", use: revokeToken)
    }

    /// `POST /admin/v1/apps` → `201 AppCreatedAnswer`: the app with a server token and a client
    /// token (docs/API.md#token-scopes); the raw tokens are shown only here, and again to a retry
    /// with the same `Idempotency-Key` and admin token (`AdminCreateKey`).
    @Sendable func createApp(_ request: Request, context: IngestRequestContext) async throws -> Response {
        let body = try await JSONBody.collect(request, limit: maxBodyBytes)
        let create = try JSONBody.decode(AdminAPI.CreateApp.self, from: body, decoder: WireJSON.decoder())
        let name = try FieldRules.required(create.name?.trimmingCharacters(in: .whitespacesAndNewlines), maxBytes: FieldLimits.shortTextBytes,
                                           field: "name")
        let encoder = CommandWriter.makeEncoder()
        let keyed = try AdminCreateKey(request, body: body, route: "apps", tokenKey: tokenKey, context: context)

        var appId = UUID(), orgId = create.orgId ?? UUID()
        var (serverTokenId, clientTokenId) = (UUID(), UUID())
        var (serverToken, clientToken) = (ApiTokens.generate(), ApiTokens.generate())
        if let keyed {
            switch try await keyed.lookup(in: store, window: idempotencyWindow, context: context) {
            case .applied(let created):
                return try await createdAgain(created, keyed: keyed, context: context, encoder: encoder)
            case .new(let id):
                appId = id
                orgId = create.orgId ?? IdempotencyKeys.derivedId(of: id, "org")
                (serverTokenId, clientTokenId) = Self.tokenIds(of: id)
                (serverToken, clientToken) = (keyed.token(serverTokenId), keyed.token(clientTokenId))
            }
        }
        let command = AppCreated(orgId: orgId, mobileAppId: appId, name: name, tokenId: serverTokenId,
                                 tokenHash: ApiTokens.hash(serverToken), tokenScopes: AppCreated.serverTokenScopes,
                                 clientTokenId: clientTokenId, clientTokenHash: ApiTokens.hash(clientToken),
                                 actor: context.adminActor, requestId: context.requestId, idempotency: keyed?.stamp)
        try await applied.wait(for: writer.publish(writer.encode(command, encoder: encoder), context: context),
                               app: command.mobileAppId, changesAccess: true,
                               written: "app \(command.mobileAppId) (its server token \(command.tokenId), client token \(clientTokenId))")
        context.logger.info("app created", metadata: ["mobile_app_id": "\(command.mobileAppId)", "org_id": "\(command.orgId)"])
        return try JSONResponse.make(
            AdminAPI.AppCreatedAnswer(orgId: command.orgId, mobileAppId: command.mobileAppId, apiToken: serverToken, tokenId: command.tokenId,
                                      apiTokenScopes: AppCreated.serverTokenScopes, clientToken: clientToken,
                                      clientTokenId: clientTokenId, clientTokenScopes: AppCreated.clientTokenScopes),
            status: .created, encoder: encoder, headers: Self.secretHeaders)
    }

    /// The server and client token ids of an app created with an idempotency key.
    static func tokenIds(of appId: UUID) -> (server: UUID, client: UUID) {
        (IdempotencyKeys.derivedId(of: appId, "server token"), IdempotencyKeys.derivedId(of: appId, "client token"))
    }

    /// The answer to a keyed create already applied: the same app and raw tokens.
    private func createdAgain(_ appId: UUID, keyed: AdminCreateKey, context: IngestRequestContext,
                              encoder: JSONEncoder) async throws -> Response {
        let (app, tokens) = try await readStore(context) { (try await store.app(appId), try await store.apiTokens(app: appId)) }
        guard let app else { throw Self.unknownApp }
        let (serverTokenId, clientTokenId) = Self.tokenIds(of: appId)
        let (serverToken, clientToken) = (keyed.token(serverTokenId), keyed.token(clientTokenId))
        try AdminCreateKey.check(serverToken, against: tokens.first { $0.tokenId == serverTokenId }, hash: \.tokenHash)
        try AdminCreateKey.check(clientToken, against: tokens.first { $0.tokenId == clientTokenId }, hash: \.tokenHash)
        try await applied.waitCacheLifetime()
        var headers = Self.secretHeaders
        headers[.idempotentReplayed] = "true"
        return try JSONResponse.make(
            AdminAPI.AppCreatedAnswer(orgId: app.orgId, mobileAppId: appId, apiToken: serverToken, tokenId: serverTokenId,
                                      apiTokenScopes: AppCreated.serverTokenScopes, clientToken: clientToken,
                                      clientTokenId: clientTokenId, clientTokenScopes: AppCreated.clientTokenScopes,
                                      userIdentity: AdminAPI.UserIdentityView(required: app.identityRequired,
                                                                              secretSealedWith: app.identitySecret?.keyId)),
            status: .created, encoder: encoder, headers: headers)
    }

    /// `POST /admin/v1/apps/{mobileAppId}/tokens` `{"scopes": ["client"|"server", …]}` →
    /// `201 TokenIssuedAnswer`; 400 naming `scopes` when they are missing, empty or unknown. With
    /// an `Idempotency-Key`, a retry gets the same token (`AdminCreateKey`).
    @Sendable func issueToken(_ request: Request, context: IngestRequestContext) async throws -> Response {
        let mobileAppId = try FieldRules.uuidParameter("mobileAppId", in: context)
        let (scopes, body) = try await Self.requestedScopes(request, limit: maxBodyBytes)
        guard try await readStore(context, { try await store.app(mobileAppId) }) != nil else {
            throw Self.unknownApp
        }
        let encoder = CommandWriter.makeEncoder()
        let keyed = try AdminCreateKey(request, body: body, route: "apps/\(mobileAppId.lowercasedString)/tokens", tokenKey: tokenKey, context: context)
        var tokenId = UUID(), token = ApiTokens.generate()
        if let keyed {
            switch try await keyed.lookup(in: store, window: idempotencyWindow, context: context) {
            case .applied(let issued):
                let row = try await readStore(context) { try await store.apiTokens(app: mobileAppId) }.first { $0.tokenId == issued }
                let stored = try AdminCreateKey.check(keyed.token(issued), against: row, hash: \.tokenHash)
                try await applied.waitCacheLifetime()
                var headers = Self.secretHeaders
                headers[.idempotentReplayed] = "true"
                return try JSONResponse.make(AdminAPI.TokenIssuedAnswer(tokenId: issued, apiToken: keyed.token(issued), scopes: stored.scopes ?? scopes),
                                             status: .created, encoder: encoder, headers: headers)
            case .new(let id):
                (tokenId, token) = (id, keyed.token(id))
            }
        }
        let command = ApiTokenIssued(mobileAppId: mobileAppId, tokenId: tokenId, tokenHash: ApiTokens.hash(token), scopes: scopes,
                                     actor: context.adminActor, requestId: context.requestId, idempotency: keyed?.stamp)
        try await applied.wait(for: writer.publish(writer.encode(command, encoder: encoder), context: context),
                               app: mobileAppId, changesAccess: true, written: "token \(command.tokenId) of app \(mobileAppId)")
        context.logger.info("api token issued", metadata: ["mobile_app_id": "\(mobileAppId)", "token_id": "\(command.tokenId)",
                                                           "scopes": "\(ApiTokenScopes.column(scopes) ?? "")"])
        return try JSONResponse.make(AdminAPI.TokenIssuedAnswer(tokenId: command.tokenId, apiToken: token, scopes: scopes),
                                     status: .created, encoder: encoder, headers: Self.secretHeaders)
    }

    /// The scopes of a token to issue, normalized; 400 naming the field when the body has none
    /// (no body at all included: a token's scopes are always chosen) or names an unknown one.
    static func requestedScopes(_ request: Request, limit: Int) async throws -> (scopes: [ApiTokenScope], body: ByteBuffer) {
        let choose = "choose the new token's scopes: {\"scopes\": [\"client\"]} (ships in the mobile app), [\"server\"] (sends; stays on your servers) or both"
        // No body at all (RFC 9112: neither a length nor chunks, or a length of 0).
        let declared = request.headers[.contentLength].flatMap { Int($0) }
        if declared == 0 || (declared == nil && request.headers[.transferEncoding] == nil) {
            throw IngestError.badRequest("scopes is required: " + choose, field: "scopes", code: .fieldMissing)
        }
        let body = try await JSONBody.collect(request, limit: limit)
        let issue = try JSONBody.decode(AdminAPI.IssueToken.self, from: body, decoder: WireJSON.decoder())
        guard let names = issue.scopes, !names.isEmpty else {
            throw IngestError.badRequest("scopes is required: " + choose, field: "scopes", code: .fieldMissing)
        }
        var scopes: [ApiTokenScope] = []
        for (index, name) in names.enumerated() {
            guard let scope = ApiTokenScope(rawValue: name) else {
                throw IngestError.badRequest("unknown scope \"\(name)\": " + choose, field: "scopes[\(index)]")
            }
            scopes.append(scope)
        }
        return (ApiTokenScopes.normalized(scopes), body)
    }

    /// `DELETE /admin/v1/apps/{mobileAppId}/tokens/{tokenId}` → 202.
    @Sendable func revokeToken(_ request: Request, context: IngestRequestContext) async throws -> Response {
        let mobileAppId = try FieldRules.uuidParameter("mobileAppId", in: context)
        let tokenId = try FieldRules.uuidParameter("tokenId", in: context)
        let (app, tokens) = try await readStore(context) {
            (try await store.app(mobileAppId), try await store.apiTokens(app: mobileAppId))
        }
        guard app != nil else { throw Self.unknownApp }
        guard tokens.contains(where: { $0.tokenId == tokenId }) else {
            throw IngestError.notFound("no such API token for this app", field: "tokenId")
        }
        let command = ApiTokenRevoked(mobileAppId: mobileAppId, tokenId: tokenId, actor: context.adminActor, requestId: context.requestId)
        try await applied.wait(for: writer.publish(command, context: context), app: mobileAppId, changesAccess: true,
                               written: "the revocation of token \(tokenId) of app \(mobileAppId)")
        context.logger.info("api token revoked", metadata: ["mobile_app_id": "\(mobileAppId)", "token_id": "\(tokenId)"])
        return Response(status: .accepted)
    }

    /// `PATCH /admin/v1/apps/{mobileAppId}` → 202. Fields present are set; `callbackUrl: ""` removes it.
    @Sendable func updateApp(_ request: Request, context: IngestRequestContext) async throws -> Response {
        let mobileAppId = try FieldRules.uuidParameter("mobileAppId", in: context)
        let body = try await JSONBody.collect(request, limit: maxBodyBytes)
        let update = try JSONBody.decode(AdminAPI.UpdateApp.self, from: body, decoder: WireJSON.decoder())
        if let name = update.name, name.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
            throw IngestError.badRequest("name must not be empty", field: "name")
        }
        if let name = update.name { try FieldRules.bounded(name, maxBytes: FieldLimits.shortTextBytes, field: "name") }
        if let callbackUrl = update.callbackUrl, !callbackUrl.isEmpty {
            _ = try FieldRules.callbackURL(callbackUrl, field: "callbackUrl")
        }
        if let headers = update.callbackHeaders {
            try FieldRules.headerMap(headers, field: "callbackHeaders")
        }
        if let retries = update.webhookRetries, !(0...10).contains(retries) {
            throw IngestError.badRequest("webhookRetries must be between 0 and 10", field: "webhookRetries")
        }
        let webhookHosts = try update.webhookHosts.map(Self.webhookHosts)
        if let zone = update.timeZone, !zone.isEmpty,
           zone.utf8.count > FieldLimits.timeZoneBytes || !TimeZones.isKnown(zone) {
            throw IngestError.badRequest("timeZone must be an IANA time zone name, such as Europe/Lisbon", field: "timeZone")
        }
        let quietHours = try FieldRules.quietHours(update.quietHours)
        let frequencyCaps = try update.frequencyCaps.map(Self.frequencyCaps)
        guard try await readStore(context, { try await store.app(mobileAppId) }) != nil else {
            throw Self.unknownApp
        }
        // Header values are often the receiver's credentials: sealed before they become a command.
        let callbackHeaders = update.callbackHeaders.map { headers in
            secrets.map { SealedHeaders.seal(headers, app: mobileAppId, keyring: $0) } ?? headers
        }
        let command = AppSettingsChanged(mobileAppId: mobileAppId, name: update.name, callbackUrl: update.callbackUrl,
                                         callbackHeaders: callbackHeaders, webhookRetries: update.webhookRetries,
                                         webhookHosts: webhookHosts, timeZone: update.timeZone, quietHours: quietHours,
                                         frequencyCaps: frequencyCaps,
                                         actor: context.adminActor, requestId: context.requestId)
        try await applied.wait(for: writer.publish(command, context: context), app: mobileAppId, written: "the settings change of app \(mobileAppId)")
        context.logger.info("app settings changed", metadata: ["mobile_app_id": "\(mobileAppId)"])
        return Response(status: .accepted)
    }

    /// `GET /admin/v1/apps/{mobileAppId}` → `200 AppView`, as the projection store has it now.
    @Sendable func getApp(_ request: Request, context: IngestRequestContext) async throws -> Response {
        let mobileAppId = try FieldRules.uuidParameter("mobileAppId", in: context)
        let (app, tokens) = try await readStore(context) {
            (try await store.app(mobileAppId), try await store.apiTokens(app: mobileAppId))
        }
        guard let app else { throw Self.unknownApp }
        return try JSONResponse.make(Self.view(app, tokens: tokens), status: .ok, encoder: WireJSON.encoder())
    }

    /// `GET /admin/v1/apps?limit=1…1000 (100)&after={mobileAppId}` → `200 AppList`, one page
    /// ordered by id; the answer's `next` is the `after` of the following page.
    @Sendable func listApps(_ request: Request, context: IngestRequestContext) async throws -> Response {
        let query = request.uri.queryParameters
        let limit = try FieldRules.pageLimit(query.get("limit"))
        let after = try query.get("after").map { try FieldRules.uuid($0, field: "after") }
        let (views, more) = try await readStore(context) {
            // One more than asked tells whether a next page exists.
            var rows = try await store.apps(after: after, limit: limit + 1)
            let more = rows.count > limit
            if more { rows.removeLast() }
            var views: [AdminAPI.AppView] = []
            views.reserveCapacity(rows.count)
            for app in rows {
                views.append(Self.view(app, tokens: try await store.apiTokens(app: app.appId)))
            }
            return (views, more)
        }
        let list = AdminAPI.AppList(apps: views, next: more ? views.last?.mobileAppId : nil)
        return try JSONResponse.make(list, status: .ok, encoder: WireJSON.encoder())
    }

    /// The hosts of a PATCH's `webhookHosts`, normalized, duplicates dropped; `[]` stays empty
    /// (it removes the list). 400 naming the entry when one is not a host.
    static func webhookHosts(_ entries: [String]) throws -> [String] {
        guard entries.count <= WebhookHosts.maxEntries else {
            throw IngestError.badRequest("at most \(WebhookHosts.maxEntries) hosts", field: "webhookHosts")
        }
        var hosts: [String] = []
        for (index, entry) in entries.enumerated() {
            guard let host = WebhookHosts.normalized(entry) else {
                throw IngestError.badRequest("must be a host name, an IP address, or *. and a domain, of at most "
                                             + "\(WebhookHosts.maxEntryBytes) characters", field: "webhookHosts[\(index)]")
            }
            if !hosts.contains(host) { hosts.append(host) }
        }
        return hosts
    }

    /// The canonical text of a PATCH's `frequencyCaps` (`FrequencyCap.text`); `[]` gives `""`,
    /// which removes them.
    static func frequencyCaps(_ caps: [AdminAPI.Cap]) throws -> String {
        guard caps.count <= FrequencyCap.maxCaps else {
            throw IngestError.badRequest("at most \(FrequencyCap.maxCaps) caps", field: "frequencyCaps")
        }
        return FrequencyCap.text(try caps.enumerated().map { index, cap in
            if let category = cap.category, !FrequencyCap.isCategory(category) {
                throw IngestError.badRequest("a category is 1 to \(FrequencyCap.maxCategoryBytes) of a-z, 0-9, '-', '_' and '.'",
                                             field: "frequencyCaps[\(index)].category")
            }
            guard (1...FrequencyCap.maxLimit).contains(cap.limit) else {
                throw IngestError.badRequest("limit must be between 1 and \(FrequencyCap.maxLimit)", field: "frequencyCaps[\(index)].limit")
            }
            guard (1...(FrequencyCap.maxWindow / 3600)).contains(cap.windowHours),
                  let parsed = FrequencyCap(category: cap.category, limit: cap.limit, window: cap.windowHours * 3600) else {
                throw IngestError.badRequest("windowHours must be between 1 and \(FrequencyCap.maxWindow / 3600)",
                                             field: "frequencyCaps[\(index)].windowHours")
            }
            return parsed
        })
    }

    /// An app as the admin API shows it. Callback header values are left out (`redacted`): they
    /// are often credentials of the app's backend, and the app's receivers already hold them.
    private static func view(_ app: AppRow, tokens: [ApiTokenRow]) -> AdminAPI.AppView {
        AdminAPI.AppView(
            orgId: app.orgId, mobileAppId: app.appId, name: app.name, callbackUrl: app.callbackUrl,
            callbackHeaders: app.callbackHeaders.mapValues { _ in RedactedURL.mask }, webhookRetries: app.webhookRetries,
            tokens: tokens.map {
                AdminAPI.TokenView(tokenId: $0.tokenId, revoked: $0.revoked, scopes: $0.scopes ?? ApiTokenScope.allCases, legacy: $0.isLegacy)
            },
            pushCredentials: app.pushCredentials.map(AdminAPI.PushCredentialsView.init),
            webhookHosts: app.webhookHosts,
            userIdentity: AdminAPI.UserIdentityView(required: app.identityRequired, secretSealedWith: app.identitySecret?.keyId),
            timeZone: app.timeZone, quietHours: app.quietHours,
            frequencyCaps: app.frequencyCaps.flatMap(FrequencyCap.list).map { $0.map(AdminAPI.Cap.init) })
    }


    static let unknownApp = IngestError.notFound("no such app (or not projected yet)", field: "mobileAppId")
    /// Answers that carry a raw API token must not be cached anywhere.
    private static let secretHeaders: HTTPFields = [.cacheControl: "no-store"]
}
