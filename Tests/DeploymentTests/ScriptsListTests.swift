import Foundation
import XCTest

/// The README names every script (in the repository layout's `scripts/` line), and neither it nor
/// a page of docs/ names a script that does not exist, so that a script added, renamed or removed
/// without the docs fails here.
final class ScriptsListTests: XCTestCase {
    func testTheReadmeNamesEveryScriptAndEveryScriptItNamesExists() throws {
        let readme = try String(contentsOf: DeploymentTests.repository.appendingPathComponent("README.md"), encoding: .utf8)
        let folder = DeploymentTests.repository.appendingPathComponent("scripts")
        let present = Set(try FileManager.default.contentsOfDirectory(atPath: folder.path))
        XCTAssertTrue(present.isSuperset(of: ["setup", "run", "test", "bench-ingest"]), "\(present.sorted())")

        XCTAssertEqual(Self.paths(inReadme: readme).subtracting(present).sorted(), [], "named in the README but not in scripts/")
        XCTAssertEqual(present.subtracting(Self.layoutList(inReadme: readme)).sorted(), [], "in scripts/ but not in the README's layout")
        let docs = DeploymentTests.repository.appendingPathComponent("docs")
        for page in try FileManager.default.contentsOfDirectory(atPath: docs.path) where page.hasSuffix(".md") {
            let text = try String(contentsOf: docs.appendingPathComponent(page), encoding: .utf8)
            XCTAssertEqual(Self.paths(inReadme: text).subtracting(present).sorted(), [], "named in docs/\(page) but not in scripts/")
        }
    }

    func testScriptsAreReadFromPathsAndFromTheLayoutLine() {
        let readme = """
            Run `scripts/run.` then scripts/bench/create-app, and scripts/one-machine.env.
            ```
            Tests/              tests
            scripts/            setup, run (with one-machine.env), stop,
                                bench-x; bench/ holds their wrk scripts
            ```
            not-a-script
            """
        XCTAssertEqual(Self.paths(inReadme: readme), ["run", "bench", "one-machine.env"])
        XCTAssertTrue(Self.layoutList(inReadme: readme).isSuperset(of: ["setup", "run", "one-machine.env", "stop", "bench-x", "bench"]))
        XCTAssertFalse(Self.layoutList(inReadme: readme).contains("not-a-script"))
    }

    /// The first path segment after every `scripts/` in the text (a sentence's final dot dropped).
    static func paths(inReadme readme: String) -> Set<String> {
        let expression = try! NSRegularExpression(pattern: #"scripts/([A-Za-z0-9._-]+)"#)
        let text = readme as NSString
        return Set(expression.matches(in: readme, range: NSRange(location: 0, length: text.length)).map { match in
            var name = text.substring(with: match.range(at: 1))
            while name.hasSuffix(".") { name.removeLast() }
            return name
        })
    }

    /// The words of the layout's `scripts/` line and the indented lines that continue it.
    static func layoutList(inReadme readme: String) -> Set<String> {
        let lines = readme.components(separatedBy: "\n")
        guard let start = lines.firstIndex(where: { $0.hasPrefix("scripts/ ") }) else { return [] }
        var words: Set<String> = []
        for (offset, line) in lines[start...].enumerated() {
            if offset > 0, !line.hasPrefix(" ") { break }
            let text = offset == 0 ? String(line.dropFirst("scripts/".count)) : line
            for word in text.split(whereSeparator: { !($0.isLetter || $0.isNumber || "-._/".contains($0)) }) {
                var name = String(word)
                while name.hasSuffix(".") || name.hasSuffix("/") { name.removeLast() }
                if !name.isEmpty { words.insert(name) }
            }
        }
        return words
    }
}
