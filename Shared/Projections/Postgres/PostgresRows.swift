import Contracts
import Foundation
import ProjectionChangelog
import Projections
import PostgresNIO

/// PostgreSQL's statements built from the catalog, and the device token's key.
enum PostgresRows {
    /// The SQL of the key a device token is stored under (devices, pending notifications, acks):
    /// the SHA-256 of its UTF-8 bytes, 32 bytes whatever the token's length. `text` is a column or
    /// parameter of type text.
    static func tokenKey(_ text: String) -> String { tokenKeyPrefix + text + tokenKeySuffix }
    /// The key of the token of an `unnest(...) AS k(..., device_token, ...)` row.
    static let unnestedTokenKey = tokenKey("k.device_token")
    fileprivate static let tokenKeyPrefix = "sha256(convert_to(", tokenKeySuffix = "::text, 'UTF8'))"

    /// The devices in their tokens' byte order (`COLLATE "C"`), which an index can serve: a token
    /// may be longer than a B-tree entry holds, so the index `devices_in_token_order` (schema
    /// step 25) keeps each token's first `tokenOrderPrefix` characters, and the whole token only
    /// orders the rare tokens that share them. Ordering by the prefix first keeps the byte order:
    /// a prefix that differs decides it, and an equal one leaves it to the whole token.
    static let tokenOrder = "left(device_token, \(tokenOrderPrefix)), device_token"
    static let tokenOrderPrefix = 256
    /// The condition "the row's token comes after `text`" in `tokenOrder`: the first comparison is
    /// the index's range, the second the exact one.
    static func tokenAfter(_ text: String) -> String {
        let prefix = "left(\(text), \(tokenOrderPrefix))"
        return "left(device_token, \(tokenOrderPrefix)) >= \(prefix) AND (\(tokenOrder)) > (\(prefix), \(text))"
    }

    /// Whether PostgreSQL keys `table` by its device token's `tokenKey`, a column it keeps beside
    /// the catalog's (`TableCatalog.postgresStoreColumns`).
    static func keyedByToken(_ table: CatalogTable) -> Bool {
        TableCatalog.postgresStoreColumns[table.name]?.contains("token_key") == true
    }

    /// `INSERT INTO t (columns) SELECT … FROM unnest(arguments) ON CONFLICT (key) DO …`: whole rows
    /// of `table` from array parameters (`PostgresColumnArrays`). A table keyed by a device token
    /// stores the token's `tokenKey` beside it and is keyed by that. `onConflict`: the action after
    /// `ON CONFLICT (key)`; by default every column outside the key is replaced.
    static func upsert(_ table: CatalogTable, arguments: String, onConflict: String? = nil) -> String {
        guard keyedByToken(table) else {
            return "INSERT INTO \(table.name) (\(table.columnList)) SELECT * FROM unnest(\(arguments))"
                + " ON CONFLICT (\(table.keyList)) " + (onConflict ?? "DO \(table.updateSet)")
        }
        let key = table.key.map { $0 == "device_token" ? "token_key" : $0 }
        let update = table.columns.filter { !key.contains($0.name) }.map { "\($0.name) = excluded.\($0.name)" }.joined(separator: ", ")
        return "INSERT INTO \(table.name) (\(table.columnList), token_key)"
            + " SELECT k.*, \(unnestedTokenKey) FROM unnest(\(arguments)) AS k(\(table.columnList))"
            + " ON CONFLICT (\(key.joined(separator: ", "))) " + (onConflict ?? "DO UPDATE SET \(update)")
    }
}
