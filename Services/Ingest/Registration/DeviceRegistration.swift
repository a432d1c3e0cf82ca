import Contracts
import Foundation
import Hummingbird
import WireCodec

/// `POST …/devices` and `POST …/devices/batch`: each registration becomes one
/// `DeviceRegistrationRequested`; the answer is 202, with the `RegistrationRequestId`s when the
/// client asked for tracking.
extension RegistrationRoutes {
    @Sendable func register(_ request: Request, context: IngestRequestContext) async throws -> Response {
        let orgId = try orgId(context)
        let decoder = WireJSON.decoder()
        let body = try await JSONBody.collect(request, limit: maxBodyBytes)
        let registration = try JSONBody.decode(DeviceRegistrationAPI.Registration.self, from: body, decoder: decoder)
        let headers = try RegistrationHeaders(request.headers, decoder: decoder)
        var tokenHashes = TokenHashes()
        let command = try DeviceRegistrationRequested(validating: registration, index: nil, orgId: orgId, headers: headers, secrets: secrets,
                                                      tokenHashes: &tokenHashes)

        let encoder = CommandWriter.makeEncoder()
        try await publishAdmitted([command], assertions: [Self.assertion(registration.UserAssertion, request)],
                                  callback: headers.callbackTarget, encoder: encoder, context: context)
        guard headers.trackStatus else { return Response(status: .accepted) }
        return try JSONResponse.make(
            DeviceRegistrationAPI.RegistrationAccepted(RegistrationRequestId: command.registrationRequestId),
            status: .accepted, encoder: encoder)
    }

    @Sendable func registerBatch(_ request: Request, context: IngestRequestContext) async throws -> Response {
        let orgId = try orgId(context)
        let decoder = WireJSON.decoder()
        let body = try await JSONBody.collect(request, limit: maxBodyBytes)
        let registrations = try JSONBody.decode([DeviceRegistrationAPI.Registration].self, from: body, decoder: decoder)
        try Self.checkBatchSize(registrations.count, of: "registrations")
        let headers = try RegistrationHeaders(request.headers, decoder: decoder)

        var commands: [DeviceRegistrationRequested] = []
        commands.reserveCapacity(registrations.count)
        var tokenHashes = TokenHashes()
        for (index, registration) in registrations.enumerated() {
            commands.append(try DeviceRegistrationRequested(validating: registration, index: index, orgId: orgId, headers: headers, secrets: secrets,
                                                            tokenHashes: &tokenHashes))
        }

        let encoder = CommandWriter.makeEncoder()
        // A batch names many users: each registration carries its own assertion.
        try await publishAdmitted(commands, assertions: registrations.map(\.UserAssertion), batched: true,
                                  callback: headers.callbackTarget, encoder: encoder, context: context)
        guard headers.trackStatus else { return Response(status: .accepted) }
        return try JSONResponse.make(
            commands.map { DeviceRegistrationAPI.RegistrationAccepted(RegistrationRequestId: $0.registrationRequestId) },
            status: .accepted, encoder: encoder)
    }
}

extension DeviceRegistrationRequested {
    /// Validates one registration API registration and makes its command: a new request id, the
    /// platform from the token field that was sent, the API token only as its hash (and inside the
    /// webhook signature). `index` is the element's position in a batch, for the 400's field name.
    init(validating registration: DeviceRegistrationAPI.Registration, index: Int?, orgId: UUID,
         headers: RegistrationHeaders, secrets: SecretsKeyring?, tokenHashes: inout TokenHashes) throws {
        let mobileAppId = try FieldRules.uuid(registration.MobileAppId, field: RegistrationRoutes.field("MobileAppId", index: index))
        let userId = try FieldRules.required(registration.UserId, maxBytes: FieldLimits.userIdBytes,
                                             field: RegistrationRoutes.field("UserId", index: index))
        let apiToken = try FieldRules.required(registration.ApiToken, maxBytes: FieldLimits.apiTokenBytes,
                                               field: RegistrationRoutes.field("ApiToken", index: index))

        let platform: Platform
        let deviceToken: String
        switch (registration.ApnsDeviceToken.nonEmpty, registration.FcmDeviceToken.nonEmpty) {
        case (let apns?, nil):
            (platform, deviceToken) = (.ios, apns)
        case (nil, let fcm?):
            (platform, deviceToken) = (.android, fcm)
        case (nil, nil):
            throw IngestError.badRequest("one of ApnsDeviceToken or FcmDeviceToken is required",
                                         field: RegistrationRoutes.field("ApnsDeviceToken|FcmDeviceToken", index: index), code: .fieldMissing)
        case (.some, .some):
            throw IngestError.badRequest("send either ApnsDeviceToken or FcmDeviceToken, not both",
                                         field: RegistrationRoutes.field("ApnsDeviceToken|FcmDeviceToken", index: index))
        }

        let timeZone = try registration.TimeZone.nonEmpty.map {
            try FieldRules.timeZone($0, field: RegistrationRoutes.field("TimeZone", index: index))
        }

        let properties = try DeviceProperties(locale: registration.Locale, appVersion: registration.AppVersion, tags: registration.Tags,
                                              topics: registration.Topics) { RegistrationRoutes.field($0, index: index) }

        self.init(registrationRequestId: .random(), orgId: orgId, mobileAppId: mobileAppId, userId: userId,
                  platform: platform, deviceToken: deviceToken, apiTokenHash: tokenHashes.hash(apiToken),
                  trackStatus: headers.trackStatus, callback: headers.callback(apiToken: apiToken, app: mobileAppId, secrets: secrets), timeZone: timeZone,
                  locale: properties.locale, appVersion: properties.appVersion, tags: properties.tags, topics: properties.topics)
    }
}

extension Optional where Wrapped == String {
    /// The string, unless it is absent or empty (the original API treats an empty field as not
    /// sent).
    var nonEmpty: String? {
        guard let self, !self.isEmpty else { return nil }
        return self
    }
}
