import Foundation

/// The tables of a Markdown document, as the docs write them: a header row, a separator row,
/// then one row per line up to the first line that is not a row. Cells are split on `|` (an
/// escaped `\|` stays inside its cell, as `|`) and trimmed.
enum MarkdownTable {
    /// The rows (header and separator left out) of the first table whose header's first cell
    /// is `firstHeader`; empty when there is none.
    static func rows(in document: String, firstHeader: String) -> [[String]] {
        let lines = document.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard let header = lines.firstIndex(where: { $0.hasPrefix("|") && cells($0).first == firstHeader }) else { return [] }
        var rows: [[String]] = []
        for line in lines[(header + 1)...] {
            guard line.hasPrefix("|") else { break }
            let row = cells(line)
            if row.allSatisfy({ !$0.isEmpty && $0.allSatisfy { "-:".contains($0) } }) { continue }
            rows.append(row)
        }
        return rows
    }

    static func cells(_ line: String) -> [String] {
        var cells: [String] = []
        var cell = ""
        var escaped = false
        for character in line.trimmingCharacters(in: .whitespaces).dropFirst() {
            if escaped {
                cell.append(character == "|" ? "|" : "\\\(character)")
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else if character == "|" {
                cells.append(cell.trimmingCharacters(in: .whitespaces))
                cell = ""
            } else {
                cell.append(character)
            }
        }
        if !cell.trimmingCharacters(in: .whitespaces).isEmpty { cells.append(cell.trimmingCharacters(in: .whitespaces)) }
        return cells
    }

    /// The text of each `code span` in `cell`, in order.
    static func codeSpans(in cell: String) -> [String] {
        cell.matches(of: #/`([^`]*)`/#).map { String($0.output.1) }
    }
}
