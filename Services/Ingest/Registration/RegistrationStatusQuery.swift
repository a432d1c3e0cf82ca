import Contracts
import Foundation
import Hummingbird
import Projections
import WireCodec

/// `POST …/devices/status` (and `…/status/`): the stored outcome of each tracked registration,
/// in request order.
///
/// Statuses are read only for an app of this org presented with one of its live API tokens
/// (`AppAuthenticator`, so a forged token costs the cache, not the store); otherwise every id
/// answers `Pending`, exactly as an unknown or untracked id does, so that a forger learns nothing
/// (docs/API.md#forged-requests). A live token of the app without the client scope is answered
/// `403` naming the scope (`ApiToken`), as on the write routes.
///
/// A query names at most `DeviceRegistrationAPI.maxStatusIds` ids (past it: 400, nothing read),
/// and each id of an admitted query costs one request of the app's per-app limit of the route's
/// scope (429 when the bucket lacks them): a status poll is as dear as the registrations it
/// asks about, and forged queries spend no app's budget.
extension RegistrationRoutes {
    @Sendable func status(_ request: Request, context: IngestRequestContext) async throws -> Response {
        let orgId = try orgId(context)
        let body = try await JSONBody.collect(request, limit: maxBodyBytes)
        let query = try JSONBody.decode(DeviceRegistrationAPI.StatusQuery.self, from: body, decoder: WireJSON.decoder())

        guard let rawIds = query.RegistrationRequestIds else {
            throw IngestError.badRequest("RegistrationRequestIds is required", field: "RegistrationRequestIds", code: .fieldMissing)
        }
        guard rawIds.count <= DeviceRegistrationAPI.maxStatusIds else {
            throw IngestError.badRequest("RegistrationRequestIds has \(rawIds.count) ids; at most \(DeviceRegistrationAPI.maxStatusIds) "
                                         + "are allowed per query", field: "RegistrationRequestIds")
        }
        var ids: [UUID] = []
        ids.reserveCapacity(rawIds.count)
        for (index, raw) in rawIds.enumerated() {
            guard let id = UUID(parsing: raw) else {
                throw IngestError.badRequest("each registration request id must be a UUID", field: "RegistrationRequestIds[\(index)]")
            }
            ids.append(id)
        }
        let mobileAppId = try FieldRules.uuid(query.MobileAppId, field: "MobileAppId")
        let apiToken = try FieldRules.required(query.ApiToken, maxBytes: FieldLimits.apiTokenBytes, field: "ApiToken")

        let found = try await storedStatuses(ids, orgId: orgId, mobileAppId: mobileAppId, apiToken: apiToken,
                                             scope: context.requiredTokenScope(), context: context)
        let answer = ids.map { id in
            found[id].map { DeviceRegistrationAPI.RegistrationStatus(Status: $0.status, FailureReason: $0.failureReason) }
                ?? DeviceRegistrationAPI.RegistrationStatus(Status: .Pending)
        }
        return try JSONResponse.make(answer, status: .ok, encoder: WireJSON.encoder())
    }

    /// The stored statuses of `ids`, or none at all when the app is not this org's or the token
    /// is not one of its live tokens; throws 403 when it is one without `scope`, 429 when the
    /// app's bucket lacks one request per id.
    private func storedStatuses(_ ids: [UUID], orgId: UUID, mobileAppId: UUID, apiToken: String, scope: ApiTokenScope,
                                context: IngestRequestContext) async throws -> [UUID: RegistrationStatusRow] {
        guard !ids.isEmpty else { return [:] }
        guard let authenticated = try await gate.authenticator.app(mobileAppId, tokenHash: ApiTokens.hash(apiToken), context: context),
              authenticated.app.orgId == orgId else { return [:] }
        guard authenticated.grants(scope) else { throw ScopeRefusal.problem(missing: scope, field: "ApiToken") }
        try gate.spend(ids.count, of: mobileAppId, scope: scope)
        return try await readStore(context) { try await store.registrationStatuses(app: mobileAppId, requestIds: ids) }
    }
}
