import Contracts
import Foundation
import Hummingbird
import NIOCore
import Projections
import WireCodec

/// An `Idempotency-Key` on an admin route that creates something (an app, an API token): the
/// key's scope (the caller and the route), the body's hash, and the digest of the caller's admin
/// token, from which (with a key only the server holds, `CreatedTokenKey`) the raw tokens of the
/// create derive (docs/API.md#idempotency-keys).
///
/// The created row's id is the key's (`IdempotencyKeys.resourceId`), so retries through any
/// ingest instance name one app or token, and the processor applies the first only. Once it is
/// applied, `idempotency_keys` holds the first request: a retry with the same body is answered
/// from the store, with the same raw tokens (derived again for the same admin token), and another
/// body is a 422.
struct AdminCreateKey: Sendable {
    var stamp: IdempotencyStamp
    /// SHA-256 of the admin token the caller presented.
    var callerDigest: String
    let tokenKey: CreatedTokenKey

    /// The key of this request, nil without the header; 400 for a malformed one.
    init?(_ request: Request, body: ByteBuffer, route: String, tokenKey: CreatedTokenKey, context: IngestRequestContext) throws {
        guard let key = try NotificationRoutes.idempotencyKey(request.headers[.idempotencyKey]) else { return nil }
        guard let actor = context.adminActor, let callerDigest = context.adminCredentialDigest else { throw MissingAdminAuthentication() }
        let caller = actor.id?.lowercasedString ?? AdminActor.bootstrapName
        stamp = IdempotencyStamp(scope: "admin:\(caller):\(route)", key: key,
                                 requestHash: IdempotencyKeys.requestHash(body.readableBytesView))
        self.callerDigest = callerDigest
        self.tokenKey = tokenKey
    }

    /// What the key names, by the store.
    enum Lookup {
        /// Not applied yet (or its window is over): create it with this id.
        case new(UUID)
        /// Applied, with this body, within the window: answer with what it created.
        case applied(UUID)
    }

    /// The id to create, or the one created by the same request within the window; 422 when the
    /// key's first request within the window had another body.
    func lookup(in store: any ProjectionReader, window: Duration, context: IngestRequestContext) async throws -> Lookup {
        let (scope, key) = (stamp.scope, stamp.key)
        guard let first = try await readStore(context, { try await store.idempotencyKey(scope: scope, key: key) }) else {
            return .new(IdempotencyKeys.resourceId(scope: scope, key: key))
        }
        guard Date() < first.firstAt.addingTimeInterval(window.inSeconds) else {
            return .new(IdempotencyKeys.nextId(after: first.resourceId, key: key))
        }
        guard first.requestHash == stamp.requestHash else {
            throw IngestError.rejected(.unprocessableContent, Problem(
                error: "this Idempotency-Key was used at \(RFC3339.string(from: first.firstAt)) for a different request "
                    + "(which created \(first.resourceId.lowercasedString)); use a new key for a new create",
                field: IdempotencyKeys.header, code: .idempotencyKeyReused))
        }
        return .applied(first.resourceId)
    }

    /// The raw token of `tokenId` for this caller.
    func token(_ tokenId: UUID) -> String { tokenKey.token(tokenId, callerDigest: callerDigest) }

    /// The stored token row (an API or admin token) when `raw` is its token; 409 when it is not
    /// the one this caller's admin token derives (or there is none): the create was made with
    /// another admin token of the same actor (the bootstrap token was changed since), or derived
    /// under another key (another secrets key, or an instance without one), and its raw tokens
    /// cannot be shown again.
    @discardableResult
    static func check<Row>(_ raw: String, against stored: Row?, hash: KeyPath<Row, String>) throws -> Row {
        guard let stored, ApiTokens.constantTimeEquals(ApiTokens.hash(raw), stored[keyPath: hash]) else {
            throw IngestError.rejected(.conflict, Problem(
                error: "this create was made with another admin token, and its raw tokens are shown only to the token that made it",
                field: IdempotencyKeys.header, code: .conflict))
        }
        return stored
    }
}

/// Thrown when an admin route runs without `AdminAuthMiddleware`: a programming error (500).
struct MissingAdminAuthentication: Error {}
