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

    /// Waits for a cancel to be applied, so that its answer says what became of the send.
    let applied: AdminChangeApplied

    func addRoutes(to group: RouterGroup<IngestRequestContext>) {
        group.post("notifications", use: send)
        group.get("notifications", use: scheduled)
        group.delete("notifications/:deliveryId", use: cancel)
        group.put("users/:userId/settings", use: putUserSettings)
        group.get("users/:userId/settings", use: getUserSettings)
    }

    /// `PUT …/users/{userId}/settings`: sets a user's own settings, answered `200` with them
    /// once applied (every send after it sees them). The user need have no device yet.
    @Sendable func putUserSettings(_ request: Request, context: IngestRequestContext) async throws -> Response {
        let auth = try context.authenticated()
        let userId = try Self.userId(in: context)
        let body = try await JSONBody.collect(request, limit: maxBodyBytes)
        let settings = try JSONBody.decode(NotificationAPI.UserSettings.self, from: body, decoder: WireJSON.decoder())
        let quietHours = try FieldRules.quietHours(settings.quietHours)
        let command = UserSettingsChanged(mobileAppId: auth.mobileAppId, userId: userId, quietHours: quietHours)
        try await applied.wait(for: writer.publish(command, context: context), app: auth.mobileAppId, written: "the settings of user \(userId)",
                               check: "GET the user's settings to see whether they changed")
        return try await userSettings(app: auth.mobileAppId, userId: userId, context: context)
    }

    /// `GET …/users/{userId}/settings`: a user's own settings; none set reads `{}`.
    @Sendable func getUserSettings(_ request: Request, context: IngestRequestContext) async throws -> Response {
        let auth = try context.authenticated()
        return try await userSettings(app: auth.mobileAppId, userId: try Self.userId(in: context), context: context)
    }

    private func userSettings(app: UUID, userId: String, context: IngestRequestContext) async throws -> Response {
        let row = try await readStore(context) { try await store.userSettings(app: app, userId: userId) }
        return try JSONResponse.make(NotificationAPI.UserSettings(quietHours: row?.quietHours), status: .ok, encoder: WireJSON.encoder())
    }

    private static func userId(in context: IngestRequestContext) throws -> String {
        guard let userId = context.parameters.get("userId"), !userId.isEmpty else {
            throw IngestError.badRequest("userId is required", field: "userId")
        }
        try FieldRules.bounded(userId, maxBytes: FieldLimits.userIdBytes, field: "userId")
        return userId
    }

    /// `DELETE …/notifications/{deliveryId}`: cancels a scheduled send that still waits, or the
    /// pushes a `sending` one still holds (a local-time send's later zones, quiet hours). The
    /// cancel is written, and answered once applied: `200` when the send is cancelled (also by an
    /// earlier cancel), `409` when it fired in full, expired or was never scheduled, `404` for no
    /// such send. A send accepted before the cancel is applied before it (one partition per app part).
    @Sendable func cancel(_ request: Request, context: IngestRequestContext) async throws -> Response {
        let auth = try context.authenticated()
        let deliveryId = try FieldRules.uuidParameter("deliveryId", in: context)
        let positions = try await writer.publish(NotificationCancelled(mobileAppId: auth.mobileAppId, deliveryId: deliveryId), context: context)
        try await applied.wait(for: positions, app: auth.mobileAppId, written: "the cancel of \(deliveryId.lowercasedString)",
                               check: "GET the delivery to see whether it was cancelled")
        guard let row = try await readStore(context, { try await store.delivery(app: auth.mobileAppId, deliveryId: deliveryId) }) else {
            throw IngestError.notFound("no send \(deliveryId.lowercasedString) in this app", field: "deliveryId")
        }
        guard row.schedule == .cancelled else {
            throw IngestError.rejected(.conflict, Problem(
                error: row.schedule.map { "the send is \($0.rawValue), not waiting: it can no longer be cancelled" }
                    ?? "the send was not scheduled: it went out when it was accepted",
                field: "deliveryId", code: .scheduleNotWaiting))
        }
        return try JSONResponse.make(NotificationAPI.Cancelled(deliveryId: deliveryId, schedule: .cancelled), status: .ok,
                                     encoder: WireJSON.encoder())
    }

    /// `GET …/notifications?schedule=waiting|sending|fired|cancelled|expired&limit=1…1000 (100)&after=`:
    /// the app's scheduled sends in that state (default `waiting`), by time.
    @Sendable func scheduled(_ request: Request, context: IngestRequestContext) async throws -> Response {
        let auth = try context.authenticated()
        let query = request.uri.queryParameters
        let limit = try FieldRules.pageLimit(query.get("limit"))
        var state = ScheduleState.waiting
        if let text = query.get("schedule") {
            guard let value = ScheduleState(rawValue: text) else {
                throw IngestError.badRequest("schedule must be waiting, sending, fired, cancelled or expired", field: "schedule")
            }
            state = value
        }
        var after: ScheduledCursor?
        if let text = query.get("after") {
            guard let cursor = ScheduledCursor(text) else {
                throw IngestError.badRequest("after must be the next of the previous page", field: "after")
            }
            after = cursor
        }
        let rows = try await readStore(context) {
            try await store.scheduledSends(app: auth.mobileAppId, state: state, after: after.map { ($0.sendAt, $0.deliveryId) },
                                           limit: limit + 1)
        }
        let page = rows.prefix(limit)
        let listed = page.compactMap { row in
            row.sendAt.map { NotificationAPI.Scheduled(deliveryId: row.deliveryId, sendAt: $0, schedule: state, createdAt: row.createdAt,
                                                     sendAtLocal: row.sendAtLocal, held: row.held) }
        }
        let next = rows.count > limit ? page.last.flatMap { row in row.sendAt.map { ScheduledCursor(sendAt: $0, deliveryId: row.deliveryId).text } } : nil
        return try JSONResponse.make(NotificationAPI.ScheduledList(notifications: listed, next: next), status: .ok,
                                     encoder: WireJSON.encoder())
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
        let accepted = NotificationAPI.SendAccepted(deliveryId: command.deliveryId, sendAt: command.sendAt, sendAtLocal: command.sendAtLocal)
        return try JSONResponse.make(accepted, status: .accepted, encoder: encoder)
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

/// Where a page of scheduled sends ends: `<send time in ms>_<delivery id>`.
struct ScheduledCursor {
    var sendAt: Date
    var deliveryId: UUID

    init(sendAt: Date, deliveryId: UUID) {
        self.sendAt = sendAt
        self.deliveryId = deliveryId
    }

    init?(_ text: String) {
        let parts = text.split(separator: "_")
        guard parts.count == 2, let ms = Int64(parts[0]), ms >= 0, let id = UUID(uuidString: String(parts[1])) else { return nil }
        self.init(sendAt: Date(timeIntervalSince1970: Double(ms) / 1000), deliveryId: id)
    }

    var text: String { "\(RFC3339.milliseconds(sendAt))_\(deliveryId.lowercasedString)" }
}
