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
            try put(app, \.upsertApp)
        case .upsertApiToken(let token):
            try put(token, \.upsertToken)
        case .upsertDevice(let device):
            try put(device, \.upsertDevice)
        case .deleteDevice(let key):
            // The device row only: its pending rows go with an explicit `.clearPending`.
            let s = try raw(\.deleteDevice, Self.deleteDeviceSQL)
            s.bind(1, key.appId); s.bind(2, key.deviceToken)
            try s.run(in: db)
        case .putRegistrationStatus(let status):
            try put(status, \.putStatus)
        case .enqueueOutbox(let job):
            // A job id derives from the command that caused it: a replayed command finds its job and
            // leaves it (and its delivery progress) alone.
            try write(job, \.enqueue, TableCatalog.outbox.sqliteInsertUnlessStored)
        case .restoreOutbox(let job):
            // Every column, the lease released.
            try write(job, \.restore, TableCatalog.outbox.sqliteUpsert + ", lease_until = NULL")
            try statement(\.restoreAttempts, Self.restoreAttemptsSQL).execute(arguments: [job.id, job.attempts])
        case .putPending(let pending):
            try put(pending, \.putPending)
        case .deletePending(let key):
            let s = try raw(\.deletePending, Self.deletePendingSQL)
            s.bind(1, key.appId); s.bind(2, key.deviceToken); s.bind(3, key.notificationId)
            try s.run(in: db)
        case .clearPending(let key):
            let s = try raw(\.clearPending, Self.clearPendingSQL)
            s.bind(1, key.appId); s.bind(2, key.deviceToken)
            try s.run(in: db)
        case .putAck(let ack):
            try put(ack, \.putAck)
        case .putDelivery(let delivery):
            try put(delivery, \.putDelivery)
        case .putDeliveryOutcome(let outcome):
            try put(outcome, \.putOutcome)
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
            try put(token, \.upsertAdminToken)
        case .putAuditEntry(let entry):
            try put(entry, \.putAuditEntry)
        case .putIdempotencyKey(let row):
            try put(row, \.putIdempotencyKey)
        }
    }

    /// Writes the whole row, replacing the row of its key (`CatalogTable.sqliteUpsert`).
    private mutating func put<Row: CatalogRow>(_ row: Row, _ slot: WritableKeyPath<Self, Statement?>) throws {
        try write(row, slot, Row.table.sqliteUpsert)
    }

    private mutating func write(_ row: some CatalogRow, _ slot: WritableKeyPath<Self, Statement?>,
                                _ sql: @autoclosure () -> String) throws {
        let s = try raw(slot, sql())
        try row.bind(to: s)
        try s.run(in: db)
    }

    /// The statement of `slot`, to be run through the C API (`SQLiteRawStatement`).
    private mutating func raw(_ slot: WritableKeyPath<Self, Statement?>, _ sql: @autoclosure () -> String) throws -> SQLiteRawStatement {
        SQLiteRawStatement(try statement(slot, sql()))
    }

    private mutating func statement(_ slot: WritableKeyPath<Self, Statement?>, _ sql: @autoclosure () -> String) throws -> Statement {
        if let statement = self[keyPath: slot] { return statement }
        let statement = try db.cachedStatement(sql: sql())
        self[keyPath: slot] = statement
        return statement
    }

    private static let deleteDeviceSQL = TableCatalog.devices.sqliteDeleteByKey

    private static let restoreAttemptsSQL = "DELETE FROM outbox_attempts WHERE job_id = ? AND attempt > ?"

    private static let deletePendingSQL = TableCatalog.pendingNotifications.sqliteDeleteByKey

    private static let clearPendingSQL = "DELETE FROM pending_notifications WHERE app_id = ? AND device_token = ?"

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

}
