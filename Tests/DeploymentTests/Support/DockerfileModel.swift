import Foundation

/// A Dockerfile read into its stages and their instructions: enough to check what a stage
/// is built from, what it runs, copies and installs, and as which user its image runs.
///
/// Handles comments, parser directives, `\` line continuations (comment lines inside a
/// continued instruction are dropped, as Docker does) and `${ARG}` defaults in `FROM`.
/// Heredocs and a changed escape character are not needed here and not supported.
struct DockerfileModel {
    struct Instruction: Equatable {
        /// Upper-cased keyword: `RUN`, `COPY`, …
        var keyword: String
        /// Everything after the keyword, continuation lines joined with a space.
        var arguments: String
    }

    struct Stage {
        var index: Int
        var name: String?
        /// The `FROM` image with global `ARG` defaults substituted (may be an earlier stage's name).
        var base: String
        var instructions: [Instruction] = []

        func all(_ keyword: String) -> [Instruction] { instructions.filter { $0.keyword == keyword } }
    }

    /// `ARG`s declared before the first `FROM`, with their defaults.
    var globalArguments: [String: String] = [:]
    var stages: [Stage] = []

    init(text: String) {
        var instructions: [Instruction] = []
        var pending = ""
        for rawLine in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            // Docker skips comment and empty lines, also inside a continued instruction.
            if line.hasPrefix("#") || line.isEmpty { continue }
            if line.hasSuffix("\\") {
                pending += line.dropLast().trimmingCharacters(in: .whitespaces) + " "
                continue
            }
            let logical = (pending + line).trimmingCharacters(in: .whitespaces)
            pending = ""
            guard !logical.isEmpty else { continue }
            let keyword = logical.prefix { !$0.isWhitespace }
            instructions.append(Instruction(keyword: keyword.uppercased(),
                                            arguments: logical.dropFirst(keyword.count).trimmingCharacters(in: .whitespaces)))
        }
        for instruction in instructions {
            switch instruction.keyword {
            case "FROM":
                let words = instruction.arguments.split(separator: " ").map(String.init).filter { !$0.hasPrefix("--") }
                let name = words.count >= 3 && words[1].lowercased() == "as" ? words[2] : nil
                stages.append(Stage(index: stages.count, name: name, base: substitute(words.first ?? "")))
            case "ARG" where stages.isEmpty:
                let parts = instruction.arguments.split(separator: "=", maxSplits: 1).map(String.init)
                globalArguments[parts[0]] = parts.count == 2 ? parts[1] : ""
            default:
                if !stages.isEmpty { stages[stages.count - 1].instructions.append(instruction) }
            }
        }
    }

    var finalStage: Stage? { stages.last }

    /// The stage named (or numbered) `reference`, as `COPY --from=` and `FROM` use it.
    func stage(_ reference: String) -> Stage? {
        stages.first { $0.name == reference } ?? Int(reference).flatMap { $0 < stages.count ? stages[$0] : nil }
    }

    /// The image a stage ultimately starts from, following `FROM <earlier stage>`.
    func rootImage(of stage: Stage) -> String {
        var current = stage
        while let earlier = self.stage(current.base), earlier.index < current.index { current = earlier }
        return current.base
    }

    /// Debian packages a stage installs with `apt-get install` / `apt install`.
    func installedPackages(in stage: Stage) -> Set<String> {
        var packages: Set<String> = []
        for run in stage.all("RUN") {
            // Shell command separators end one package list.
            let commands = run.arguments.replacingOccurrences(of: "&&", with: ";").split(separator: ";")
            for command in commands {
                let words = command.split(separator: " ").map(String.init)
                guard let apt = words.firstIndex(where: { $0 == "apt-get" || $0 == "apt" }),
                      let install = words[apt...].firstIndex(of: "install") else { continue }
                for word in words[(install + 1)...] where !word.hasPrefix("-") {
                    packages.insert(word.split(separator: "=").first.map(String.init) ?? word)
                }
            }
        }
        return packages
    }

    /// `COPY` or `ADD` sources and destination; `from` is the `--from=` stage, if any.
    struct Copy {
        var from: String?
        var sources: [String]
        var destination: String
    }

    func copies(in stage: Stage) -> [Copy] {
        stage.instructions.filter { $0.keyword == "COPY" || $0.keyword == "ADD" }.compactMap { instruction in
            let words = instruction.arguments.split(separator: " ").map(String.init)
            let from = words.first { $0.hasPrefix("--from=") }.map { String($0.dropFirst("--from=".count)) }
            let paths = words.filter { !$0.hasPrefix("--") }
            guard paths.count >= 2 else { return nil }
            return Copy(from: from, sources: Array(paths.dropLast()), destination: paths.last!)
        }
    }

    /// `ENV` names set in a stage (`ENV A=1 B=2` and the old `ENV A 1`).
    func environmentNames(in stage: Stage) -> [String] {
        stage.all("ENV").flatMap { instruction -> [String] in
            let words = instruction.arguments.split(separator: " ").map(String.init)
            if let first = words.first, !first.contains("=") { return [first] }
            return words.filter { $0.contains("=") }.map { String($0.prefix { $0 != "=" }) }
        }
    }

    /// The exec-form (`["a", "b"]`) or shell-form words of the last `ENTRYPOINT`/`CMD` of a stage.
    func lastCommand(_ keyword: String, in stage: Stage) -> [String]? {
        guard let instruction = stage.all(keyword).last else { return nil }
        let text = instruction.arguments
        if text.hasPrefix("[") {
            return text.dropFirst().dropLast().split(separator: ",").map {
                $0.trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
            }
        }
        return ["/bin/sh", "-c", text]
    }

    private func substitute(_ text: String) -> String {
        var interpolation = ComposeInterpolation(environment: globalArguments)
        return interpolation.resolve(text)
    }
}
