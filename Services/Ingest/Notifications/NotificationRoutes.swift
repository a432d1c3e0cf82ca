import Contracts
import Foundation
import Hummingbird

/// The send API (docs/API.md#sending-notifications), mounted at `/v1/apps/{mobileAppId}` behind
/// `AppAuthMiddleware`: `POST …/notifications` → `202 {"deliveryId"}` once the
/// `NotificationRequested` is in Kafka.
///
/// Ingest only validates and publishes; the processor resolves the target to devices and
/// renders the per-platform payloads, so the answer does not say how many devices there are.
struct NotificationRoutes: Sendable {
    static let basePath: RouterPath = "v1/apps/:mobileAppId"

    let writer: CommandWriter
    let maxBodyBytes: Int

    func addRoutes(to group: RouterGroup<IngestRequestContext>) {
        group.post("notifications", use: send)
    }

    @Sendable func send(_ request: Request, context: IngestRequestContext) async throws -> Response {
        let auth = try context.authenticated()
        let body = try await JSONBody.collect(request, limit: maxBodyBytes)
        let send = try JSONBody.decode(NotificationAPI.SendRequest.self, from: body, decoder: WireJSON.decoder())
        let command = try NotificationRequested(validating: send, deliveryId: .random(), mobileAppId: auth.mobileAppId)

        let encoder = CommandWriter.makeEncoder()
        try await writer.publish([writer.encode(command, encoder: encoder)], context: context)
        return try JSONResponse.make(NotificationAPI.SendAccepted(deliveryId: command.deliveryId), status: .accepted, encoder: encoder)
    }
}
