import _CryptoExtras
import Contracts
import Crypto
import Foundation
import Hummingbird
import Projections
import Settings
import WireCodec

/// An app's APNs and FCM credentials under `/admin/v1/apps/{mobileAppId}/credentials/{apns|fcm}`
/// (docs/API.md#push-credentials). The secret of a `PUT` (the `.p8` key, the service account) is
/// checked, then sealed with the deployment's key before it becomes a command: it never enters
/// Kafka, the store or a log line in clear. Without `PUSHLINE_SECRETS_KEY` the routes answer 503.
struct PushCredentialsRoutes: Sendable {
    let writer: CommandWriter
    let store: any ProjectionReader
    let applied: AdminChangeApplied
    let secrets: SecretsKeyring?
    let maxBodyBytes: Int

    func addRoutes(to group: RouterGroup<IngestRequestContext>) {
        // One parameter for the provider on every method: the router matches a literal segment
        // before a parameter, and would not find GET …/apns beside a literal PUT …/apns.
        group.put("apps/:mobileAppId/credentials/:provider", use: put)
        group.get("apps/:mobileAppId/credentials/:provider", use: get)
        group.delete("apps/:mobileAppId/credentials/:provider", use: remove)
    }

    @Sendable func put(_ request: Request, context: IngestRequestContext) async throws -> Response {
        switch try Self.provider(in: context) {
        case .apns: try await putAPNs(request, context: context)
        case .fcm: try await putFCM(request, context: context)
        }
    }

    /// `PUT …/credentials/apns` → `202 APNsCredentialsView`.
    private func putAPNs(_ request: Request, context: IngestRequestContext) async throws -> Response {
        let mobileAppId = try FieldRules.uuidParameter("mobileAppId", in: context)
        let secrets = try keyring(context)
        let body = try await JSONBody.collect(request, limit: maxBodyBytes)
        let input = try JSONBody.decode(AdminAPI.SetAPNsCredentials.self, from: body, decoder: WireJSON.decoder())
        let credentials = try PushCredentialsRules.apns(input, app: mobileAppId, secrets: secrets)
        _ = try await stored(mobileAppId, context)  // 404 for an app not projected yet
        try await applied.wait(for: writer.publish(PushCredentialsSet(mobileAppId: mobileAppId, apns: credentials,
                                                                                actor: context.adminActor, requestId: context.requestId), context: context),
                               app: mobileAppId,
                               written: "the APNs credentials of app \(mobileAppId)")
        context.logger.info("push credentials set", metadata: [
            "mobile_app_id": "\(mobileAppId)", "provider": "apns", "fingerprint": "\(credentials.fingerprint)",
            "sealed_with": "\(credentials.privateKey.keyId)",
        ])
        return try JSONResponse.make(AdminAPI.APNsCredentialsView(credentials), status: .accepted, encoder: WireJSON.encoder())
    }

    /// `PUT …/credentials/fcm` → `202 FCMCredentialsView`.
    private func putFCM(_ request: Request, context: IngestRequestContext) async throws -> Response {
        let mobileAppId = try FieldRules.uuidParameter("mobileAppId", in: context)
        let secrets = try keyring(context)
        let body = try await JSONBody.collect(request, limit: maxBodyBytes)
        let input = try JSONBody.decode(AdminAPI.SetFCMCredentials.self, from: body, decoder: WireJSON.decoder())
        let credentials = try PushCredentialsRules.fcm(input, app: mobileAppId, secrets: secrets)
        _ = try await stored(mobileAppId, context)  // 404 for an app not projected yet
        try await applied.wait(for: writer.publish(PushCredentialsSet(mobileAppId: mobileAppId, fcm: credentials,
                                                                                actor: context.adminActor, requestId: context.requestId), context: context),
                               app: mobileAppId,
                               written: "the FCM credentials of app \(mobileAppId)")
        context.logger.info("push credentials set", metadata: [
            "mobile_app_id": "\(mobileAppId)", "provider": "fcm", "fingerprint": "\(credentials.fingerprint)",
            "sealed_with": "\(credentials.serviceAccount.keyId)",
        ])
        return try JSONResponse.make(AdminAPI.FCMCredentialsView(credentials), status: .accepted, encoder: WireJSON.encoder())
    }

    /// `GET …/credentials/{apns|fcm}` → `200` view, as the projection store has it now.
    @Sendable func get(_ request: Request, context: IngestRequestContext) async throws -> Response {
        let mobileAppId = try FieldRules.uuidParameter("mobileAppId", in: context)
        let provider = try Self.provider(in: context)
        let view = AdminAPI.PushCredentialsView(try await stored(mobileAppId, context))
        switch provider {
        case .apns:
            guard let apns = view.apns else { throw Self.none(provider) }
            return try JSONResponse.make(apns, status: .ok, encoder: WireJSON.encoder())
        case .fcm:
            guard let fcm = view.fcm else { throw Self.none(provider) }
            return try JSONResponse.make(fcm, status: .ok, encoder: WireJSON.encoder())
        }
    }

    /// `DELETE …/credentials/{apns|fcm}` → 202.
    @Sendable func remove(_ request: Request, context: IngestRequestContext) async throws -> Response {
        let mobileAppId = try FieldRules.uuidParameter("mobileAppId", in: context)
        let provider = try Self.provider(in: context)
        let existing = try await stored(mobileAppId, context)
        guard provider == .apns ? existing.apns != nil : existing.fcm != nil else { throw Self.none(provider) }
        try await applied.wait(for: writer.publish(PushCredentialsRemoved(mobileAppId: mobileAppId, provider: provider,
                                                                                   actor: context.adminActor, requestId: context.requestId), context: context),
                               app: mobileAppId,
                               written: "the removal of the \(provider) credentials of app \(mobileAppId)")
        context.logger.info("push credentials removed", metadata: ["mobile_app_id": "\(mobileAppId)", "provider": "\(provider.rawValue)"])
        return Response(status: .accepted)
    }

    /// The deployment's keyring; without one, 503 saying so (a setting to fix, not a moment to wait out).
    private func keyring(_ context: IngestRequestContext) throws -> SecretsKeyring {
        guard let secrets else {
            let message = "push credentials cannot be stored: \(SecretsVariable.key) is not set on ingest"
            context.logger.warning("\(message)")
            throw IngestError.rejected(.serviceUnavailable, Problem(error: message, code: .secretsKeyMissing))
        }
        return secrets
    }

    /// The app's stored credentials (none: empty); 404 for an unknown app.
    private func stored(_ app: UUID, _ context: IngestRequestContext) async throws -> PushCredentials {
        guard let row = try await readStore(context, { try await store.app(app) }) else { throw AdminRoutes.unknownApp }
        return row.pushCredentials ?? PushCredentials()
    }

    private static func provider(in context: IngestRequestContext) throws -> PushProvider {
        guard let text = context.parameters.get("provider"), let provider = PushProvider(rawValue: text) else {
            throw IngestError.notFound("no such push provider: use apns or fcm", field: "provider")
        }
        return provider
    }

    private static func none(_ provider: PushProvider) -> IngestError {
        IngestError.notFound("this app has no \(provider.rawValue) credentials (or they are not projected yet)", field: "provider")
    }
}

/// The checks of push credentials, and their sealing. Error messages never quote the secret.
enum PushCredentialsRules {
    /// Apple's team and key ids: ten upper-case letters or digits.
    private static func isAppleId(_ s: String) -> Bool {
        s.utf8.count == 10 && s.utf8.allSatisfy { isDigit($0) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) }
    }

    /// A bundle id (the `apns-topic`): letters, digits, dots and hyphens, starting with a letter or digit.
    private static func isBundleId(_ s: String) -> Bool {
        guard let first = s.utf8.first, isAlphanumeric(first), s.utf8.count <= 155 else { return false }
        return s.utf8.allSatisfy { isAlphanumeric($0) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "-") }
    }

    /// A Google Cloud project id: 6 to 63 lower-case letters, digits and hyphens, starting with a letter.
    private static func isProjectId(_ s: String) -> Bool {
        guard let first = s.utf8.first, (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(first),
              (6...63).contains(s.utf8.count), s.utf8.last != UInt8(ascii: "-") else { return false }
        return s.utf8.allSatisfy { isDigit($0) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0) || $0 == UInt8(ascii: "-") }
    }

    private static func isDigit(_ c: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(c) }
    private static func isAlphanumeric(_ c: UInt8) -> Bool {
        isDigit(c) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(c | 0x20)
    }

    /// Key files are a few kilobytes; anything much larger is not one.
    static let maxSecretBytes = 16_384
    static let defaultTokenURI = "https://oauth2.googleapis.com/token"

    static func apns(_ input: AdminAPI.SetAPNsCredentials, app: UUID, secrets: SecretsKeyring) throws -> APNsCredentials {
        let teamId = try FieldRules.required(input.teamId, field: "teamId")
        guard isAppleId(teamId) else {
            throw IngestError.badRequest("teamId must be Apple's 10-character team id", field: "teamId")
        }
        let keyId = try FieldRules.required(input.keyId, field: "keyId")
        guard isAppleId(keyId) else {
            throw IngestError.badRequest("keyId must be the 10-character id of the APNs key", field: "keyId")
        }
        let bundleId = try FieldRules.required(input.bundleId, field: "bundleId")
        guard isBundleId(bundleId) else {
            throw IngestError.badRequest("bundleId must be the app's bundle id (letters, digits, dots, hyphens; at most 155)",
                                         field: "bundleId")
        }
        guard let environment = APNsEnvironment(rawValue: try FieldRules.required(input.environment, field: "environment")) else {
            throw IngestError.badRequest("environment must be production or sandbox", field: "environment")
        }
        let pem = try FieldRules.required(input.privateKey, maxBytes: maxSecretBytes, field: "privateKey")
        guard let key = try? P256.Signing.PrivateKey(pemRepresentation: pem) else {
            throw IngestError.badRequest("privateKey must be the PEM text of an APNs signing key (.p8, EC P-256)", field: "privateKey")
        }
        return APNsCredentials(
            teamId: teamId, keyId: keyId, bundleId: bundleId, environment: environment,
            fingerprint: fingerprint(publicKeyDER: key.publicKey.derRepresentation),
            privateKey: secrets.seal(Data(pem.utf8), context: SecretsKeyring.context(app: app, provider: .apns)))
    }

    static func fcm(_ input: AdminAPI.SetFCMCredentials, app: UUID, secrets: SecretsKeyring) throws -> FCMCredentials {
        guard let json = input.serviceAccount, case .object = json else {
            throw IngestError.badRequest("serviceAccount must be the service-account key file's JSON object", field: "serviceAccount")
        }
        // Sealed as sorted-key JSON: the sender reads the same fields back.
        let sealedBytes = try WireJSON.encoder().encode(json)
        guard sealedBytes.count <= maxSecretBytes else {
            throw IngestError.badRequest("serviceAccount is larger than \(maxSecretBytes) bytes", field: "serviceAccount")
        }
        guard let account = try? JSONDecoder().decode(GoogleServiceAccount.self, from: sealedBytes) else {
            throw IngestError.badRequest("serviceAccount fields must be strings", field: "serviceAccount")
        }
        guard account.type == "service_account" else {
            throw IngestError.badRequest("serviceAccount.type must be service_account", field: "serviceAccount.type")
        }
        let projectId = try FieldRules.required(account.projectId, field: "serviceAccount.project_id")
        guard isProjectId(projectId) else {
            throw IngestError.badRequest("serviceAccount.project_id must be a Google Cloud project id", field: "serviceAccount.project_id")
        }
        let clientEmail = try FieldRules.required(account.clientEmail, maxBytes: 320, field: "serviceAccount.client_email")
        guard clientEmail.contains("@") else {
            throw IngestError.badRequest("serviceAccount.client_email must be the account's email", field: "serviceAccount.client_email")
        }
        let pem = try FieldRules.required(account.privateKey, field: "serviceAccount.private_key")
        guard let key = try? _RSA.Signing.PrivateKey(pemRepresentation: pem) else {
            throw IngestError.badRequest("serviceAccount.private_key must be the PEM text of an RSA private key",
                                         field: "serviceAccount.private_key")
        }
        let tokenUri = account.tokenUri ?? defaultTokenURI
        guard let url = URL(string: tokenUri), url.scheme == "https", url.host != nil else {
            throw IngestError.badRequest("serviceAccount.token_uri must be an https URL", field: "serviceAccount.token_uri")
        }
        if let id = account.privateKeyId { try FieldRules.bounded(id, maxBytes: 128, field: "serviceAccount.private_key_id") }
        return FCMCredentials(
            projectId: projectId, clientEmail: clientEmail, privateKeyId: account.privateKeyId, tokenUri: tokenUri,
            fingerprint: fingerprint(publicKeyDER: key.publicKey.derRepresentation),
            serviceAccount: secrets.seal(sealedBytes, context: SecretsKeyring.context(app: app, provider: .fcm)))
    }

    /// `SHA256:` and the unpadded base64 SHA-256 of a public key's DER, as `ssh-keygen -l` shows keys.
    static func fingerprint(publicKeyDER: Data) -> String {
        "SHA256:" + Data(SHA256.hash(data: publicKeyDER)).base64EncodedString().replacingOccurrences(of: "=", with: "")
    }
}
