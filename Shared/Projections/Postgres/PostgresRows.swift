import Contracts
import Foundation
import ProjectionChangelog
import Projections
import PostgresNIO

/// The decoding of the rows PostgreSQL queries select into model values. Columns are decoded by
/// position, in the order of their table's `TableCatalog` entry (whose `columnList` the queries
/// select).
enum PostgresRows {
    static func app(_ row: PostgresRow) throws -> AppRow {
        let (appId, orgId, name, url, headers, retries, created, credentials) =
            try row.decode((UUID, UUID, String, String?, String, Int, Int64, String?).self)
        return AppRow(appId: appId, orgId: orgId, name: name, callbackUrl: url,
                      callbackHeaders: try ProjectionValues.headers(json: headers, column: "apps.callback_headers"),
                      webhookRetries: retries, createdAt: ProjectionValues.date(millis: created),
                      pushCredentials: try ProjectionValues.pushCredentials(json: credentials))
    }

    static func token(_ row: PostgresRow) throws -> ApiTokenRow {
        let (tokenId, appId, hash, revoked, created, scopes) = try row.decode((UUID, UUID, String, Bool, Int64, String?).self)
        return ApiTokenRow(tokenId: tokenId, appId: appId, tokenHash: hash, revoked: revoked,
                           createdAt: ProjectionValues.date(millis: created), scopes: try ProjectionValues.scopes(column: scopes))
    }

    static func idempotencyKey(_ row: PostgresRow) throws -> IdempotencyKeyRow {
        let (scope, key, resource, hash, first) = try row.decode((String, String, UUID, String, Int64).self)
        return IdempotencyKeyRow(scope: scope, key: key, resourceId: resource, requestHash: hash, firstAt: ProjectionValues.date(millis: first))
    }

    static func adminToken(_ row: PostgresRow) throws -> AdminTokenRow {
        let (id, name, hash, revoked, created, revokedAt) = try row.decode((UUID, String, String, Bool, Int64, Int64?).self)
        return AdminTokenRow(adminTokenId: id, name: name, tokenHash: hash, revoked: revoked, createdAt: ProjectionValues.date(millis: created),
                             revokedAt: revokedAt.map(ProjectionValues.date(millis:)))
    }

    static func auditEntry(_ row: PostgresRow) throws -> AuditEntryRow {
        let (id, at, type, appId, actorId, actorName, requestId, outcome, reason, changes) =
            try row.decode((UUID, Int64, String, UUID?, UUID?, String?, String?, String, String?, String).self)
        return AuditEntryRow(commandId: id, at: ProjectionValues.date(millis: at), type: type, appId: appId, actorId: actorId,
                             actorName: actorName, requestId: requestId, outcome: outcome, reason: reason, changes: changes)
    }

    /// The SQL of the key a device token is stored under (devices, pending notifications, acks):
    /// the SHA-256 of its UTF-8 bytes, 32 bytes whatever the token's length. `text` is a column or
    /// parameter of type text.
    static func tokenKey(_ text: String) -> String { tokenKeyPrefix + text + tokenKeySuffix }
    /// The key of the token of an `unnest(...) AS k(..., device_token, ...)` row.
    static let unnestedTokenKey = tokenKey("k.device_token")
    fileprivate static let tokenKeyPrefix = "sha256(convert_to(", tokenKeySuffix = "::text, 'UTF8'))"

    static func device(_ row: PostgresRow) throws -> DeviceRow {
        let (appId, token, userId, platform, version, updated) = try row.decode((UUID, String, String, String, Int64, Int64).self)
        return DeviceRow(appId: appId, deviceToken: token, userId: userId,
                         platform: try ProjectionValues.decode(Platform.self, platform, column: "devices.platform"),
                         version: version, updatedAt: ProjectionValues.date(millis: updated))
    }

    static func status(_ row: PostgresRow) throws -> RegistrationStatusRow {
        let (requestId, appId, status, reason, decided) = try row.decode((UUID, UUID, String, String?, Int64).self)
        return RegistrationStatusRow(
            requestId: requestId, appId: appId,
            status: try ProjectionValues.decode(DeviceRegistrationAPI.Status.self, status, column: "registration_status.status"),
            failureReason: try reason.map {
                try ProjectionValues.decode(DeviceRegistrationAPI.FailureReason.self, $0, column: "registration_status.failure_reason")
            },
            decidedAt: ProjectionValues.date(millis: decided))
    }

    static func pending(_ row: PostgresRow) throws -> PendingNotificationRow {
        let (appId, token, nid, deliveryId, sent, text, business) =
            try row.decode((UUID, String, String, UUID, Int64, String, String?).self)
        return PendingNotificationRow(appId: appId, deviceToken: token, notificationId: nid, deliveryId: deliveryId,
                                      sentAt: ProjectionValues.date(millis: sent), text: text, businessId: business)
    }

    static func delivery(_ row: PostgresRow) throws -> DeliveryRow {
        let (appId, deliveryId, kind, managed, tracking, sent, created, delivered, failed, unregistered, key, hash, duplicates,
             conflicts) = try row.decode((UUID, UUID, String, Bool, Bool, Int, Int64, Int, Int, Int, String?, String?, Int, Int).self)
        return DeliveryRow(appId: appId, deliveryId: deliveryId,
                           kind: try ProjectionValues.decode(NotificationKind.self, kind, column: "deliveries.kind"),
                           managed: managed, tracking: tracking, sent: sent, createdAt: ProjectionValues.date(millis: created),
                           delivered: delivered, failed: failed, unregistered: unregistered, idempotencyKey: key,
                           requestHash: hash, duplicates: duplicates, conflicts: conflicts)
    }

    static func outcome(_ row: PostgresRow) throws -> DeliveryOutcomeRow {
        let (appId, deliveryId, index, token, outcome, reason, reported) =
            try row.decode((UUID, UUID, Int, String, String, String?, Int64).self)
        return DeliveryOutcomeRow(appId: appId, deliveryId: deliveryId, messageIndex: index, deviceToken: token,
                                  outcome: try ProjectionValues.decode(DeliveryOutcome.self, outcome, column: "delivery_outcomes.outcome"),
                                  reason: reason, reportedAt: ProjectionValues.date(millis: reported))
    }

    /// With the delivery id first.
    static let trackedColumns = "delivery_id, app_id, action, message_index, repeats"

    static func tracked(_ row: PostgresRow) throws -> (deliveryId: UUID, event: TrackedEvent) {
        let (deliveryId, appId, action, index, repeats) = try row.decode((UUID, UUID, Int, Int, Int).self)
        return (deliveryId, TrackedEvent(appId: appId,
                                         action: try ProjectionValues.decode(TrackingAction.self, action, column: "tracking_events.action"),
                                         messageIndex: index, repeats: repeats))
    }

    static func outboxJob(_ row: PostgresRow) throws -> OutboxJob {
        let (id, kind, appId, url, headers, body, maxAttempts, attempts, next, state, lastStatus, lastError, created) =
            try row.decode((String, String, UUID?, String, String, ByteBuffer, Int, Int, Int64, String, Int?, String?, Int64).self)
        return OutboxJob(id: id, kind: kind, appId: appId, url: url,
                         headers: try ProjectionValues.headers(json: headers, column: "outbox.headers"),
                         body: Data(body.readableBytesView), maxAttempts: maxAttempts, attempts: attempts,
                         nextAttemptAt: ProjectionValues.date(millis: next),
                         state: try ProjectionValues.decode(OutboxState.self, state, column: "outbox.state"),
                         lastStatus: lastStatus, lastError: lastError, createdAt: ProjectionValues.date(millis: created))
    }
}

extension PostgresQuery.StringInterpolation {
    /// `PostgresRows.tokenKey` of a token bound as a parameter: `token_key = \(tokenKeyOf: token)`.
    mutating func appendInterpolation(tokenKeyOf token: String) {
        appendLiteral(PostgresRows.tokenKeyPrefix)
        appendInterpolation(token)
        appendLiteral(PostgresRows.tokenKeySuffix)
    }
}
