import Contracts
import Foundation
import Hummingbird
import Projections

/// `POST …/devices/status` (and `…/status/`): the stored outcome of each tracked registration,
/// in request order.
///
/// Statuses are read only for an app of this org presented with one of its live API tokens;
/// otherwise every id answers `Pending`, exactly as an unknown or untracked id does, so that a
/// forger learns nothing (docs/API.md#forged-requests).
extension RegistrationRoutes {
    @Sendable func status(_ request: Request, context: IngestRequestContext) async throws -> Response {
        let orgId = try orgId(context)
        let body = try await JSONBody.collect(request, limit: maxBodyBytes)
        let query = try JSONBody.decode(DeviceRegistrationAPI.StatusQuery.self, from: body, decoder: WireJSON.decoder())

        guard let rawIds = query.RegistrationRequestIds else {
            throw IngestError.badRequest("RegistrationRequestIds is required", field: "RegistrationRequestIds")
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

        let found = try await storedStatuses(ids, orgId: orgId, mobileAppId: mobileAppId, apiToken: apiToken, context: context)
        let answer = ids.map { id in
            found[id].map { DeviceRegistrationAPI.RegistrationStatus(Status: $0.status, FailureReason: $0.failureReason) }
                ?? DeviceRegistrationAPI.RegistrationStatus(Status: .Pending)
        }
        return try JSONResponse.make(answer, status: .ok, encoder: WireJSON.encoder())
    }

    /// The stored statuses of `ids`, or none at all when the app is not this org's or the token
    /// is not one of its live tokens.
    private func storedStatuses(_ ids: [UUID], orgId: UUID, mobileAppId: UUID, apiToken: String,
                                context: IngestRequestContext) async throws -> [UUID: RegistrationStatusRow] {
        guard !ids.isEmpty else { return [:] }
        return try await readStore(context) {
            guard let app = try await store.app(mobileAppId), app.orgId == orgId else { return [:] }
            let presented = ApiTokens.hash(apiToken)
            var authorized = false
            for token in try await store.apiTokens(app: mobileAppId) where !token.revoked {
                // Compare with every live token, not stopping at a match.
                authorized = ApiTokens.constantTimeEquals(presented, token.tokenHash) || authorized
            }
            guard authorized else { return [:] }
            return try await store.registrationStatuses(app: mobileAppId, requestIds: ids)
        }
    }
}
