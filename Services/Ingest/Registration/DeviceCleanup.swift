import Contracts
import Foundation
import Hummingbird
import WireCodec

/// `POST …/devices/cleanup` (one object) and `POST …/devices/cleanup/batch` (one object or an
/// array of 1…100): each becomes one `DeviceCleanupRequested`; the answer is an empty 202.
extension RegistrationRoutes {
    @Sendable func cleanup(_ request: Request, context: IngestRequestContext) async throws -> Response {
        let orgId = try orgId(context)
        let body = try await JSONBody.collect(request, limit: maxBodyBytes)
        let cleanup = try JSONBody.decode(DeviceRegistrationAPI.Cleanup.self, from: body, decoder: WireJSON.decoder())
        var tokenHashes = TokenHashes()
        let command = try DeviceCleanupRequested(validating: cleanup, index: nil, orgId: orgId, tokenHashes: &tokenHashes)
        try await publishAdmitted([command], assertions: [Self.assertion(cleanup.UserAssertion, request)],
                                  encoder: CommandWriter.makeEncoder(), context: context)
        return Response(status: .accepted)
    }

    @Sendable func cleanupBatch(_ request: Request, context: IngestRequestContext) async throws -> Response {
        let orgId = try orgId(context)
        let body = try await JSONBody.collect(request, limit: maxBodyBytes)
        let decoder = WireJSON.decoder()
        var commands: [DeviceCleanupRequested] = []
        var assertions: [String?] = []
        // The route takes a single object; an array is the batch.
        let batched = JSONBody.firstSignificantByte(of: body) == UInt8(ascii: "[")
        if batched {
            let cleanups = try JSONBody.decode([DeviceRegistrationAPI.Cleanup].self, from: body, decoder: decoder)
            try Self.checkBatchSize(cleanups.count, of: "cleanups")
            commands.reserveCapacity(cleanups.count)
            var tokenHashes = TokenHashes()
            for (index, cleanup) in cleanups.enumerated() {
                commands.append(try DeviceCleanupRequested(validating: cleanup, index: index, orgId: orgId, tokenHashes: &tokenHashes))
            }
            assertions = cleanups.map(\.UserAssertion)
        } else {
            let cleanup = try JSONBody.decode(DeviceRegistrationAPI.Cleanup.self, from: body, decoder: decoder)
            var tokenHashes = TokenHashes()
            commands.append(try DeviceCleanupRequested(validating: cleanup, index: nil, orgId: orgId, tokenHashes: &tokenHashes))
            assertions = [Self.assertion(cleanup.UserAssertion, request)]
        }
        try await publishAdmitted(commands, assertions: assertions, batched: batched,
                                  encoder: CommandWriter.makeEncoder(), context: context)
        return Response(status: .accepted)
    }
}

extension DeviceCleanupRequested {
    /// Validates one registration API cleanup and makes its command; without `DeviceToken` it
    /// removes every device of the user in the app.
    init(validating cleanup: DeviceRegistrationAPI.Cleanup, index: Int?, orgId: UUID, tokenHashes: inout TokenHashes) throws {
        let mobileAppId = try FieldRules.uuid(cleanup.MobileAppId, field: RegistrationRoutes.field("MobileAppId", index: index))
        let apiToken = try FieldRules.required(cleanup.ApiToken, maxBytes: FieldLimits.apiTokenBytes,
                                               field: RegistrationRoutes.field("ApiToken", index: index))
        let userId = try FieldRules.required(cleanup.UserId, maxBytes: FieldLimits.userIdBytes,
                                             field: RegistrationRoutes.field("UserId", index: index))
        if let token = cleanup.DeviceToken.nonEmpty {
            try FieldRules.bounded(token, maxBytes: FieldLimits.deviceTokenBytes, field: RegistrationRoutes.field("DeviceToken", index: index))
        }
        self.init(orgId: orgId, mobileAppId: mobileAppId, userId: userId, deviceToken: cleanup.DeviceToken.nonEmpty,
                  apiTokenHash: tokenHashes.hash(apiToken))
    }
}
