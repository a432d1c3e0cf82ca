import Foundation

/// Where a store's changelog stands: the lineage its entries are published under and the
/// sequence number of its last commit (docs/ARCHITECTURE.md#changelog-and-restore).
public struct ChangelogPosition: Sendable, Equatable, CustomStringConvertible {
    /// Names one history of commits: a store created empty starts a lineage, and a store
    /// restored from a lineage continues it.
    public var lineage: String
    /// The sequence number of the last commit; the first commit of a lineage is 1.
    public var seq: Int64

    public init(lineage: String, seq: Int64) {
        self.lineage = lineage
        self.seq = seq
    }

    public var description: String { "\(lineage)@\(seq)" }
}

/// A committed entry waiting in the store for the changelog topic.
public struct ChangelogOutboxRow: Sendable, Equatable {
    public var seq: Int64
    public var payload: [UInt8]

    public init(seq: Int64, payload: [UInt8]) {
        self.seq = seq
        self.payload = payload
    }
}

/// A store's changelog: every commit writes its entry (`ChangelogEntry`), numbered, into the
/// store's changelog outbox in the same transaction; the processor publishes the outbox to the
/// changelog topic and then lets the store drop what was published. A restore writes a
/// lineage's entries into an empty store.
public protocol ChangelogStore: Sendable {
    /// nil: the store keeps no changelog (it held state before changelogs existed).
    func changelogPosition() async throws -> ChangelogPosition?
    /// The outbox's entries numbered above `seq`, oldest first, at most `limit`.
    func unpublishedChangelog(after seq: Int64, limit: Int) async throws -> [ChangelogOutboxRow]
    /// The entries up to `seq` are in the changelog topic: the outbox drops them.
    func changelogPublished(through seq: Int64) async throws
    /// Restore: prepares a store without offsets for a bulk load: empties its tables (a load
    /// that stopped may have left rows), sets its secondary indexes aside (their definitions
    /// kept in the store) until `finishRestore`; durability waits for the end.
    func beginRestore() async throws
    /// Restore: writes the mutations of entries that another store of `lineage` committed, one
    /// entry after the other, moves the offsets as `offsets` says (the entries' offsets taken
    /// together: checked against the stored ones as a commit's are) and the position to
    /// `lineage@seq`, `seq` being the last entry's number. Nothing goes to this store's outbox:
    /// the entries are published already.
    func restore(_ entries: [ChangelogEntry], offsets: [OffsetUpdate], lineage: String, through seq: Int64) async throws
    /// Restore: writes final rows into the empty tables `beginRestore` prepared, as plain
    /// inserts; none of the rows' keys may be stored yet. Offsets and position are `restore`'s.
    func restore(rows: RestoredRows) async throws
    /// Restore: builds the indexes `beginRestore` set aside, in this run or in one that stopped
    /// (nothing when none are), counts what entries written before a count existed did not
    /// carry (`RestoreCounts`), and makes the store durable again.
    func finishRestore() async throws
}

/// The secondary indexes of both stores (the same names in each), which a restore drops and
/// builds again at its end: building an index once over the loaded rows costs far less than
/// keeping it up to date row by row.
package enum SecondaryIndexes {
    package static let names = [
        "api_tokens_by_app", "api_tokens_by_hash", "devices_by_user", "acks_by_notification", "deliveries_by_id",
        "parked_tracking_by_app_and_time", "outbox_due", "delivery_outcomes_by_outcome",
        "admin_tokens_by_hash", "audit_log_by_time", "audit_log_by_app", "registration_status_by_app_and_time", "acks_by_app_and_time",
        "outbox_claimable", "deliveries_due", "deliveries_scheduled", "held_pushes_by_release",
    ]
    /// PostgreSQL's besides them: the devices in their tokens' order (schema step 25), which
    /// SQLite's key already is.
    package static let postgresOnly = ["devices_in_token_order"]
}

/// What a restore counts again at its end, in both stores' SQL: an entry written by a schema
/// before a count existed restores it as 0.
package enum RestoreCounts {
    /// Each app part's users with pushes counted on their own row (`AppRow.countedUsers`, schema
    /// step 32): at least those whose row the restore wrote with some. A count of 0 where there
    /// are some would let a send skip their rows, and undercount their caps; the count is of
    /// users ever counted, so a larger one stays.
    package static let countedUsers = """
        UPDATE apps SET counted_users = s.users
        FROM (SELECT app_id, part, count(*) AS users FROM user_settings WHERE capped IS NOT NULL GROUP BY app_id, part) AS s
        WHERE s.app_id = apps.app_id AND s.part = apps.part AND apps.counted_users < s.users
        """
}

/// The tables a restore writes, which `beginRestore` empties: an empty store's restore writes
/// its offsets last, so one that stopped left rows in a store that still looks empty.
package enum RestoredTables {
    package static let names = ProjectionDump.tables.map(\.table) + ["outbox_attempts", "dead_letters"]
    /// Tables that triggers keep from the restored ones (`device_names` from `devices`): emptied
    /// with them, then filled by the restore's writes.
    package static let derived = ["device_names"]
}
