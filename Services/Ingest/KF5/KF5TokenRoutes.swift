import Contracts
import Foundation
import Hummingbird
import WireCodec

/// The KF5 SDK's token calls (docs/API.md#kf5-sdk-token-api), mounted per app at
/// `/kf5/v1/apps/{mobileAppId}` behind `AppAuthMiddleware`: `saveToken` is `POST /tokens` (201, a
/// `DeviceRegistrationRequested`) and `deleteToken` is `DELETE /tokens` (200, a
/// `DeviceCleanupRequested`), both with `{"userToken", "deviceToken", "type"?}`. `userToken` is the
/// app's user id of the device, the one the app's callback (docs/API.md#app-callbacks) is later
/// told about. Where the app requires verified identity, both need the user assertion of
/// `userToken` in `X-Pushline-User-Assertion` (docs/API.md#verified-user-identity).
struct KF5TokenRoutes: Sendable {
    static let basePath: RouterPath = "kf5/v1/apps/:mobileAppId"

    let writer: CommandWriter
    let identity: UserIdentityCheck
    let metrics: IngestMetrics
    let maxBodyBytes: Int

    func addRoutes(to group: RouterGroup<IngestRequestContext>) {
        group.post("tokens", use: save)
        group.delete("tokens", use: delete)
    }

    /// The SDK does not say which platform a token is for: without `type`, a token in APNs format
    /// is iOS and anything else is taken as FCM; either way it must have its platform's format.
    @Sendable func save(_ request: Request, context: IngestRequestContext) async throws -> Response {
        let auth = try context.authenticated()
        let body = try await JSONBody.collect(request, limit: maxBodyBytes)
        let token = try JSONBody.decode(KF5API.TokenRequest.self, from: body, decoder: WireJSON.decoder())
        let userId = try FieldRules.required(token.userToken, maxBytes: FieldLimits.userIdBytes, field: "userToken")
        let deviceToken = try FieldRules.deviceToken(token.deviceToken, field: "deviceToken")
        let platform: Platform
        if let type = token.type.nonEmpty {
            platform = try FieldRules.platform(type, field: "type")
        } else {
            platform = DeviceTokenFormat.isValid(deviceToken, platform: .ios) ? .ios : .android
        }
        try FieldRules.deviceToken(deviceToken, platform: platform, field: "deviceToken")
        let timeZone = try token.timeZone.nonEmpty.map { try FieldRules.timeZone($0, field: "timeZone") }
        let properties = try DeviceProperties(locale: token.locale, appVersion: token.appVersion, tags: token.tags, topics: token.topics,
                                              names: .camelCase)

        let command = try identity.checked(
            DeviceRegistrationRequested(authenticated: auth, userId: userId, platform: platform, deviceToken: deviceToken, timeZone: timeZone,
                                        properties: properties),
            auth: auth, request: request, context: context)
        try await writer.publish(command, context: context)
        metrics.countUnverifiedBindings([command])
        return Response(status: .created)
    }

    /// Removes that one device of the user; `type` is not needed and ignored.
    @Sendable func delete(_ request: Request, context: IngestRequestContext) async throws -> Response {
        let auth = try context.authenticated()
        let body = try await JSONBody.collect(request, limit: maxBodyBytes)
        let token = try JSONBody.decode(KF5API.TokenRequest.self, from: body, decoder: WireJSON.decoder())
        let userId = try FieldRules.required(token.userToken, maxBytes: FieldLimits.userIdBytes, field: "userToken")
        let deviceToken = try FieldRules.deviceToken(token.deviceToken, field: "deviceToken")

        let command = try identity.checked(DeviceCleanupRequested(authenticated: auth, userId: userId, deviceToken: deviceToken),
                                           auth: auth, request: request, context: context)
        try await writer.publish(command, context: context)
        return Response(status: .ok)
    }
}
