import Contracts
import Foundation
import Hummingbird
import Projections
import Settings

/// Checks the user assertion a device presents when it binds itself to a user, cleans up a
/// user's devices or reads its pending list (docs/API.md#verified-user-identity), against the
/// app's identity secret as the projection store (or `AppAuthCache`) has it.
///
/// - The app requires assertions: a missing one is a `403` naming its field, and so is one that
///   is not the assertion of that user id. Nothing of the request is written.
/// - The app does not: a request without one is answered as before (and counted as an
///   unverified binding by the caller); one with an assertion is still checked when the app has
///   a secret, so that a backend's signing can be tried before verification is turned on, and
///   a wrong one is refused there too. An app without a secret ignores assertions.
///
/// The secret is opened with the deployment's keyring for each check (AES-GCM, microseconds);
/// it is never logged or cached in clear.
struct UserIdentityCheck: Sendable {
    let secrets: SecretsKeyring?
    /// An assertion is 64 hex characters; a longer field is not one (the OpenAPI document's bound).
    static let maxAssertionBytes = 128

    /// True when `assertion` is the assertion of `userId` (the command records it as verified);
    /// false when none was needed and none was checked. Throws the `403` described above, or a
    /// `503` when the secret cannot be opened here.
    func verify(app: AppRow, userId: String, assertion: String?, field: String, context: IngestRequestContext) throws -> Bool {
        let presented = assertion?.trimmingCharacters(in: .whitespaces)
        guard let presented, !presented.isEmpty else {
            guard !app.identityRequired else {
                throw IngestError.rejected(.forbidden, Problem(
                    error: "this app requires a user assertion: the app's backend signs the user id with the app's identity secret "
                        + "(hex HMAC-SHA256) and the device presents it", field: field, code: .userAssertionRequired))
            }
            return false
        }
        try FieldRules.bounded(presented, maxBytes: Self.maxAssertionBytes, field: field)
        guard let sealed = app.identitySecret else { return false }
        let secret = try open(sealed, app: app.appId, context: context)
        guard UserIdentity.verify(presented, userId: userId, secret: secret) else {
            throw IngestError.rejected(.forbidden, Problem(error: "the user assertion is not this user id's under the app's identity secret",
                                                          field: field, code: .userAssertionInvalid))
        }
        return true
    }

    /// Opens an app's identity secret; a deployment without the key that sealed it answers 503,
    /// logged: a setting to fix, not a client's fault.
    func open(_ sealed: SealedSecret, app: UUID, context: IngestRequestContext) throws -> String {
        guard let secrets else {
            context.logger.error("user assertions cannot be checked: \(SecretsVariable.key) is not set on ingest")
            throw IngestError.unavailable("user assertions cannot be checked on this instance")
        }
        do {
            return String(decoding: try secrets.open(sealed, context: UserIdentity.sealContext(app: app)), as: UTF8.self)
        } catch {
            context.logger.error("the identity secret does not open", metadata: ["mobile_app_id": "\(app)", "error": "\(error)"])
            throw IngestError.unavailable("user assertions cannot be checked on this instance")
        }
    }

    /// A Bearer route's registration or cleanup (BW, KF5), checked with the assertion of the
    /// `X-Pushline-User-Assertion` header against the authenticated app.
    func checked<C: UserBinding>(_ command: C, auth: AuthenticatedApp, request: Request, context: IngestRequestContext) throws -> C {
        var command = command
        if try verify(app: auth.app, userId: command.userId, assertion: request.headers[.userAssertion],
                      field: UserIdentity.assertionHeader, context: context) {
            command.identityVerified = true
        }
        return command
    }
}
