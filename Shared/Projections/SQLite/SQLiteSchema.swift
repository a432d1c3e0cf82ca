import Foundation
import ProjectionChangelog
import Projections
import GRDB
import Logging

/// The versioned schema of the SQLite projection store: the SQLite form of each step of
/// `ProjectionMigrations`, run by GRDB's migrator.
///
/// Each step also sets `PRAGMA user_version` to its number, so that a store written by newer
/// code is recognised (and refused) before any migration touches it: older code could
/// otherwise misread or damage tables it does not know.
///
/// Before the two stores shared one numbering, the SQLite store recorded steps 8 to 15 as 7 to
/// 14. Such a store is not refused for that, and which steps it has is read from the migrator's
/// record (`grdb_migrations`, which names them as it did then), not from `user_version`. Opening
/// it sets `user_version` to the list's numbering, which code from before then refuses, as it
/// refuses any newer store.
enum SQLiteSchema {
    /// The newest schema version this code creates and understands.
    static let version = ProjectionMigrations.version

    static func prepare(_ pool: DatabasePool, logger: Logger) throws {
        let recorded = try pool.read { db in try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0 }
        guard recorded <= version else {
            throw ProjectionStoreError.unsupportedSchemaVersion(found: recorded, supported: version)
        }
        let found = try pool.read { db in try appliedVersion(db) }
        do {
            try migrator.migrate(pool)
        } catch {
            // Another process opening the same new file may have migrated it between our look
            // at the applied migrations and our own migration; a second pass then finds them applied.
            logger.debug("retrying projection store migration", metadata: ["error": "\(error)"])
            try migrator.migrate(pool)
        }
        try pool.write { db in
            // A store of the older numbering may have had no step left to run, which would have set it.
            if try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0 < version {
                try db.execute(sql: "PRAGMA user_version = \(version)")
            }
            try SQLiteDeadLetters.recordCreation(foundVersion: found, now: Date(), in: db)
        }
        if found < version {
            logger.info("projection store schema migrated", metadata: ["from": "\(found)", "to": "\(version)"])
        }
    }

    /// The number of the last step applied to the store, by the migrator's record (0: none).
    static func appliedVersion(_ db: Database) throws -> Int {
        let applied = try migrator.appliedIdentifiers(db)
        return ProjectionMigrations.steps.last { $0.sqlite != nil && applied.contains($0.sqliteIdentifier) }?.number ?? 0
    }

    /// Internal so that tests can build a store of an older version (`migrate(_:upTo:)`, whose
    /// identifiers are each step's `sqliteIdentifier`).
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        for step in ProjectionMigrations.steps {
            guard let sql = step.sqlite else { continue }
            migrator.registerMigration(step.sqliteIdentifier) { db in
                try db.execute(sql: sql)
                try db.execute(sql: "PRAGMA user_version = \(step.number)")
            }
        }
        return migrator
    }
}
