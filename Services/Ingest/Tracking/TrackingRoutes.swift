import Contracts
import Foundation
import Hummingbird
import Projections
import WireCodec

/// Engagement tracking (docs/API.md#engagement-tracking), mounted at `/v1/apps/{mobileAppId}`
/// behind `AppAuthMiddleware`:
/// - `POST …/tracking`: one event or an array of 1…1000 → `202 {"accepted": n}` once the
///   broker has them; one invalid event refuses the whole request (400 naming it).
/// - `GET …/deliveries/{deliveryId}`: the delivery's counts and rates, as projected now.
///
/// Ingest checks only the shape of an event. Whether its delivery exists, had tracking on and
/// sent that broadlogId is the processor's call: the send may not have been applied yet.
struct TrackingRoutes: Sendable {
    static let basePath: RouterPath = "v1/apps/:mobileAppId"

    let writer: CommandWriter
    let store: any ProjectionReader
    let maxBodyBytes: Int
    /// Whether this ingest holds the deployment key, so that every send it writes names keyed
    /// message ids: its reports are then stamped keyed (`TrackingReported.keyedIds`) and name
    /// only ids made with a key only the server holds.
    let keyedIds: Bool

    func addRoutes(to group: RouterGroup<IngestRequestContext>) {
        group.post("tracking", use: track)
        group.get("deliveries/:deliveryId", use: stats)
        group.get("deliveries/:deliveryId/outcomes", use: outcomes)
    }

    @Sendable func track(_ request: Request, context: IngestRequestContext) async throws -> Response {
        let auth = try context.authenticated()
        let body = try await JSONBody.collect(request, limit: maxBodyBytes)
        let decoder = WireJSON.decoder()
        let commands: [TrackingReported]
        let count: Int
        if JSONBody.firstSignificantByte(of: body) == UInt8(ascii: "[") {
            let events = try JSONBody.decode([TrackingAPI.Event].self, from: body, decoder: decoder)
            guard !events.isEmpty, events.count <= TrackingAPI.maxEvents else {
                throw IngestError.badRequest(
                    "the batch has \(events.count) events; send 1…\(TrackingAPI.maxEvents)", field: "body")
            }
            commands = try Self.commands(for: events, app: auth.mobileAppId, indexed: true, keyedIds: keyedIds)
            count = events.count
        } else {
            let event = try JSONBody.decode(TrackingAPI.Event.self, from: body, decoder: decoder)
            commands = try Self.commands(for: [event], app: auth.mobileAppId, indexed: false, keyedIds: keyedIds)
            count = 1
        }
        let encoder = CommandWriter.makeEncoder()
        try await writer.publish(commands.flatMap { try writer.encode($0, encoder: encoder) }, context: context)
        return try JSONResponse.make(TrackingAPI.Accepted(accepted: count), status: .accepted, encoder: encoder)
    }

    @Sendable func stats(_ request: Request, context: IngestRequestContext) async throws -> Response {
        let auth = try context.authenticated()
        let deliveryId = try FieldRules.uuidParameter("deliveryId", in: context)
        guard let row = try await readStore(context, { try await store.deliveryStats(app: auth.mobileAppId, deliveryId: deliveryId) }) else {
            throw IngestError.notFound("no delivery \(deliveryId.lowercasedString) in this app", field: "deliveryId")
        }
        let stats = TrackingAPI.DeliveryStats(deliveryId: row.delivery.deliveryId, sent: row.delivery.sent,
                                              impressions: row.impressions, clicks: row.clicks, opens: row.opens,
                                              repeatsIgnored: row.repeatsIgnored, delivered: row.delivery.delivered,
                                              failed: row.delivery.failed, unregistered: row.delivery.unregistered,
                                              idempotencyKey: row.delivery.idempotencyKey, duplicates: row.delivery.duplicates,
                                              conflicts: row.delivery.conflicts, sentByLocale: row.delivery.sentByLocale,
                                              outcomesByLocale: row.delivery.outcomesByLocale, expired: row.delivery.expired,
                                              sendAt: row.delivery.sendAt, schedule: row.delivery.schedule,
                                              sendAtLocal: row.delivery.sendAtLocal, held: row.delivery.held, dropped: row.delivery.dropped,
                                              cancelled: row.delivery.cancelled, waves: row.delivery.waves.isEmpty ? nil : row.delivery.waves,
                                              capped: row.delivery.capped)
        return try JSONResponse.make(stats, status: .ok, encoder: WireJSON.encoder())
    }

    /// `GET …/deliveries/{deliveryId}/outcomes?outcome=delivered|failed|unregistered|expired&limit=1…1000 (100)&after=index`.
    @Sendable func outcomes(_ request: Request, context: IngestRequestContext) async throws -> Response {
        let auth = try context.authenticated()
        let deliveryId = try FieldRules.uuidParameter("deliveryId", in: context)
        let query = request.uri.queryParameters
        let limit = try FieldRules.pageLimit(query.get("limit"))
        var after: Int?
        if let text = query.get("after") {
            guard let value = Int(text), value >= 0 else {
                throw IngestError.badRequest("after must be the index of the last outcome of the previous page", field: "after")
            }
            after = value
        }
        var outcome: DeliveryOutcome?
        if let text = query.get("outcome") {
            guard let value = DeliveryOutcome(rawValue: text) else {
                throw IngestError.badRequest("outcome must be delivered, failed, unregistered or expired", field: "outcome")
            }
            outcome = value
        }
        let (known, rows) = try await readStore(context) {
            let rows = try await store.deliveryOutcomes(app: auth.mobileAppId, deliveryId: deliveryId, outcome: outcome, after: after,
                                                        limit: limit + 1)
            // Outcome rows exist only for a delivery of this app: the statistics (which count
            // tracking rows) are read only to tell an empty page from an unknown delivery.
            if !rows.isEmpty { return (true, rows) }
            return (try await store.deliveryStats(app: auth.mobileAppId, deliveryId: deliveryId) != nil, rows)
        }
        guard known else { throw IngestError.notFound("no delivery \(deliveryId.lowercasedString) in this app", field: "deliveryId") }
        // One more than asked tells whether a next page exists.
        let page = rows.prefix(limit).map {
            TrackingAPI.Outcome(index: $0.messageIndex, deviceToken: $0.deviceToken, outcome: $0.outcome, reason: $0.reason,
                                reportedAt: $0.reportedAt)
        }
        let list = TrackingAPI.OutcomeList(outcomes: Array(page), next: rows.count > limit ? page.last?.index : nil)
        return try JSONResponse.make(list, status: .ok, encoder: WireJSON.encoder())
    }

    /// Validates every event, then groups them by delivery (one command per delivery, in the
    /// order of their first events; each delivery's events in request order).
    static func commands(for events: [TrackingAPI.Event], app: UUID, indexed: Bool, keyedIds: Bool = false) throws -> [TrackingReported] {
        var commands: [TrackingReported] = []
        var position: [UUID: Int] = [:]
        for (index, event) in events.enumerated() {
            let field = { (name: String) in indexed ? "[\(index)].\(name)" : name }
            let deliveryId = try FieldRules.uuid(event.deliveryId, field: field("deliveryId"))
            let broadlogId = try FieldRules.required(event.broadlogId, maxBytes: FieldLimits.broadlogIdBytes, field: field("broadlogId"))
            guard broadlogId.utf8.count <= TrackingAPI.maxBroadlogIdBytes else {
                throw IngestError.badRequest("a broadlogId has at most \(TrackingAPI.maxBroadlogIdBytes) bytes",
                                             field: field("broadlogId"))
            }
            let tracked = TrackingEvent(broadlogId: broadlogId, action: try action(event.action, field: field("action")))
            if let at = position[deliveryId] {
                commands[at].events.append(tracked)
            } else {
                position[deliveryId] = commands.count
                commands.append(TrackingReported(mobileAppId: app, deliveryId: deliveryId, events: [tracked], keyedIds: keyedIds ? true : nil))
            }
        }
        return commands
    }

    /// The tracking SDK's action codes, as strings (`"7"`) or integers (`7`).
    static func action(_ value: NotificationAPI.Scalar?, field: String) throws -> TrackingAction {
        let code: Int? = switch value {
        case .string(let text): text.utf8.count == 1 ? Int(text) : nil
        case .int(let n): n
        case .bool, nil: nil
        }
        guard let code, let action = TrackingAction(rawValue: code) else {
            let problem = value == nil ? "action is required: " : "action must be "
            throw IngestError.badRequest(problem + "\"1\" (open), \"2\" (click) or \"7\" (impression)", field: field)
        }
        return action
    }
}
