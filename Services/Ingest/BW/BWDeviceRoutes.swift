import Contracts
import Foundation
import Hummingbird
import Projections
import WireCodec

/// The BW-style device service (docs/API.md#bw-device-service), mounted per app at
/// `/bwmi/v1/apps/{mobileAppId}` behind `AppAuthMiddleware` (the original serves one app per server
/// and has no authentication; Pushline is multi-tenant):
/// - `PUT /devices` → 201, a `DeviceRegistrationRequested`;
/// - `DELETE /devices` → 200, a `DeviceCleanupRequested`;
/// - `PUT /acks` → 201, a `NotificationAcknowledged` (`BWAcks.swift`);
/// - `GET /devices/{deviceToken}/notifications` → 200 `{"ns": […]}` (`BWAcks.swift`).
///
/// The BW user (phone and/or e-mail) becomes one Pushline user id, `BWDeviceAPI.userId`. Where
/// the app requires verified identity, `PUT` and `DELETE /devices` need the user assertion of
/// that id in `X-Pushline-User-Assertion`, and the pending list the user id and its assertion in
/// `X-Pushline-User-Id` and `X-Pushline-User-Assertion` (docs/API.md#verified-user-identity).
struct BWDeviceRoutes: Sendable {
    static let basePath: RouterPath = "bwmi/v1/apps/:mobileAppId"

    let writer: CommandWriter
    let store: any ProjectionReader
    let identity: UserIdentityCheck
    let metrics: IngestMetrics
    let maxBodyBytes: Int

    func addRoutes(to group: RouterGroup<IngestRequestContext>) {
        group.put("devices", use: register)
        group.delete("devices", use: deregister)
        group.put("acks", use: acknowledge)
        group.get("devices/:deviceToken/notifications", use: pendingNotifications)
    }

    /// `PUT /devices` `{"deviceId", "type", "user"}` → 201, empty. The token must have its
    /// platform's format: this API answers the call synchronously, so a malformed token is a 400
    /// here rather than a failed registration later.
    @Sendable func register(_ request: Request, context: IngestRequestContext) async throws -> Response {
        let auth = try context.authenticated()
        let body = try await JSONBody.collect(request, limit: maxBodyBytes)
        let device = try JSONBody.decode(BWDeviceAPI.Device.self, from: body, decoder: WireJSON.decoder())
        let deviceId = try FieldRules.deviceToken(device.deviceId, field: "deviceId")
        let platform = try FieldRules.platform(try FieldRules.required(device.type, field: "type"), field: "type")
        try FieldRules.deviceToken(deviceId, platform: platform, field: "deviceId")
        let userId = try Self.userId(device.user)
        let timeZone = try device.timeZone.nonEmpty.map { try FieldRules.timeZone($0, field: "timeZone") }
        let properties = try DeviceProperties(locale: device.locale, appVersion: device.appVersion, tags: device.tags, topics: device.topics,
                                              names: .camelCase)

        let command = try identity.checked(
            DeviceRegistrationRequested(authenticated: auth, userId: userId, platform: platform, deviceToken: deviceId, timeZone: timeZone,
                                        properties: properties),
            auth: auth, request: request, context: context)
        try await writer.publish(command, context: context)
        metrics.countUnverifiedBindings([command])
        return Response(status: .created)
    }

    /// `DELETE /devices`, the same body → 200, empty. `type` is ignored: the SDK's own example
    /// sends `"IOS|ANDROID"`, and a token identifies the device without it.
    @Sendable func deregister(_ request: Request, context: IngestRequestContext) async throws -> Response {
        let auth = try context.authenticated()
        let body = try await JSONBody.collect(request, limit: maxBodyBytes)
        let device = try JSONBody.decode(BWDeviceAPI.Device.self, from: body, decoder: WireJSON.decoder())
        let deviceId = try FieldRules.deviceToken(device.deviceId, field: "deviceId")
        let userId = try Self.userId(device.user)

        let command = try identity.checked(DeviceCleanupRequested(authenticated: auth, userId: userId, deviceToken: deviceId),
                                           auth: auth, request: request, context: context)
        try await writer.publish(command, context: context)
        return Response(status: .ok)
    }

    /// The Pushline user id of the BW user, or a 400 naming `user`, `user.phone` or `user.email`.
    static func userId(_ user: BWDeviceAPI.User?) throws -> String {
        do {
            return try BWDeviceAPI.userId(phone: user?.phone, email: user?.email)
        } catch {
            throw IngestError.badRequest(error.message, field: error.field)
        }
    }
}
