import ProjectionChangelog
import Projections
import Logging
import PostgresNIO

/// The versioned schema of the PostgreSQL projection store: the PostgreSQL form of each step of
/// `ProjectionMigrations`, under the same numbers as the SQLite store's. The tables, keys and
/// indexes are the SQLite store's (same names and meaning), in PostgreSQL's own types, except
/// that a device token is keyed by its hash (`token_key`, step 7).
///
/// UUIDs are `uuid` (which orders as their lower-case text does), dates `bigint` milliseconds
/// since 1970, booleans `boolean`, bodies `bytea`, and every text column compares bytewise
/// (`COLLATE "C"`), so that key order, and with it the dump, matches SQLite's whatever the
/// database's locale. The applied version is the one row of `schema_version`; a store written by
/// newer code is refused before anything is touched. Opening runs under a transaction-level
/// advisory lock, so processes opening one new store at once migrate it once.
enum PostgresSchema {
    /// The newest schema version this code creates and understands.
    static let version = ProjectionMigrations.version

    /// Any fixed number: the lock only serialises openers of one database.
    private static let openLock: Int64 = 0x5075_7368_6c69_6e65  // "Pushline"

    static func prepare(_ connection: PostgresConnection, schema: String?, logger: Logger) async throws {
        try await connection.run("SELECT pg_advisory_xact_lock(\(openLock))", logger: logger)
        if let schema {
            try await connection.run(PostgresQuery(unsafeSQL: "CREATE SCHEMA IF NOT EXISTS \"\(schema)\""), logger: logger)
        }
        let found = try await migrate(connection, logger: logger)
        try await PostgresDeadLetters.recordCreation(foundVersion: found, on: connection, logger: logger)
        if found < version {
            logger.info("projection store schema migrated", metadata: ["from": "\(found)", "to": "\(version)"])
        }
    }

    /// Applies the steps above the stored version up to `target` (`prepare` holds the open lock
    /// meanwhile), and returns the version found. Internal so that tests can build a store of an
    /// older version.
    static func migrate(_ connection: PostgresConnection, upTo target: Int = version, logger: Logger) async throws -> Int {
        try await connection.run("""
            CREATE TABLE IF NOT EXISTS schema_version (
                singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
                version integer NOT NULL
            )
            """, logger: logger)
        let found = try await connection.rows("SELECT version FROM schema_version", logger: logger)
            .first.map { try Int($0.decode(Int32.self)) } ?? 0
        guard found <= version else {
            throw ProjectionStoreError.unsupportedSchemaVersion(found: found, supported: version)
        }
        for step in ProjectionMigrations.steps where step.number > found && step.number <= target {
            // One statement per query: the extended protocol takes no more. A step PostgreSQL
            // needs nothing of (SQLite's alone) is recorded all the same.
            for statement in step.postgres.map(statements) ?? [] {
                try await connection.run(PostgresQuery(unsafeSQL: statement), logger: logger)
            }
            try await connection.run("""
                INSERT INTO schema_version (version) VALUES (\(Int32(step.number)))
                ON CONFLICT (singleton) DO UPDATE SET version = excluded.version
                """, logger: logger)
        }
        return found
    }

    /// The statements of a step: its text split at each `;` outside a `$$`-quoted body (a
    /// function's), without the empty ones.
    static func statements(_ sql: String) -> [String] {
        var statements: [String] = [], current = "", quoted = false
        var rest = Substring(sql)
        while let first = rest.first {
            if rest.hasPrefix("$$") {
                quoted.toggle()
                current += "$$"
                rest = rest.dropFirst(2)
                continue
            }
            rest = rest.dropFirst()
            if first == ";" && !quoted {
                statements.append(current)
                current = ""
            } else {
                current.append(first)
            }
        }
        statements.append(current)
        return statements.filter { !$0.allSatisfy(\.isWhitespace) }
    }
}
