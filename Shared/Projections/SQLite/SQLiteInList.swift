/// Splits many keys into `IN (?, …)` lists of a few fixed lengths.
///
/// A batch asks for up to thousands of keys. One statement per key costs a round through
/// SQLite each; one statement per exact count would be prepared anew for every batch. Fixed
/// lengths, with the last list padded by repeating its final key (harmless inside `IN`), let
/// each statement be prepared once and then served from GRDB's statement cache.
struct SQLiteInList {
    /// `(?, ?, …)` with one placeholder per value.
    let placeholders: String
    /// The positions of the list's values among all the values.
    let range: Range<Int>
    /// How many values the list binds: its own, then its last repeated.
    let length: Int

    /// The position of each value the list binds, in order.
    var indices: some Sequence<Int> {
        (0..<length).lazy.map { [range] in min(range.lowerBound + $0, range.upperBound - 1) }
    }

    private static let lengths = [1, 8, 64, 512]
    private static let placeholderLists = lengths.map { n in "(" + Array(repeating: "?", count: n).joined(separator: ", ") + ")" }

    /// The lists of `count` values, in order; none for no values.
    static func lists(of count: Int) -> [SQLiteInList] {
        var lists: [SQLiteInList] = []
        var start = 0
        while start < count {
            let index = lengths.firstIndex { $0 >= count - start } ?? lengths.count - 1
            let length = lengths[index]
            let end = min(start + length, count)
            lists.append(SQLiteInList(placeholders: placeholderLists[index], range: start..<end, length: length))
            start = end
        }
        return lists
    }

    /// `values` in lists; each list's values, padded.
    static func split<Value>(_ values: [Value]) -> [(placeholders: String, values: [Value])] {
        lists(of: values.count).map { list in (list.placeholders, list.indices.map { values[$0] }) }
    }
}
