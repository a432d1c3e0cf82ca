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
    /// `assertions[i]` is the user assertion command `i` came with (`UserAssertion`, or the header
    /// of a single request). `batched`: the commands are the elements of a JSON array, in order
    /// (for the 403's field). `callback`: the request's status webhook URL and the header that
    /// gave it, which each app admitted must allow (`RegistrationGate`).
    func publishAdmitted<C: UserBinding>(_ commands: [C], assertions: [String?], batched: Bool = false,
                                         callback: (url: String, field: String)? = nil,
                                         encoder: JSONEncoder, context: IngestRequestContext) async throws {
        let admitted = try await gate.admit(commands, assertions: assertions, scope: context.requiredTokenScope(),
                                            tokenField: { Self.field("ApiToken", index: batched ? $0 : nil) },
                                            assertionField: { Self.field(Self.assertionField, index: batched ? $0 : nil) },
                                            callback: callback, context: context)
        guard !admitted.isEmpty else { return }
        try await writer.publish(admitted.flatMap { try writer.encode($0, encoder: encoder) }, context: context)
        gate.metrics.countUnverifiedBindings(admitted)
    }

    /// The body field of a registration's or cleanup's user assertion.
    static let assertionField = "UserAssertion"

    /// A single request's assertion: its body field, else the `X-Pushline-User-Assertion` header.
    static func assertion(_ field: String?, _ request: Request) -> String? {
        field.nonEmpty ?? request.headers[.userAssertion]
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
