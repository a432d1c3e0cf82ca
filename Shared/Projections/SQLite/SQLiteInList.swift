import ProjectionChangelog
import Projections
/// Splits many keys into `IN (?, …)` lists of a few fixed lengths.
///
/// A batch asks for up to thousands of keys. One statement per key costs a round through
/// SQLite each; one statement per exact count would be prepared anew for every batch. Fixed
/// lengths, with the last list padded by repeating its final key (harmless inside `IN`), let
/// each statement be prepared once and then served from GRDB's statement cache.
struct SQLiteInList {
    /// `(?, ?, …)` with one placeholder per value.
    let placeholders: String
    let values: [String]

    private static let lengths = [1, 8, 64, 512]
    private static let placeholderLists = lengths.map { n in "(" + Array(repeating: "?", count: n).joined(separator: ", ") + ")" }

    /// `values` in lists of the fixed lengths; no list for no values.
    static func split(_ values: [String]) -> [SQLiteInList] {
        var lists: [SQLiteInList] = []
        var start = 0
        while start < values.count {
            let remaining = values.count - start
            let index = lengths.firstIndex { $0 >= remaining } ?? lengths.count - 1
            let length = lengths[index]
            let end = min(start + length, values.count)
            var chunk = Array(values[start..<end])
            if chunk.count < length, let last = chunk.last {
                chunk.append(contentsOf: repeatElement(last, count: length - chunk.count))
            }
            lists.append(SQLiteInList(placeholders: placeholderLists[index], values: chunk))
            start = end
        }
        return lists
    }
}
