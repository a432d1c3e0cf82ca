import Foundation
import XCTest

/// Every relative link of the README and of docs/ leads somewhere: to a file of the repository
/// and, when it names one, to a heading of that page, so that moving or renaming a section
/// without its links fails here.
final class DocLinksTests: XCTestCase {
    func testEveryRelativeLinkReachesAFileAndItsHeading() throws {
        let repository = DeploymentTests.repository
        let docs = try FileManager.default.contentsOfDirectory(atPath: repository.appendingPathComponent("docs").path)
            .filter { $0.hasSuffix(".md") }.map { "docs/" + $0 }
        var broken: [String] = []
        for page in ["README.md"] + docs.sorted() {
            let text = try CodeFacts.document(page)
            for link in Self.links(in: text) where !link.contains("://") {
                let parts = link.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
                let target = parts[0].isEmpty ? page : (page as NSString).deletingLastPathComponent.appending("/" + parts[0])
                let url = repository.appendingPathComponent(target).standardizedFileURL
                guard FileManager.default.fileExists(atPath: url.path) else {
                    broken.append("\(page): \(link) (no such file)")
                    continue
                }
                if parts.count == 2, url.pathExtension == "md",
                   !Self.anchors(in: try String(contentsOf: url, encoding: .utf8)).contains(parts[1]) {
                    broken.append("\(page): \(link) (no such heading)")
                }
            }
        }
        XCTAssertEqual(broken, [])
    }

    func testLinksAndAnchorsAreReadAsGitHubWritesThem() {
        XCTAssertEqual(Self.links(in: "see [a](docs/A.md#x-y) and [b](#z), not `[c](d)` nor https://e"), ["docs/A.md#x-y", "#z"])
        XCTAssertEqual(Self.anchors(in: "# Pushline\n### Admin CLI (`pushline`)\n## Walkthrough: send → pending\n```\n# not a heading\n```"),
                       ["pushline", "admin-cli-pushline", "walkthrough-send--pending"])
    }

    /// The targets of `[text](target)` outside code spans and code blocks.
    static func links(in text: String) -> [String] {
        prose(text).matches(of: #/\]\(([^)\s]+)\)/#).map { String($0.output.1) }
    }

    /// GitHub's anchors of the page's headings: lower case, punctuation dropped, spaces as `-`.
    static func anchors(in text: String) -> Set<String> {
        Set(prose(text, keepingCodeSpans: true).split(separator: "\n").compactMap { line -> String? in
            guard let heading = line.firstMatch(of: #/^#+\s+(.*)$/#) else { return nil }
            return String(heading.output.1.lowercased().compactMap { character -> Character? in
                character == " " ? "-" : (character.isLetter || character.isNumber || character == "-" || character == "_") ? character : nil
            })
        })
    }

    /// The text without its fenced code blocks (and without code spans, unless kept).
    private static func prose(_ text: String, keepingCodeSpans: Bool = false) -> String {
        var lines: [Substring] = []
        var fenced = false
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.trimmingCharacters(in: .whitespaces).hasPrefix("```") {
                fenced.toggle()
                continue
            }
            if !fenced { lines.append(line) }
        }
        let joined = lines.joined(separator: "\n")
        return keepingCodeSpans ? joined : joined.replacing(#/`[^`\n]*`/#, with: "")
    }
}
