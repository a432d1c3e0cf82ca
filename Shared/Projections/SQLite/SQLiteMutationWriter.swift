import Foundation
import ProjectionChangelog
import Projections
import GRDB

/// Applies the mutations of one commit, in order, inside the commit's write transaction.
///
/// This is the processor's hot path: every statement is prepared once per connection
/// (GRDB's statement cache) and looked up once per commit, and the arguments are bound
/// directly, so a mutation costs one `sqlite3_step`.
struct SQLiteMutationWriter {
    private let db: Database
    private var upsertApp: Statement?
    private var upsertToken: Statement?
    private var upsertDevice: Statement?
    private var deleteDevice: Statement?
    private var putStatus: Statement?
    private var enqueue: Statement?
    private var restore: Statement?
    private var restoreAttempts: Statement?
    private var putPending: Statement?
    private var deletePending: Statement?
    private var clearPending: Statement?
    private var putAck: Statement?
    private var putDelivery: Statement?
    private var putOutcome: Statement?
    private var countTracking: Statement?
    private var countTrackingMany: Statement?
    private var upsertAdminToken: Statement?
    private var putAuditEntry: Statement?
    private var putIdempotencyKey: Statement?

    init(db: Database) {
        self.db = db
    }

    mutating func apply(_ mutation: Mutation) throws {
        switch mutation {
        case .upsertApp(let app):
            try statement(\.upsertApp, Self.upsertAppSQL).execute(arguments: [
                SQLiteValues.text(app.appId), SQLiteValues.text(app.orgId), app.name, app.callbackUrl,
                try SQLiteValues.headersJSON(app.callbackHeaders), app.webhookRetries, SQLiteValues.millis(app.createdAt),
                try ProjectionValues.pushCredentialsJSON(app.pushCredentials),
            ])
        case .upsertApiToken(let token):
            try statement(\.upsertToken, Self.upsertTokenSQL).execute(arguments: [
                SQLiteValues.text(token.tokenId), SQLiteValues.text(token.appId), token.tokenHash, token.revoked,
                SQLiteValues.millis(token.createdAt), ProjectionValues.scopesColumn(token.scopes),
            ])
        case .upsertDevice(let device):
            let s = try raw(\.upsertDevice, Self.upsertDeviceSQL)
            s.bind(device, from: 1)
            try s.run(in: db)
        case .deleteDevice(let key):
            // The device row only: its pending rows go with an explicit `.clearPending`.
            let s = try raw(\.deleteDevice, Self.deleteDeviceSQL)
            s.bind(1, key.appId); s.bind(2, key.deviceToken)
            try s.run(in: db)
        case .putRegistrationStatus(let status):
            let s = try raw(\.putStatus, Self.putStatusSQL)
            s.bind(status, from: 1)
            try s.run(in: db)
        case .enqueueOutbox(let job):
            try statement(\.enqueue, Self.enqueueSQL).execute(arguments: [
                job.id, job.kind, job.appId.map(SQLiteValues.text), job.url, try SQLiteValues.headersJSON(job.headers),
                job.body, job.maxAttempts, job.attempts, SQLiteValues.millis(job.nextAttemptAt), job.state.rawValue,
                job.lastStatus, job.lastError, SQLiteValues.millis(job.createdAt),
            ])
        case .restoreOutbox(let job):
            try statement(\.restore, Self.restoreSQL).execute(arguments: [
                job.id, job.kind, job.appId.map(SQLiteValues.text), job.url, try SQLiteValues.headersJSON(job.headers),
                job.body, job.maxAttempts, job.attempts, SQLiteValues.millis(job.nextAttemptAt), job.state.rawValue,
                job.lastStatus, job.lastError, SQLiteValues.millis(job.createdAt),
            ])
            try statement(\.restoreAttempts, Self.restoreAttemptsSQL).execute(arguments: [job.id, job.attempts])
        case .putPending(let pending):
            let s = try raw(\.putPending, Self.putPendingSQL)
            s.bind(pending, from: 1)
            try s.run(in: db)
        case .deletePending(let key):
            let s = try raw(\.deletePending, Self.deletePendingSQL)
            s.bind(1, key.appId); s.bind(2, key.deviceToken); s.bind(3, key.notificationId)
            try s.run(in: db)
        case .clearPending(let key):
            let s = try raw(\.clearPending, Self.clearPendingSQL)
            s.bind(1, key.appId); s.bind(2, key.deviceToken)
            try s.run(in: db)
        case .putAck(let ack):
            let s = try raw(\.putAck, Self.putAckSQL)
            s.bind(ack, from: 1)
            try s.run(in: db)
        case .putDelivery(let delivery):
            let s = try raw(\.putDelivery, Self.putDeliverySQL)
            s.bind(delivery, from: 1)
            try s.run(in: db)
        case .putDeliveryOutcome(let outcome):
            let s = try raw(\.putOutcome, Self.putOutcomeSQL)
            s.bind(outcome, from: 1)
            try s.run(in: db)
        case .countTracking(let batch):
            // Rows go in statements of `trackingRowsPerStatement`, the ids bound once per statement
            // (?1, ?2); the remainder one by one.
            let counts = batch.counts
            var start = 0
            if counts.count >= Self.trackingRowsPerStatement {
                let many = try raw(\.countTrackingMany, Self.countTrackingManySQL)
                while counts.count - start >= Self.trackingRowsPerStatement {
                    many.bind(1, batch.deliveryId); many.bind(2, batch.appId)
                    for (i, count) in counts[start..<(start + Self.trackingRowsPerStatement)].enumerated() {
                        let at = Int32(3 + 3 * i)
                        many.bind(at, count.action.rawValue); many.bind(at + 1, count.messageIndex); many.bind(at + 2, count.reports - 1)
                    }
                    try many.run(in: db)
                    start += Self.trackingRowsPerStatement
                }
            }
            let one = try raw(\.countTracking, Self.countTrackingSQL)
            for count in counts[start...] {
                one.bind(1, batch.deliveryId); one.bind(2, batch.appId); one.bind(3, count.action.rawValue); one.bind(4, count.messageIndex)
                one.bind(5, count.reports - 1)
                try one.run(in: db)
            }
        case .deleteTracking(let pair, let keys):
            try SQLiteParkedTracking.delete(keys, of: pair, in: db)
        case .parkTracking(let pair, let at):
            try SQLiteParkedTracking.park(pair, at: at, in: db)
        case .unparkTracking(let pair):
            try SQLiteParkedTracking.unpark(pair, in: db)
        case .dropTracking(let pair):
            try SQLiteParkedTracking.drop(pair, in: db)
        case .putDeadLetter(let row):
            try SQLiteDeadLetters.put(row, in: db)
        case .deleteDeadLetter(let key):
            try SQLiteDeadLetters.delete(key, in: db)
        case .upsertAdminToken(let token):
            try statement(\.upsertAdminToken, Self.upsertAdminTokenSQL).execute(arguments: [
                SQLiteValues.text(token.adminTokenId), token.name, token.tokenHash, token.revoked, SQLiteValues.millis(token.createdAt),
                token.revokedAt.map(SQLiteValues.millis),
            ])
        case .putAuditEntry(let entry):
            try statement(\.putAuditEntry, Self.putAuditEntrySQL).execute(arguments: [
                SQLiteValues.text(entry.commandId), SQLiteValues.millis(entry.at), entry.type, entry.appId.map(SQLiteValues.text),
                entry.actorId.map(SQLiteValues.text), entry.actorName, entry.requestId, entry.outcome, entry.reason, entry.changes,
            ])
        case .putIdempotencyKey(let row):
            try statement(\.putIdempotencyKey, Self.putIdempotencyKeySQL).execute(arguments: [
                row.scope, row.key, SQLiteValues.text(row.resourceId), row.requestHash, SQLiteValues.millis(row.firstAt),
            ])
        }
    }

    /// The statement of `slot`, to be run through the C API (`SQLiteRawStatement`).
    private mutating func raw(_ slot: WritableKeyPath<Self, Statement?>, _ sql: String) throws -> SQLiteRawStatement {
        SQLiteRawStatement(try statement(slot, sql))
    }

    private mutating func statement(_ slot: WritableKeyPath<Self, Statement?>, _ sql: String) throws -> Statement {
        if let statement = self[keyPath: slot] { return statement }
        let statement = try db.cachedStatement(sql: sql)
        self[keyPath: slot] = statement
        return statement
    }

    private static let upsertAppSQL = TableCatalog.apps.sqliteUpsert

    private static let upsertTokenSQL = TableCatalog.apiTokens.sqliteUpsert

    private static let upsertAdminTokenSQL = TableCatalog.adminTokens.sqliteUpsert

    private static let putIdempotencyKeySQL = TableCatalog.idempotencyKeys.sqliteUpsert

    private static let putAuditEntrySQL = TableCatalog.auditLog.sqliteUpsert

    private static let upsertDeviceSQL = TableCatalog.devices.sqliteUpsert

    private static let deleteDeviceSQL = TableCatalog.devices.sqliteDeleteByKey

    private static let putStatusSQL = TableCatalog.registrationStatus.sqliteUpsert

    /// A job id derives from the command that caused it: a replayed command finds its job and
    /// leaves it (and its delivery progress) alone.
    private static let enqueueSQL = TableCatalog.outbox.sqliteInsertUnlessStored

    /// Every column, the lease released.
    private static let restoreSQL = TableCatalog.outbox.sqliteUpsert + ", lease_until = NULL"

    private static let restoreAttemptsSQL = "DELETE FROM outbox_attempts WHERE job_id = ? AND attempt > ?"

    /// Written as decided (`BatchState.addPending` puts a key once).
    private static let putPendingSQL = TableCatalog.pendingNotifications.sqliteUpsert

    private static let deletePendingSQL = TableCatalog.pendingNotifications.sqliteDeleteByKey

    private static let clearPendingSQL = "DELETE FROM pending_notifications WHERE app_id = ? AND device_token = ?"

    /// Written as decided (`AckHandler` loads the key's ack and writes the first one only).
    private static let putAckSQL = TableCatalog.acks.sqliteUpsert

    /// A first report stores the row; every later one of the same (device, action) is a repeat.
    /// `excluded.repeats` is the batch's reports minus one.
    private static let countTrackingSQL = """
        INSERT INTO tracking_events (delivery_id, \(SQLiteRows.trackedColumns)) VALUES (?, ?, ?, ?, ?)
        ON CONFLICT (delivery_id, app_id, action, message_index) DO UPDATE SET repeats = repeats + excluded.repeats + 1
        """

    /// Multi-row inserts cost far less per row than one statement per row.
    static let trackingRowsPerStatement = 64

    private static let countTrackingManySQL = """
        INSERT INTO tracking_events (delivery_id, \(SQLiteRows.trackedColumns)) VALUES
        \((0..<trackingRowsPerStatement).map { "(?1, ?2, ?\(3 + 3 * $0), ?\(4 + 3 * $0), ?\(5 + 3 * $0))" }.joined(separator: ", "))
        ON CONFLICT (delivery_id, app_id, action, message_index) DO UPDATE SET repeats = repeats + excluded.repeats + 1
        """

    /// Written as decided (`NotificationHandler` refuses a send whose delivery id is known).
    private static let putDeliverySQL = TableCatalog.deliveries.sqliteUpsert

    /// Written as decided (`DeliveryResultHandler` counts the change against the delivery).
    private static let putOutcomeSQL = TableCatalog.deliveryOutcomes.sqliteUpsert
}

/// Rows bound from parameter `start` on, in the order of the column lists of `SQLiteRows`.
extension SQLiteRawStatement {
    func bind(_ device: DeviceRow, from start: Int32) {
        bind(start, device.appId); bind(start + 1, device.deviceToken); bind(start + 2, device.userId)
        bind(start + 3, device.platform.rawValue); bind(start + 4, device.version); bind(start + 5, device.updatedAt)
    }

    func bind(_ status: RegistrationStatusRow, from start: Int32) {
        bind(start, status.requestId); bind(start + 1, status.appId); bind(start + 2, status.status.rawValue)
        bind(start + 3, status.failureReason?.rawValue); bind(start + 4, status.decidedAt)
    }

    func bind(_ pending: PendingNotificationRow, from start: Int32) {
        bind(start, pending.appId); bind(start + 1, pending.deviceToken); bind(start + 2, pending.notificationId)
        bind(start + 3, pending.deliveryId); bind(start + 4, pending.sentAt); bind(start + 5, pending.text)
        bind(start + 6, pending.businessId)
    }

    func bind(_ ack: AckRow, from start: Int32) {
        bind(start, ack.appId); bind(start + 1, ack.deviceToken); bind(start + 2, ack.notificationId); bind(start + 3, ack.businessId)
        bind(start + 4, ack.ackedAt)
    }

    func bind(_ delivery: DeliveryRow, from start: Int32) {
        bind(start, delivery.appId); bind(start + 1, delivery.deliveryId); bind(start + 2, delivery.kind.rawValue)
        bind(start + 3, delivery.managed); bind(start + 4, delivery.tracking); bind(start + 5, delivery.sent)
        bind(start + 6, delivery.createdAt); bind(start + 7, delivery.delivered); bind(start + 8, delivery.failed)
        bind(start + 9, delivery.unregistered); bind(start + 10, delivery.idempotencyKey); bind(start + 11, delivery.requestHash)
        bind(start + 12, delivery.duplicates); bind(start + 13, delivery.conflicts)
    }

    func bind(_ outcome: DeliveryOutcomeRow, from start: Int32) {
        bind(start, outcome.appId); bind(start + 1, outcome.deliveryId); bind(start + 2, outcome.messageIndex)
        bind(start + 3, outcome.deviceToken); bind(start + 4, outcome.outcome.rawValue); bind(start + 5, outcome.reason)
        bind(start + 6, outcome.reportedAt)
    }
}
