import Contracts
import Foundation
import Hummingbird
import Projections
import Settings
import WireCodec

/// An app's verified user identity under `/admin/v1/apps/{mobileAppId}` (docs/API.md#verified-user-identity):
/// - `POST …/identity-secret` → `201 IdentitySecretAnswer`: a new identity secret, shown only in
///   this answer, sealed with the deployment's key before it becomes a command (it never enters
///   Kafka, the store or a log line in clear); it replaces the one before, whose assertions stop
///   working.
/// - `PUT …/identity` `{"required": true|false}` → `202 UserIdentityView`; requiring assertions
///   needs a secret first (409 without).
///
/// Both may refuse what every ingest instance admitted a moment before (a binding without an
/// assertion, an assertion under the old secret), so, like a revocation, they are answered once
/// no auth cache holds the app from before them (`AdminChangeApplied`). Turning verification off
/// loosens only, and is answered once applied. Without `PUSHLINE_SECRETS_KEY` a secret cannot be
/// made: 503.
struct UserIdentityRoutes: Sendable {
    let writer: CommandWriter
    let store: any ProjectionReader
    let applied: AdminChangeApplied
    let secrets: SecretsKeyring?
    let maxBodyBytes: Int

    func addRoutes(to group: RouterGroup<IngestRequestContext>) {
        group.post("apps/:mobileAppId/identity-secret", use: makeSecret)
        group.put("apps/:mobileAppId/identity", use: setRequired)
    }

    @Sendable func makeSecret(_ request: Request, context: IngestRequestContext) async throws -> Response {
        let mobileAppId = try FieldRules.uuidParameter("mobileAppId", in: context)
        guard let secrets else {
            let message = "an identity secret cannot be stored: \(SecretsVariable.key) is not set on ingest"
            context.logger.warning("\(message)")
            throw IngestError.rejected(.serviceUnavailable, Problem(error: message, code: .secretsKeyMissing))
        }
        let app = try await stored(mobileAppId, context)
        let secret = UserIdentity.generateSecret()
        let sealed = secrets.seal(Data(secret.utf8), context: UserIdentity.sealContext(app: mobileAppId))
        let command = UserIdentityChanged(mobileAppId: mobileAppId, secret: sealed, actor: context.adminActor, requestId: context.requestId)
        try await applied.wait(for: writer.publish(command, context: context), app: mobileAppId, changesAccess: true,
                               written: "the new identity secret of app \(mobileAppId)")
        context.logger.info("identity secret made", metadata: ["mobile_app_id": "\(mobileAppId)", "sealed_with": "\(sealed.keyId)"])
        let view = AdminAPI.UserIdentityView(required: app.identityRequired, secretSealedWith: sealed.keyId)
        return try JSONResponse.make(AdminAPI.IdentitySecretAnswer(identitySecret: secret, userIdentity: view), status: .created,
                                     encoder: WireJSON.encoder(), headers: [.cacheControl: "no-store"])
    }

    @Sendable func setRequired(_ request: Request, context: IngestRequestContext) async throws -> Response {
        let mobileAppId = try FieldRules.uuidParameter("mobileAppId", in: context)
        let body = try await JSONBody.collect(request, limit: maxBodyBytes)
        let input = try JSONBody.decode(AdminAPI.SetUserIdentity.self, from: body, decoder: WireJSON.decoder())
        guard let required = input.required else {
            throw IngestError.badRequest("required is needed: true (user assertions required) or false", field: "required", code: .fieldMissing)
        }
        let app = try await stored(mobileAppId, context)
        if required && app.identitySecret == nil {
            throw IngestError.rejected(.conflict, Problem(
                error: "this app has no identity secret to make user assertions with: POST /admin/v1/apps/{id}/identity-secret first",
                field: "required", code: .conflict))
        }
        let command = UserIdentityChanged(mobileAppId: mobileAppId, required: required, actor: context.adminActor,
                                          requestId: context.requestId)
        try await applied.wait(for: writer.publish(command, context: context), app: mobileAppId, changesAccess: required,
                               written: "the user identity setting of app \(mobileAppId)")
        context.logger.info("user identity setting changed", metadata: ["mobile_app_id": "\(mobileAppId)", "required": "\(required)"])
        return try JSONResponse.make(AdminAPI.UserIdentityView(required: required, secretSealedWith: app.identitySecret?.keyId),
                                     status: .accepted, encoder: WireJSON.encoder())
    }

    /// The app as the store has it; 404 for an unknown app (or one not projected yet).
    private func stored(_ app: UUID, _ context: IngestRequestContext) async throws -> AppRow {
        guard let row = try await readStore(context, { try await store.app(app) }) else { throw AdminRoutes.unknownApp }
        return row
    }
}
