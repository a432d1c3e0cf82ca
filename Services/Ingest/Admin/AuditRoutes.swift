import Contracts
import Foundation
import Hummingbird
import Projections
import WireCodec

/// `GET /admin/v1/audit` (docs/API.md#audit-log): the audit trail the processor builds from the
/// admin topic, read from the projection store, newest first. Filters: `app`, `actor` (an admin
/// token id or `bootstrap`), `type` (an admin command type), `since` (inclusive) and `until`
/// (exclusive) as RFC 3339 times of the log; paged by `limit` and the `after` cursor of the
/// previous page's `next`. A bad filter is a 400 naming it.
struct AuditRoutes: Sendable {
    let store: any ProjectionReader

    /// The command types the audit trail holds.
    static let auditedTypes: Set<String> = Set(CommandType.allCases.filter { $0.rawValue.hasPrefix("admin.") }.map(\.rawValue))

    func addRoutes(to group: RouterGroup<IngestRequestContext>) {
        group.get("audit", use: list)
    }

    @Sendable func list(_ request: Request, context: IngestRequestContext) async throws -> Response {
        let query = try Self.query(request)
        var rows = try await readStore(context) {
            var asked = query
            asked.limit += 1  // one more tells whether a next page exists
            return try await store.auditEntries(asked)
        }
        let more = rows.count > query.limit
        if more { rows.removeLast() }
        let page = AdminAPI.AuditPage(entries: rows.map(Self.view), next: more ? rows.last.map { AuditCursor($0).text } : nil)
        return try JSONResponse.make(page, status: .ok, encoder: WireJSON.encoder())
    }

    static func query(_ request: Request) throws -> AuditQuery {
        let parameters = request.uri.queryParameters
        var query = AuditQuery()
        do {
            query.limit = try FieldRules.pageLimit(parameters.get("limit"))
        } catch {
            throw refused("limit must be an integer from 1 to 1000", field: "limit")
        }
        if let app = parameters.get("app") {
            guard let id = UUID(parsing: app) else { throw refused("app must be an app id (a UUID)", field: "app") }
            query.appId = id
        }
        if let actor = parameters.get("actor") {
            if actor == AdminActor.bootstrapName {
                query.actor = .bootstrap
            } else if let id = UUID(parsing: actor) {
                query.actor = .token(id)
            } else {
                throw refused("actor must be an admin token id or bootstrap", field: "actor")
            }
        }
        if let type = parameters.get("type") {
            guard auditedTypes.contains(type) else {
                throw refused("type must be one of \(auditedTypes.sorted().joined(separator: ", "))", field: "type")
            }
            query.type = type
        }
        query.since = try time(parameters.get("since"), field: "since")
        query.until = try time(parameters.get("until"), field: "until")
        if let after = parameters.get("after") {
            guard let cursor = AuditCursor(text: after) else {
                throw refused("after must be the next of a previous page", field: "after")
            }
            query.before = cursor
        }
        return query
    }

    private static func time(_ text: String?, field: String) throws -> Date? {
        guard let text else { return nil }
        guard let date = RFC3339.date(from: text) else {
            throw refused("\(field) must be an RFC 3339 time, e.g. 2026-01-31T12:00:00Z", field: field)
        }
        return date
    }

    private static func refused(_ message: String, field: String) -> IngestError {
        .badRequest(message, field: field)
    }

    static func view(_ row: AuditEntryRow) -> AdminAPI.AuditEntry {
        AdminAPI.AuditEntry(
            id: row.commandId, at: row.at, type: row.type, mobileAppId: row.appId,
            actor: row.actorName.map { AdminActor(id: row.actorId, name: $0) }, requestId: row.requestId,
            outcome: row.outcome, reason: row.reason, changes: (try? JSONValue.parse(row.changes)) ?? .object([:]))
    }
}
