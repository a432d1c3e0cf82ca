import Contracts
import Foundation
import Hummingbird
import Projections
import WireCodec

/// Named admin tokens under `/admin/v1/admin-tokens` (docs/API.md#admin-tokens): issued, listed
/// and revoked by any admin (the bootstrap token or a named one). As for API tokens, ingest
/// generates the raw token, shows it once, and only its hash enters the log and the store.
/// Issue and revocation are answered once applied (`AdminChangeApplied`), a revocation one auth
/// cache lifetime later still, so that after the 2xx no ingest instance admits the token.
struct AdminTokenRoutes: Sendable {
    let writer: CommandWriter
    let store: any ProjectionReader
    let applied: AdminChangeApplied
    /// `PUSHLINE_IDEMPOTENCY_WINDOW_HOURS`.
    let idempotencyWindow: Duration
    /// What keyed creates derive raw tokens from.
    let tokenKey: CreatedTokenKey
    let maxBodyBytes: Int

    func addRoutes(to group: RouterGroup<IngestRequestContext>) {
        group.post("admin-tokens", use: create)
        group.get("admin-tokens", use: list)
        group.delete("admin-tokens/:adminTokenId", use: revoke)
    }

    /// `POST /admin/v1/admin-tokens` `{"name"}` → `201 AdminTokenCreated`. With an
    /// `Idempotency-Key`, a retry gets the same token (`AdminCreateKey`).
    @Sendable func create(_ request: Request, context: IngestRequestContext) async throws -> Response {
        let body = try await JSONBody.collect(request, limit: maxBodyBytes)
        let input = try JSONBody.decode(AdminAPI.CreateAdminToken.self, from: body, decoder: WireJSON.decoder())
        let name = try AdminTokenName.validated(input.name)
        var (tokenId, token) = (UUID(), ApiTokens.generate())
        let keyed = try AdminCreateKey(request, body: body, route: "admin-tokens", tokenKey: tokenKey, context: context)
        if let keyed {
            switch try await keyed.lookup(in: store, window: idempotencyWindow, context: context) {
            case .applied(let issued):
                return try await issuedAgain(issued, keyed: keyed, context: context)
            case .new(let id):
                (tokenId, token) = (id, keyed.token(id))
            }
        }
        let command = AdminTokenIssued(adminTokenId: tokenId, name: name, tokenHash: ApiTokens.hash(token),
                                       actor: context.adminActor, requestId: context.requestId, idempotency: keyed?.stamp)
        let encoder = CommandWriter.makeEncoder()
        let encoded = try writer.encode(command, encoder: encoder)
        try await applied.wait(for: writer.publish(encoded, context: context), app: nil,
                               written: "admin token \(command.adminTokenId) (\(name))")
        context.logger.info("admin token issued", metadata: ["admin_token_id": "\(command.adminTokenId)", "name": "\(name)"])
        // The processor records the command's time as the token's creation time (the first
        // command's, for a keyed retry written before the first was applied).
        if keyed != nil, let stored = try await readStore(context, { try await store.adminToken(id: tokenId) }) {
            return try Self.answer(stored, token: token)
        }
        return try Self.answer(AdminTokenRow(adminTokenId: tokenId, name: name, tokenHash: command.tokenHash, createdAt: encoded[0].at),
                               token: token)
    }

    /// The answer to a keyed create already applied: the same token.
    private func issuedAgain(_ id: UUID, keyed: AdminCreateKey, context: IngestRequestContext) async throws -> Response {
        let token = keyed.token(id)
        let row = try await readStore(context, { try await store.adminToken(id: id) })
        let stored = try AdminCreateKey.check(token, against: row, hash: \.tokenHash)
        var response = try Self.answer(stored, token: token)
        response.headers[.idempotentReplayed] = "true"
        return response
    }

    private static func answer(_ row: AdminTokenRow, token: String) throws -> Response {
        try JSONResponse.make(AdminAPI.AdminTokenCreated(id: row.adminTokenId, name: row.name, token: token, createdAt: row.createdAt),
                              status: .created, encoder: WireJSON.encoder(), headers: [.cacheControl: "no-store"])
    }

    /// `GET /admin/v1/admin-tokens?limit=1…1000 (100)&after={id}` → `200 AdminTokenList`, ordered by id.
    @Sendable func list(_ request: Request, context: IngestRequestContext) async throws -> Response {
        let query = request.uri.queryParameters
        let limit = try FieldRules.pageLimit(query.get("limit"))
        let after = try query.get("after").map { try FieldRules.uuid($0, field: "after") }
        var rows = try await readStore(context) { try await store.adminTokens(after: after, limit: limit + 1) }
        let more = rows.count > limit
        if more { rows.removeLast() }
        let views = rows.map(Self.view)
        return try JSONResponse.make(AdminAPI.AdminTokenList(adminTokens: views, next: more ? views.last?.id : nil),
                                     status: .ok, encoder: WireJSON.encoder())
    }

    /// `DELETE /admin/v1/admin-tokens/{adminTokenId}` → 202; 404 for an unknown token; a token
    /// already revoked is answered 202 again without a new command.
    @Sendable func revoke(_ request: Request, context: IngestRequestContext) async throws -> Response {
        let id = try FieldRules.uuidParameter("adminTokenId", in: context)
        guard let row = try await readStore(context, { try await store.adminToken(id: id) }) else {
            throw IngestError.notFound("no such admin token (or not projected yet)", field: "adminTokenId")
        }
        guard !row.revoked else { return Response(status: .accepted) }
        let command = AdminTokenRevoked(adminTokenId: id, actor: context.adminActor, requestId: context.requestId)
        try await applied.wait(for: writer.publish(command, context: context), app: nil, changesAccess: true,
                               written: "the revocation of admin token \(id)")
        context.logger.info("admin token revoked", metadata: ["admin_token_id": "\(id)"])
        return Response(status: .accepted)
    }

    static func view(_ row: AdminTokenRow) -> AdminAPI.AdminTokenView {
        AdminAPI.AdminTokenView(id: row.adminTokenId, name: row.name, revoked: row.revoked, createdAt: row.createdAt, revokedAt: row.revokedAt)
    }
}

/// The rules of an admin token's name: what the audit log shows as the actor.
enum AdminTokenName {
    static let maxLength = 64

    /// 1 to 64 characters of ASCII letters, digits, `.`, `_`, `-` and `@`, starting with a letter
    /// or digit, and not `bootstrap` (the bootstrap token's name, in any case); 400 naming `name`.
    static func validated(_ name: String?) throws -> String {
        guard let name, !name.isEmpty else { throw refused("name is required") }
        guard name.utf8.count <= maxLength else { throw refused("name has at most \(maxLength) characters") }
        guard let first = name.utf8.first, isAlphanumeric(first),
              name.utf8.allSatisfy({ isAlphanumeric($0) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "_")
                  || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "@") })
        else {
            throw refused("name must start with a letter or digit and hold only ASCII letters, digits, '.', '_', '-' and '@'")
        }
        guard name.lowercased() != AdminActor.bootstrapName else {
            throw refused("name \(AdminActor.bootstrapName) is reserved for PUSHLINE_ADMIN_TOKEN")
        }
        return name
    }

    private static func isAlphanumeric(_ c: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(c) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(c | 0x20)
    }

    private static func refused(_ message: String) -> IngestError {
        .badRequest(message, field: "name")
    }
}
