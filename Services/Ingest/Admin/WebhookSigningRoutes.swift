import Contracts
import Foundation
import Hummingbird
import Projections
import Settings
import WireCodec

/// `GET /admin/v1/apps/{mobileAppId}/webhook-signing-secret` (docs/API.md#webhook-signatures):
/// the app's secret for checking the `x-pushline-signature` of its status webhooks and callbacks.
/// Ingest derives it from the deployment's keys exactly as the processor does when it signs, so
/// nothing is stored and nothing travels on the log. Without `PUSHLINE_SECRETS_KEY` the route
/// answers 503: webhooks then go unsigned.
struct WebhookSigningRoutes: Sendable {
    let store: any ProjectionReader
    let secrets: SecretsKeyring?

    func addRoutes(to group: RouterGroup<IngestRequestContext>) {
        group.get("apps/:mobileAppId/webhook-signing-secret", use: get)
    }

    @Sendable func get(_ request: Request, context: IngestRequestContext) async throws -> Response {
        let mobileAppId = try FieldRules.uuidParameter("mobileAppId", in: context)
        guard let secrets else {
            let message = "webhooks are not signed: \(SecretsVariable.key) is not set on the processor and ingest"
            throw IngestError.rejected(.serviceUnavailable, Problem(error: message, code: .secretsKeyMissing))
        }
        guard try await readStore(context, { try await store.app(mobileAppId) }) != nil else {
            throw AdminRoutes.unknownApp
        }
        let previous = secrets.keyIds.dropFirst().compactMap { keyId in
            WebhookSigning.secret(app: mobileAppId, keyring: secrets, keyId: keyId).map {
                AdminAPI.WebhookSigningSecretView.PreviousSecret(keyId: keyId, secret: $0)
            }
        }
        // The keyring always holds its current key.
        let current = WebhookSigning.secret(app: mobileAppId, keyring: secrets) ?? ""
        let view = AdminAPI.WebhookSigningSecretView(mobileAppId: mobileAppId, secret: current, keyId: secrets.currentKeyId,
                                                     previousSecrets: previous)
        return try JSONResponse.make(view, status: .ok, encoder: WireJSON.encoder(), headers: [.cacheControl: "no-store"])
    }
}
