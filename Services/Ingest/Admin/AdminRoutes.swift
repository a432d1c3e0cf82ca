import Contracts
import Foundation
import Hummingbird
import Projections

/// The admin API (docs/API.md#admin-api) under `/admin/v1`, behind `AdminAuthMiddleware`: apps,
/// their API tokens and settings. Changes are commands like everything else (the app table is a
/// projection); each is answered once a processor applied it (`AdminChangeApplied`), so a 2xx
/// means every route of every ingest instance already sees it.
struct AdminRoutes: Sendable {
    static let basePath: RouterPath = "admin/v1"

    let writer: CommandWriter
    let store: any ProjectionReader
    let applied: AdminChangeApplied
    let maxBodyBytes: Int

    func addRoutes(to group: RouterGroup<IngestRequestContext>) {
        group.post("apps", use: createApp)
        group.get("apps", use: listApps)
        group.get("apps/:mobileAppId", use: getApp)
        group.patch("apps/:mobileAppId", use: updateApp)
        group.post("apps/:mobileAppId/tokens", use: issueToken)
        group.delete("apps/:mobileAppId/tokens/:tokenId", use: revokeToken)
    }

    /// `POST /admin/v1/apps` → `201 AppCreatedAnswer`; the raw token is shown only here.
    @Sendable func createApp(_ request: Request, context: IngestRequestContext) async throws -> Response {
        let body = try await JSONBody.collect(request, limit: maxBodyBytes)
        let create = try JSONBody.decode(AdminAPI.CreateApp.self, from: body, decoder: WireJSON.decoder())
        let name = try FieldRules.required(create.name?.trimmingCharacters(in: .whitespacesAndNewlines), maxBytes: FieldLimits.shortTextBytes,
                                           field: "name")

        let token = ApiTokens.generate()
        let command = AppCreated(orgId: create.orgId ?? UUID(), mobileAppId: UUID(), name: name, tokenId: UUID(),
                                 tokenHash: ApiTokens.hash(token),
                                 actor: context.adminActor, requestId: context.requestId)
        let encoder = CommandWriter.makeEncoder()
        try await applied.wait(for: writer.publish([writer.encode(command, encoder: encoder)], context: context),
                               written: "app \(command.mobileAppId) (its first token \(command.tokenId))")
        context.logger.info("app created", metadata: ["mobile_app_id": "\(command.mobileAppId)", "org_id": "\(command.orgId)"])
        return try JSONResponse.make(
            AdminAPI.AppCreatedAnswer(orgId: command.orgId, mobileAppId: command.mobileAppId, apiToken: token, tokenId: command.tokenId),
            status: .created, encoder: encoder, headers: Self.secretHeaders)
    }

    /// `POST /admin/v1/apps/{mobileAppId}/tokens` → `201 TokenIssuedAnswer`.
    @Sendable func issueToken(_ request: Request, context: IngestRequestContext) async throws -> Response {
        let mobileAppId = try FieldRules.uuidParameter("mobileAppId", in: context)
        guard try await readStore(context, { try await store.app(mobileAppId) }) != nil else {
            throw Self.unknownApp
        }
        let token = ApiTokens.generate()
        let command = ApiTokenIssued(mobileAppId: mobileAppId, tokenId: UUID(), tokenHash: ApiTokens.hash(token),
                                     actor: context.adminActor, requestId: context.requestId)
        let encoder = CommandWriter.makeEncoder()
        try await applied.wait(for: writer.publish([writer.encode(command, encoder: encoder)], context: context),
                               written: "token \(command.tokenId) of app \(mobileAppId)")
        context.logger.info("api token issued", metadata: ["mobile_app_id": "\(mobileAppId)", "token_id": "\(command.tokenId)"])
        return try JSONResponse.make(AdminAPI.TokenIssuedAnswer(tokenId: command.tokenId, apiToken: token),
                                     status: .created, encoder: encoder, headers: Self.secretHeaders)
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
        try await applied.wait(for: writer.publish(command, context: context), revokesTokens: true,
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
        guard try await readStore(context, { try await store.app(mobileAppId) }) != nil else {
            throw Self.unknownApp
        }
        let command = AppSettingsChanged(mobileAppId: mobileAppId, name: update.name, callbackUrl: update.callbackUrl,
                                         callbackHeaders: update.callbackHeaders, webhookRetries: update.webhookRetries,
                                         actor: context.adminActor, requestId: context.requestId)
        try await applied.wait(for: writer.publish(command, context: context), written: "the settings change of app \(mobileAppId)")
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

    private static func view(_ app: AppRow, tokens: [ApiTokenRow]) -> AdminAPI.AppView {
        AdminAPI.AppView(
            orgId: app.orgId, mobileAppId: app.appId, name: app.name, callbackUrl: app.callbackUrl,
            callbackHeaders: app.callbackHeaders, webhookRetries: app.webhookRetries,
            tokens: tokens.map { AdminAPI.TokenView(tokenId: $0.tokenId, revoked: $0.revoked) },
            pushCredentials: app.pushCredentials.map(AdminAPI.PushCredentialsView.init))
    }


    static let unknownApp = IngestError.notFound("no such app (or not projected yet)", field: "mobileAppId")
    /// Answers that carry a raw API token must not be cached anywhere.
    private static let secretHeaders: HTTPFields = [.cacheControl: "no-store"]
}
