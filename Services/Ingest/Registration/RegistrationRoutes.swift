import Contracts
import Foundation
import Hummingbird
import Projections

/// The device registration API (docs/API.md#device-registration-api), mounted at
/// `/api/v1.0/orgs/{orgId}/pushdeviceregistration`: registrations, their status, cleanups.
///
/// Every request is validated completely before anything is published, so a 400 writes nothing,
/// and a 202 is answered only after the broker acknowledged every command of the request.
struct RegistrationRoutes: Sendable {
    static let basePath: RouterPath = "api/v1.0/orgs/:orgId/pushdeviceregistration"

    let writer: CommandWriter
    let store: any ProjectionReader
    let gate: RegistrationGate
    /// Seals the values of `x-ms-callback-url-headers` (`SealedHeaders`); nil: written as given.
    let secrets: SecretsKeyring?
    let maxBodyBytes: Int

    func addRoutes(to group: RouterGroup<IngestRequestContext>) {
        group.post("devices", use: register)
        group.post("devices/batch", use: registerBatch)
        // The router ignores a trailing slash, so this also serves the clients' `devices/status/`.
        group.post("devices/status", use: status)
        group.post("devices/cleanup", use: cleanup)
        group.post("devices/cleanup/batch", use: cleanupBatch)
    }

    /// Writes the commands the gate admits (none: nothing is written, and the answer is the same).
    /// `batched`: the commands are the elements of a JSON array, in order (for the 403's field).
    /// `callback`: the request's status webhook URL and the header that gave it, which each app
    /// admitted must allow (`RegistrationGate`).
    func publishAdmitted<C: Command>(_ commands: [C], app: (C) -> UUID, tokenHash: (C) -> String, batched: Bool = false,
                                     callback: (url: String, field: String)? = nil,
                                     encoder: JSONEncoder, context: IngestRequestContext) async throws {
        let admitted = try await gate.admit(commands, app: app, tokenHash: tokenHash, scope: context.requiredTokenScope(),
                                            tokenField: { Self.field("ApiToken", index: batched ? $0 : nil) }, callback: callback,
                                            context: context)
        guard !admitted.isEmpty else { return }
        try await writer.publish(admitted.flatMap { try writer.encode($0, encoder: encoder) }, context: context)
    }

    /// The org of the path; it must be a UUID.
    func orgId(_ context: IngestRequestContext) throws -> UUID {
        try FieldRules.uuidParameter("orgId", in: context)
    }

    /// Checks a batch's size: 1…100 elements (`DeviceRegistrationAPI.maxBatch`).
    static func checkBatchSize(_ count: Int, of what: String) throws {
        guard count > 0 else {
            throw IngestError.badRequest("the batch is empty: send 1…\(DeviceRegistrationAPI.maxBatch) \(what)", field: "body")
        }
        guard count <= DeviceRegistrationAPI.maxBatch else {
            throw IngestError.badRequest("the batch has \(count) \(what); at most \(DeviceRegistrationAPI.maxBatch) are allowed", field: "body")
        }
    }

    /// The name of a field of the request body, or of one batch element's field (`[3].UserId`).
    static func field(_ name: String, index: Int?) -> String {
        guard let index else { return name }
        return "[\(index)].\(name)"
    }
}
