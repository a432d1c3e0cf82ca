import Foundation
import Ingest
import Logging
import Processor
@testable import Handlers
@testable import PushlineCLI
import Sender
import Settings

/// What each executable's configuration reads, and the default each read assumes, as the code
/// says it: recorded (`SettingsReads`) while each one reads an environment that holds only what
/// it requires, so that every read is reached. Reads happen nowhere else (the configuration
/// table test checks that the names recorded are every name the sources read).
enum ConfigurationReads {
    /// The executables as the configuration table's "Used by" column names them. `processor`
    /// includes the processor's commands that `pushline` runs too (`lag`, `dead-letters`,
    /// `rebuild`), which read the processor's configuration; `pushline` is the CLI's own reads,
    /// for the admin API.
    enum Executable: String, CaseIterable, Comparable {
        case ingest, processor, sender, pushline

        static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }
    }

    typealias Reads = [String: Set<SettingsReads.Default>]

    /// The values an executable cannot start without: an admin token and a secrets key.
    static let requiredEnvironment = [
        "PUSHLINE_ADMIN_TOKEN": "an-admin-token-of-at-least-32-characters",
        "PUSHLINE_SECRETS_KEY": Data(repeating: 7, count: 32).base64EncodedString(),
    ]

    static func recorded(repository: URL) throws -> [Executable: Reads] {
        var recorded: [Executable: Reads] = [:]
        for executable in Executable.allCases {
            let reads = SettingsReads()
            try SettingsReads.$current.withValue(reads) {
                switch executable {
                case .ingest:
                    _ = try IngestConfiguration.fromEnvironment(requiredEnvironment)
                case .processor:
                    // Each log level a command of the processor's defaults to (`ProcessorOptions.bootstrap`).
                    for level in try processorLogLevels(repository: repository) {
                        _ = try ProcessorConfiguration.fromEnvironment(requiredEnvironment, defaultLogLevel: level)
                    }
                case .sender:
                    _ = try SenderConfiguration.fromEnvironment(requiredEnvironment)
                case .pushline:
                    _ = try AdminOptions.parse([]).client(environment: requiredEnvironment)
                    _ = try AppTokenOptions.parse([]).client(environment: requiredEnvironment.merging(["PUSHLINE_API_TOKEN": "t"]) { $1 })
                }
            }
            recorded[executable] = reads.defaults
        }
        return recorded
    }

    /// The `defaultLevel: .x` the sources give `ProcessorOptions.bootstrap` (its own default
    /// included): the CLI's `lag` and `dead-letters` are quieter than the services.
    static func processorLogLevels(repository: URL) throws -> [Logger.Level] {
        let names = try Set(CodeFacts.swiftSources(["Services"], in: repository).flatMap { source in
            source.matches(of: #/defaultLevel: Logger\.Level = \.([a-z]+)|defaultLevel: \.([a-z]+)/#).compactMap {
                ($0.output.1 ?? $0.output.2).map(String.init)
            }
        })
        return names.sorted().compactMap { Logger.Level(rawValue: $0) }
    }

    /// Where the configuration table disagrees with `recorded`: for every row, each variable's
    /// default (the first code span of its part of the Default cell, parts split on ` / ` as the
    /// names are; `—` for no default, `(required)`; prose only where the code's default is
    /// empty, the code then deciding elsewhere) must be one the code reads it with, and every
    /// other default the code reads it with must be named in that part; the "Used by" cell
    /// (`all` is ingest, processor and sender) must be exactly the executables that read it.
    static func problems(table rows: [[String]], recorded: [Executable: Reads]) -> [String] {
        var problems: [String] = []
        for row in rows {
            guard row.count >= 3 else {
                problems.append("a row with fewer than three cells: \(row)")
                continue
            }
            let names = row[0].matches(of: #/`(PUSHLINE_[A-Z0-9_]+)`/#).map { String($0.output.1) }
            let parts = row[1].components(separatedBy: " / ")
            guard parts.count == names.count else {
                problems.append("\(names.joined(separator: " / ")): \(parts.count) defaults for \(names.count) variables")
                continue
            }
            let (documentedUsers, unknown) = users(row[2])
            if !unknown.isEmpty { problems.append("\(names.joined(separator: " / ")): \(unknown) in Used by is not an executable") }
            for (name, part) in zip(names, parts) {
                let readers = Set(Executable.allCases.filter { recorded[$0]?[name] != nil })
                if documentedUsers != readers {
                    problems.append("\(name): used by \(describe(documentedUsers)) in the table, \(describe(readers)) in the code")
                }
                let defaults = readers.reduce(into: Set<SettingsReads.Default>()) { $0.formUnion(recorded[$1]?[name] ?? []) }
                problems += defaultProblems(name, part: part, code: defaults)
            }
        }
        return problems
    }

    static func defaultProblems(_ name: String, part: String, code defaults: Set<SettingsReads.Default>) -> [String] {
        let text = part.trimmingCharacters(in: .whitespaces)
        let code = defaults.map(\.description).sorted().joined(separator: ", ")
        let documented: SettingsReads.Default?
        if text.hasPrefix("`") {
            documented = MarkdownTable.codeSpans(in: text).first.map { .value($0) }
        } else if text.hasPrefix("—") {
            documented = SettingsReads.Default.none
        } else if text.hasPrefix("(required)") {
            documented = .required
        } else {
            documented = nil
        }
        guard let documented else {
            // Prose ("Apple's hosts …"): the code reads it with an empty default and decides later.
            let empty: Set<SettingsReads.Default> = [.none, .value("")]
            return defaults.isSubset(of: empty) ? [] : ["\(name): the table's default is prose (\(text)), the code's \(code)"]
        }
        guard defaults.contains(documented) else { return ["\(name): default \(documented) in the table, \(code) in the code"] }
        var problems: [String] = []
        let spans = Set(MarkdownTable.codeSpans(in: text))
        for other in defaults where other != documented {
            switch other {
            case .value(let value) where !value.isEmpty && !spans.contains(value):
                problems.append("\(name): the code also reads it with the default `\(value)`, which the table does not name")
            case .required where !text.contains("(required)") && !text.contains("requires"):
                problems.append("\(name): an executable requires it, which the table does not say")
            default: break
            }
        }
        return problems
    }

    /// The executables a "Used by" cell names, and the words that name none.
    static func users(_ cell: String) -> (Set<Executable>, unknown: [String]) {
        var users: Set<Executable> = []
        var unknown: [String] = []
        for word in cell.replacingOccurrences(of: "`", with: "").split(separator: ",") {
            let name = word.trimmingCharacters(in: .whitespaces)
            if name == "all" {
                users.formUnion([.ingest, .processor, .sender])
            } else if let executable = Executable(rawValue: name) {
                users.insert(executable)
            } else {
                unknown.append(name)
            }
        }
        return (users, unknown)
    }

    static func describe(_ users: Set<Executable>) -> String {
        users == [.ingest, .processor, .sender] ? "all" : users.sorted().map(\.rawValue).joined(separator: ", ")
    }
}
