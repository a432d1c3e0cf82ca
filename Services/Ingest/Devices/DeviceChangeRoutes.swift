import Contracts
import Foundation
import Hummingbird
import Projections
import WireCodec

/// Changes of device properties (docs/API.md#device-properties), mounted at
/// `/v1/apps/{mobileAppId}` behind `AppAuthMiddleware`:
/// - `POST …/devices/changes` (scope `client`): the device's own change. It names its user
///   (`userId`), and the device, when it names one, must be that user's when the change is
///   applied; where the app requires verified identity, the user's assertion is in
///   `X-Pushline-User-Assertion`.
/// - `POST …/devices/changes/batch` (scope `server`): `{"changes": […]}`, 1…1,000 changes from the
///   app's backend, each of one device (`deviceToken`, any user's) or of every device of a user
///   (`userId`).
///
/// Each change becomes one `DeviceChangeRequested`; every change is checked before any is
/// written, and the answer is `202 {"accepted": n}` once the broker has them.
///
/// - `POST …/audiences/count` (scope `server`): `{"audience": "…"}` → `200 {"audience", "devices"}`,
///   the devices the expression selects now, as projected.
struct DeviceChangeRoutes: Sendable {
    static let basePath: RouterPath = "v1/apps/:mobileAppId"

    let writer: CommandWriter
    let store: any ProjectionReader
    let identity: UserIdentityCheck
    let maxBodyBytes: Int

    func addRoutes(to group: RouterGroup<IngestRequestContext>) {
        group.post("devices/changes", use: change)
        group.post("devices/changes/batch", use: changeBatch)
        group.post("audiences/count", use: countAudience)
    }

    /// Counted from the app's devices grouped by their properties (`devicePropertyCounts`): each
    /// combination is matched once, so the cost grows with the combinations, not the devices.
    @Sendable func countAudience(_ request: Request, context: IngestRequestContext) async throws -> Response {
        let auth = try context.authenticated()
        let body = try await JSONBody.collect(request, limit: maxBodyBytes)
        let asked = try JSONBody.decode(AudiencesAPI.CountRequest.self, from: body, decoder: WireJSON.decoder())
        guard let text = asked.audience else { throw IngestError.badRequest("audience is required", field: "audience", code: .fieldMissing) }
        let audience = try NotificationRequested.audience(text, field: "audience")
        let counts = try await readStore(context) { try await store.devicePropertyCounts(app: auth.mobileAppId) }
        let devices = counts.reduce(0) { sum, combination in
            sum + (audience.matches(AudienceFacts(combination)) ? combination.count : 0)
        }
        return try JSONResponse.make(AudiencesAPI.Count(audience: audience.description, devices: devices), status: .ok,
                                     encoder: WireJSON.encoder())
    }

    @Sendable func change(_ request: Request, context: IngestRequestContext) async throws -> Response {
        let auth = try context.authenticated()
        let body = try await JSONBody.collect(request, limit: maxBodyBytes)
        let change = try JSONBody.decode(DevicesAPI.Change.self, from: body, decoder: WireJSON.decoder())
        guard change.userId != nil else {
            throw IngestError.badRequest("userId is required: a device changes its own properties, as its user", field: "userId",
                                         code: .fieldMissing)
        }
        var command = try Self.command(for: change, app: auth.mobileAppId, element: "body", field: { $0 })
        guard let userId = command.userId else { throw IngestError.badRequest("userId is required", field: "userId", code: .fieldMissing) }
        command.fromClient = true
        if try identity.verify(app: auth.app, userId: userId, assertion: request.headers[.userAssertion],
                               field: UserIdentity.assertionHeader, context: context) {
            command.identityVerified = true
        }
        try await writer.publish(command, context: context)
        return try JSONResponse.make(DevicesAPI.Accepted(accepted: 1), status: .accepted, encoder: WireJSON.encoder())
    }

    @Sendable func changeBatch(_ request: Request, context: IngestRequestContext) async throws -> Response {
        let auth = try context.authenticated()
        let body = try await JSONBody.collect(request, limit: maxBodyBytes)
        let batch = try JSONBody.decode(DevicesAPI.ChangeBatch.self, from: body, decoder: WireJSON.decoder())
        guard let changes = batch.changes else {
            throw IngestError.badRequest("changes is required", field: "changes", code: .fieldMissing)
        }
        guard (1...DevicesAPI.maxChanges).contains(changes.count) else {
            throw IngestError.badRequest("the batch has \(changes.count) changes; send 1…\(DevicesAPI.maxChanges)", field: "changes")
        }
        let commands = try changes.enumerated().map { index, change in
            try Self.command(for: change, app: auth.mobileAppId, element: "changes[\(index)]", field: { "changes[\(index)].\($0)" })
        }
        let encoder = CommandWriter.makeEncoder()
        try await writer.publish(commands.flatMap { try writer.encode($0, encoder: encoder) }, context: context)
        return try JSONResponse.make(DevicesAPI.Accepted(accepted: commands.count), status: .accepted, encoder: encoder)
    }

    /// Checks one change and makes its command; `element` names the change in a 400, and `field`
    /// turns a member's name into the 400's field. A change must name a device or a user, and
    /// change something.
    static func command(for change: DevicesAPI.Change, app: UUID, element: @autoclosure () -> String,
                        field: (String) -> String) throws -> DeviceChangeRequested {
        let token = try change.deviceToken.map { try FieldRules.deviceToken($0, field: field("deviceToken")) }
        let userId = try change.userId.map { try FieldRules.required($0, maxBytes: FieldLimits.userIdBytes, field: field("userId")) }
        guard token != nil || userId != nil else {
            throw IngestError.badRequest("a change names a device (deviceToken) or a user (userId)", field: field("deviceToken|userId"),
                                         code: .fieldMissing)
        }
        let properties = try DeviceProperties(locale: change.locale, appVersion: change.appVersion, tags: change.tags?.add,
                                              topics: change.topics?.subscribe, names: .change) { field($0) }
        let removeTags = try FieldRules.names(change.tags?.remove, max: DeviceTag.maxPerDevice, field: field("tags.remove"))
        let unsubscribe = try FieldRules.names(change.topics?.unsubscribe, max: DeviceTopic.maxPerDevice, field: field("topics.unsubscribe"))
        let timeZone = try change.timeZone.nonEmpty.map { try FieldRules.timeZone($0, field: field("timeZone")) }
        let command = DeviceChangeRequested(mobileAppId: app, deviceToken: token, userId: userId, locale: properties.locale,
                                            timeZone: timeZone, appVersion: properties.appVersion, addTags: properties.tags,
                                            removeTags: removeTags, subscribe: properties.topics, unsubscribe: unsubscribe)
        let changesSomething = command.locale != nil || command.timeZone != nil || command.appVersion != nil || command.addTags != nil
            || command.removeTags != nil || command.subscribe != nil || command.unsubscribe != nil
        guard changesSomething else {
            throw IngestError.badRequest("the change changes nothing: give locale, timeZone, appVersion, tags or topics", field: element())
        }
        if let added = command.addTags, let removed = command.removeTags, let both = Set(added).intersection(removed).min() {
            throw IngestError.badRequest("the tag \(both) is both added and removed", field: field("tags"))
        }
        if let subscribed = command.subscribe, let unsubscribed = command.unsubscribe,
           let both = Set(subscribed).intersection(unsubscribed).min() {
            throw IngestError.badRequest("the topic \(both) is both subscribed to and unsubscribed from", field: field("topics"))
        }
        return command
    }
}
