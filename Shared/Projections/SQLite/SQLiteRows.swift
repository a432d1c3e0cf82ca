import Contracts
import Foundation
import ProjectionChangelog
import Projections
import GRDB

/// The decoding of the rows queries select into model values.
///
/// Columns are read by position, in the order of their table's `TableCatalog` entry (whose
/// `columnList` the queries select), which keeps decoding of large batches cheap. Decoding
/// throws (rather than traps) on a value of the wrong type.
enum SQLiteRows {
    static func app(_ row: Row) throws -> AppRow {
        try AppRow(
            appId: SQLiteValues.uuid(row.decode(atIndex: 0), column: "apps.app_id"),
            orgId: SQLiteValues.uuid(row.decode(atIndex: 1), column: "apps.org_id"),
            name: row.decode(atIndex: 2),
            callbackUrl: row.decode(atIndex: 3),
            callbackHeaders: SQLiteValues.headers(json: row.decode(atIndex: 4), column: "apps.callback_headers"),
            webhookRetries: row.decode(atIndex: 5),
            createdAt: SQLiteValues.date(millis: row.decode(atIndex: 6)),
            pushCredentials: ProjectionValues.pushCredentials(json: row.decode(atIndex: 7)))
    }

    static func token(_ row: Row) throws -> ApiTokenRow {
        try ApiTokenRow(
            tokenId: SQLiteValues.uuid(row.decode(atIndex: 0), column: "api_tokens.token_id"),
            appId: SQLiteValues.uuid(row.decode(atIndex: 1), column: "api_tokens.app_id"),
            tokenHash: row.decode(atIndex: 2),
            revoked: row.decode(atIndex: 3),
            createdAt: SQLiteValues.date(millis: row.decode(atIndex: 4)),
            scopes: ProjectionValues.scopes(column: row.decode(atIndex: 5)))
    }

    static func idempotencyKey(_ row: Row) throws -> IdempotencyKeyRow {
        try IdempotencyKeyRow(
            scope: row.decode(atIndex: 0), key: row.decode(atIndex: 1),
            resourceId: SQLiteValues.uuid(row.decode(atIndex: 2), column: "idempotency_keys.resource_id"),
            requestHash: row.decode(atIndex: 3), firstAt: SQLiteValues.date(millis: row.decode(atIndex: 4)))
    }

    static func adminToken(_ row: Row) throws -> AdminTokenRow {
        try AdminTokenRow(
            adminTokenId: SQLiteValues.uuid(row.decode(atIndex: 0), column: "admin_tokens.admin_token_id"),
            name: row.decode(atIndex: 1),
            tokenHash: row.decode(atIndex: 2),
            revoked: row.decode(atIndex: 3),
            createdAt: SQLiteValues.date(millis: row.decode(atIndex: 4)),
            revokedAt: (row.decode(atIndex: 5) as Int64?).map(SQLiteValues.date(millis:)))
    }

    static func auditEntry(_ row: Row) throws -> AuditEntryRow {
        try AuditEntryRow(
            commandId: SQLiteValues.uuid(row.decode(atIndex: 0), column: "audit_log.command_id"),
            at: SQLiteValues.date(millis: row.decode(atIndex: 1)),
            type: row.decode(atIndex: 2),
            appId: (row.decode(atIndex: 3) as String?).map { try SQLiteValues.uuid($0, column: "audit_log.app_id") },
            actorId: (row.decode(atIndex: 4) as String?).map { try SQLiteValues.uuid($0, column: "audit_log.actor_id") },
            actorName: row.decode(atIndex: 5),
            requestId: row.decode(atIndex: 6),
            outcome: row.decode(atIndex: 7),
            reason: row.decode(atIndex: 8),
            changes: row.decode(atIndex: 9))
    }

    static func device(_ row: Row) throws -> DeviceRow {
        try DeviceRow(
            appId: SQLiteValues.uuid(row.decode(atIndex: 0), column: "devices.app_id"),
            deviceToken: row.decode(atIndex: 1),
            userId: row.decode(atIndex: 2),
            platform: SQLiteValues.decode(Platform.self, row.decode(atIndex: 3), column: "devices.platform"),
            version: row.decode(atIndex: 4),
            updatedAt: SQLiteValues.date(millis: row.decode(atIndex: 5)))
    }

    /// The current row of a statement selecting `TableCatalog.devices.columnList`, read through SQLite's C API
    /// (the loads of many devices: a send to many users reads 100,000). `appId`: the app the
    /// query selected on, which spares parsing the column's UUID text on every row.
    static func device(_ statement: SQLiteRawStatement, appId: UUID) throws -> DeviceRow {
        try DeviceRow(
            appId: appId,
            deviceToken: statement.text(1),
            userId: statement.text(2),
            platform: SQLiteValues.decode(Platform.self, statement.text(3), column: "devices.platform"),
            version: statement.int64(4),
            updatedAt: SQLiteValues.date(millis: statement.int64(5)))
    }

    static func status(_ row: Row) throws -> RegistrationStatusRow {
        let reason: String? = try row.decode(atIndex: 3)
        return try RegistrationStatusRow(
            requestId: SQLiteValues.uuid(row.decode(atIndex: 0), column: "registration_status.request_id"),
            appId: SQLiteValues.uuid(row.decode(atIndex: 1), column: "registration_status.app_id"),
            status: SQLiteValues.decode(DeviceRegistrationAPI.Status.self, row.decode(atIndex: 2), column: "registration_status.status"),
            failureReason: reason.map {
                try SQLiteValues.decode(DeviceRegistrationAPI.FailureReason.self, $0, column: "registration_status.failure_reason")
            },
            decidedAt: SQLiteValues.date(millis: row.decode(atIndex: 4)))
    }

    static func pending(_ row: Row) throws -> PendingNotificationRow {
        try PendingNotificationRow(
            appId: SQLiteValues.uuid(row.decode(atIndex: 0), column: "pending_notifications.app_id"),
            deviceToken: row.decode(atIndex: 1),
            notificationId: row.decode(atIndex: 2),
            deliveryId: SQLiteValues.uuid(row.decode(atIndex: 3), column: "pending_notifications.delivery_id"),
            sentAt: SQLiteValues.date(millis: row.decode(atIndex: 4)),
            text: row.decode(atIndex: 5),
            businessId: row.decode(atIndex: 6))
    }

    static func delivery(_ row: Row) throws -> DeliveryRow {
        try DeliveryRow(
            appId: SQLiteValues.uuid(row.decode(atIndex: 0), column: "deliveries.app_id"),
            deliveryId: SQLiteValues.uuid(row.decode(atIndex: 1), column: "deliveries.delivery_id"),
            kind: SQLiteValues.decode(NotificationKind.self, row.decode(atIndex: 2), column: "deliveries.kind"),
            managed: row.decode(atIndex: 3),
            tracking: row.decode(atIndex: 4),
            sent: row.decode(atIndex: 5),
            createdAt: SQLiteValues.date(millis: row.decode(atIndex: 6)),
            delivered: row.decode(atIndex: 7),
            failed: row.decode(atIndex: 8),
            unregistered: row.decode(atIndex: 9),
            idempotencyKey: row.decode(atIndex: 10),
            requestHash: row.decode(atIndex: 11),
            duplicates: row.decode(atIndex: 12),
            conflicts: row.decode(atIndex: 13))
    }

    /// The current row of a statement selecting `TableCatalog.deliveries.columnList` of `appId`'s deliveries, read
    /// through SQLite's C API (the read of every keyed send).
    static func delivery(_ statement: SQLiteRawStatement, appId: UUID) throws -> DeliveryRow {
        try DeliveryRow(
            appId: appId,
            deliveryId: SQLiteValues.uuid(statement.text(1), column: "deliveries.delivery_id"),
            kind: SQLiteValues.decode(NotificationKind.self, statement.text(2), column: "deliveries.kind"),
            managed: statement.int64(3) != 0,
            tracking: statement.int64(4) != 0,
            sent: Int(statement.int64(5)),
            createdAt: SQLiteValues.date(millis: statement.int64(6)),
            delivered: Int(statement.int64(7)),
            failed: Int(statement.int64(8)),
            unregistered: Int(statement.int64(9)),
            idempotencyKey: statement.optionalText(10),
            requestHash: statement.optionalText(11),
            duplicates: Int(statement.int64(12)),
            conflicts: Int(statement.int64(13)))
    }

    static func outcome(_ row: Row) throws -> DeliveryOutcomeRow {
        try DeliveryOutcomeRow(
            appId: SQLiteValues.uuid(row.decode(atIndex: 0), column: "delivery_outcomes.app_id"),
            deliveryId: SQLiteValues.uuid(row.decode(atIndex: 1), column: "delivery_outcomes.delivery_id"),
            messageIndex: row.decode(atIndex: 2),
            deviceToken: row.decode(atIndex: 3),
            outcome: SQLiteValues.decode(DeliveryOutcome.self, row.decode(atIndex: 4), column: "delivery_outcomes.outcome"),
            reason: row.decode(atIndex: 5),
            reportedAt: SQLiteValues.date(millis: row.decode(atIndex: 6)))
    }

    static let trackedColumns = "app_id, action, message_index, repeats"

    static func tracked(_ row: Row, from start: Int) throws -> TrackedEvent {
        try TrackedEvent(
            appId: SQLiteValues.uuid(row.decode(atIndex: start), column: "tracking_events.app_id"),
            action: SQLiteValues.decode(TrackingAction.self, row.decode(atIndex: start + 1), column: "tracking_events.action"),
            messageIndex: row.decode(atIndex: start + 2),
            repeats: row.decode(atIndex: start + 3))
    }

    static func outboxJob(_ row: Row) throws -> OutboxJob {
        let appId: String? = try row.decode(atIndex: 2)
        return try OutboxJob(
            id: row.decode(atIndex: 0),
            kind: row.decode(atIndex: 1),
            appId: appId.map { try SQLiteValues.uuid($0, column: "outbox.app_id") },
            url: row.decode(atIndex: 3),
            headers: SQLiteValues.headers(json: row.decode(atIndex: 4), column: "outbox.headers"),
            body: row.decode(atIndex: 5),
            maxAttempts: row.decode(atIndex: 6),
            attempts: row.decode(atIndex: 7),
            nextAttemptAt: SQLiteValues.date(millis: row.decode(atIndex: 8)),
            state: SQLiteValues.decode(OutboxState.self, row.decode(atIndex: 9), column: "outbox.state"),
            lastStatus: row.decode(atIndex: 10),
            lastError: row.decode(atIndex: 11),
            createdAt: SQLiteValues.date(millis: row.decode(atIndex: 12)))
    }
}
