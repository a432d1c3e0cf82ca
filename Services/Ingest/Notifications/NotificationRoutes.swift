import Contracts
import Foundation
import Hummingbird
import Projections
import WireCodec

/// The send API (docs/API.md#sending-notifications), mounted at `/v1/apps/{mobileAppId}` behind
/// `AppAuthMiddleware`: `POST …/notifications` → `202 {"deliveryId"}` once the
/// `NotificationRequested` is in Kafka.
///
/// Ingest only validates and publishes; the processor resolves the target to devices and
/// renders the per-platform payloads, so the answer does not say how many devices there are.
///
/// With an `Idempotency-Key` (docs/API.md#idempotency-keys) the delivery id is the key's
/// (`IdempotencyKeys`), so any instance gives a retry the first request's id. Once the first
/// send is applied, a retry is answered from the store without writing anything, and the key
/// with another body is refused (422).
struct NotificationRoutes: Sendable {
    static let basePath: RouterPath = "v1/apps/:mobileAppId"
    /// The most windows a key may have been reused over; past it the key is refused.
    static let maxKeyReuses = 1_000

    let writer: CommandWriter
    let store: any ProjectionReader
    /// `PUSHLINE_IDEMPOTENCY_WINDOW_HOURS`.
    let idempotencyWindow: Duration
    let maxBodyBytes: Int
    /// The id of the deployment key (`PUSHLINE_SECRETS_KEY`) every send names for its message
    /// ids (`NotificationRequested.messageKeyId`); nil without one: unkeyed ids.
    let messageKeyId: String?

    func addRoutes(to group: RouterGroup<IngestRequestContext>) {
        group.post("notifications", use: send)
    }

    @Sendable func send(_ request: Request, context: IngestRequestContext) async throws -> Response {
        let auth = try context.authenticated()
        let key = try Self.idempotencyKey(request.headers[.idempotencyKey])
        let body = try await JSONBody.collect(request, limit: maxBodyBytes)
        let send = try JSONBody.decode(NotificationAPI.SendRequest.self, from: body, decoder: WireJSON.decoder())
        var command = try NotificationRequested(validating: send, deliveryId: .random(), mobileAppId: auth.mobileAppId)
        command.messageKeyId = messageKeyId

        let encoder = CommandWriter.makeEncoder()
        if let key {
            let hash = IdempotencyKeys.requestHash(body.readableBytesView)
            switch try await keyed(app: auth.mobileAppId, key: key, requestHash: hash, context: context) {
            case .new(let deliveryId):
                command.deliveryId = deliveryId
                command.idempotencyKey = key
                command.requestHash = hash
            case .applied(let deliveryId):
                var response = try JSONResponse.make(NotificationAPI.SendAccepted(deliveryId: deliveryId), status: .accepted,
                                                     encoder: encoder)
                response.headers[.idempotentReplayed] = "true"
                return response
            }
        }
        try await writer.publish(writer.encode(command, encoder: encoder), context: context)
        return try JSONResponse.make(NotificationAPI.SendAccepted(deliveryId: command.deliveryId), status: .accepted, encoder: encoder)
    }

    /// What a keyed send is, by the store.
    private enum Keyed {
        /// Not applied yet (or not at all): write it with this delivery id.
        case new(UUID)
        /// The first send with this key and body within the window is applied: answer its id.
        case applied(UUID)
    }

    /// Follows the key's delivery ids (`IdempotencyKeys`) past the windows that have ended, to the
    /// one that is not applied yet or whose window is open. An open window with another body is a
    /// 422; a store that cannot be read a 503.
    private func keyed(app: UUID, key: String, requestHash: String, context: IngestRequestContext) async throws -> Keyed {
        var deliveryId = IdempotencyKeys.deliveryId(app: app, key: key)
        let now = Date()
        for _ in 0..<Self.maxKeyReuses {
            let id = deliveryId
            guard let known = try await readStore(context, { try await store.delivery(app: app, deliveryId: id) }) else {
                return .new(deliveryId)
            }
            if known.idempotencyKey == key, now < known.createdAt.addingTimeInterval(idempotencyWindow.inSeconds) {
                guard known.requestHash == requestHash else {
                    throw IngestError.rejected(.unprocessableContent, Problem(
                        error: "this Idempotency-Key was used at \(RFC3339.string(from: known.createdAt)) for a different request "
                            + "(delivery \(known.deliveryId.lowercasedString)); use a new key for a new send",
                        field: IdempotencyKeys.header, code: .idempotencyKeyReused))
                }
                return .applied(deliveryId)
            }
            deliveryId = IdempotencyKeys.nextId(after: deliveryId, key: key)
        }
        throw IngestError.rejected(.unprocessableContent, Problem(
            error: "this Idempotency-Key has been reused over \(Self.maxKeyReuses) windows; use a new key", field: IdempotencyKeys.header,
                                                                  code: .idempotencyKeyExhausted))
    }

    /// The validated `Idempotency-Key`, nil when the header is absent (400 when it is malformed).
    static func idempotencyKey(_ header: String?) throws -> String? {
        guard let header else { return nil }
        guard IdempotencyKeys.isValid(header) else {
            throw IngestError.badRequest("Idempotency-Key must be 1 to \(IdempotencyKeys.maxBytes) visible ASCII characters",
                                         field: IdempotencyKeys.header)
        }
        return header
    }
}
