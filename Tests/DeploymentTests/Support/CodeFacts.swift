import Foundation

/// What the Swift sources say about configuration and routes, per service, read from the
/// files themselves so that the deployment rules follow the code instead of a copied list.
struct CodeFacts: Equatable {
    enum Service: String, CaseIterable {
        case ingest, processor, sender

        /// The folders whose sources make up the service's binary (its own, its `…Main`, `Shared`).
        var sourceFolders: [String] {
            switch self {
            case .ingest: ["Services/Ingest", "Services/IngestMain", "Shared"]
            case .processor: ["Services/Processor", "Services/ProcessorServer", "Services/ProcessorMain", "Shared"]
            case .sender: ["Services/Sender", "Services/SenderMain", "Shared"]
            }
        }

        /// The folders where its HTTP routes are registered.
        var routeFolders: [String] {
            switch self {
            case .ingest: ["Services/Ingest", "Shared/Operations"]
            case .processor: ["Services/Processor", "Services/ProcessorServer", "Shared/Operations"]
            case .sender: ["Services/Sender", "Services/SenderMain", "Shared/Operations"]
            }
        }
    }

    /// `PUSHLINE_…` names each service's sources hold as a whole string literal (`"PUSHLINE_STORE"`):
    /// the names it reads from the environment. Names mentioned inside prose do not count.
    var variables: [Service: Set<String>]
    /// Paths each service registers with `.get("…")`, with a leading slash (`/health`).
    var getRoutes: [Service: Set<String>]

    var allVariables: Set<String> { variables.values.reduce(into: []) { $0.formUnion($1) } }

    /// Reads the sources of a checkout.
    static func scan(repository: URL) throws -> CodeFacts {
        var variables: [Service: Set<String>] = [:]
        var routes: [Service: Set<String>] = [:]
        for service in Service.allCases {
            variables[service] = try Set(swiftSources(service.sourceFolders, in: repository).flatMap { variableNames(in: $0) })
            routes[service] = try Set(swiftSources(service.routeFolders, in: repository).flatMap { getPaths(in: $0) })
        }
        return CodeFacts(variables: variables, getRoutes: routes)
    }

    static func variableNames(in source: String) -> [String] {
        source.matches(of: #/"(PUSHLINE_[A-Z0-9_]+)"/#).map { String($0.output.1) }
    }

    static func getPaths(in source: String) -> [String] {
        source.matches(of: #/\.get\(\s*"([^"]*)"/#).map { match in
            let path = String(match.output.1)
            return path.hasPrefix("/") ? path : "/" + path
        }
    }

    /// Every `PUSHLINE_…` name read anywhere in the executables' sources (`Services`, `Shared`).
    static func variablesOfEveryExecutable(repository: URL) throws -> Set<String> {
        try Set(swiftSources(["Services", "Shared"], in: repository).flatMap { variableNames(in: $0) })
    }

    /// The `PUSHLINE_…` names in the first column of the configuration table (the table whose
    /// first header is "Variable"; a row may name two, `A` / `B`).
    static func configurationTable(in document: String) -> Set<String> {
        Set(MarkdownTable.rows(in: document, firstHeader: "Variable").flatMap { row in
            (row.first ?? "").matches(of: #/`(PUSHLINE_[A-Z0-9_]+)`/#).map { String($0.output.1) }
        })
    }

    /// Every metric name (a `"pushline_…"` string literal) in the executables' sources.
    static func metricsOfEveryExecutable(repository: URL) throws -> Set<String> {
        try Set(swiftSources(["Services", "Shared"], in: repository).flatMap { source in
            source.matches(of: #/"(pushline_[a-z0-9_]+)"/#).map { String($0.output.1) }
        })
    }

    /// The metric names in the first column of the metrics table (the table whose first header
    /// is "Metric").
    static func metricsTable(in document: String) -> Set<String> {
        Set(MarkdownTable.rows(in: document, firstHeader: "Metric").compactMap { row in
            (row.first ?? "").wholeMatch(of: #/`(pushline_[a-z0-9_]+)`/#).map { String($0.output.1) }
        })
    }

    /// The text of a file of the repository (`docs/CONFIGURATION.md`).
    static func document(_ path: String, repository: URL = DeploymentTests.repository) throws -> String {
        try String(contentsOf: repository.appendingPathComponent(path), encoding: .utf8)
    }

    static func swiftSources(_ folders: [String], in repository: URL) throws -> [String] {
        var sources: [String] = []
        for folder in folders {
            let root = repository.appendingPathComponent(folder)
            guard let files = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil) else {
                throw CocoaError(.fileReadNoSuchFile, userInfo: [NSFilePathErrorKey: root.path])
            }
            for case let file as URL in files where file.pathExtension == "swift" {
                sources.append(try String(contentsOf: file, encoding: .utf8))
            }
        }
        return sources
    }
}
