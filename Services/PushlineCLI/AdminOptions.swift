import ArgumentParser
import Foundation
import Settings

/// Where the admin API is and how to authenticate to it, plus the output format; shared by
/// every `apps` and `tokens` command.
struct AdminOptions: ParsableArguments {
    static let defaultIngestURL = "http://127.0.0.1:8080"

    @Option(name: .customLong("ingest-url"),
            help: "Base URL of a running ingest (PUSHLINE_INGEST_URL, default \(Self.defaultIngestURL)).")
    var ingestURL: String?
    @Option(name: .customLong("admin-token"),
            help: "The admin bearer token (PUSHLINE_ADMIN_TOKEN; prefer the variable: arguments show in process lists).")
    var adminToken: String?
    @Flag(help: "Print JSON (for scripts) instead of text.") var json = false

    /// The client for these options; fails when no admin token is given.
    func client(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> AdminClient {
        let settings = SettingsReader(environment: environment,
                                      overrides: ["PUSHLINE_INGEST_URL": ingestURL, "PUSHLINE_ADMIN_TOKEN": adminToken])
        let url = settings.string("PUSHLINE_INGEST_URL", default: Self.defaultIngestURL)
        guard let token = settings.raw("PUSHLINE_ADMIN_TOKEN"), !token.isEmpty else {
            throw CLIError("no admin token: set PUSHLINE_ADMIN_TOKEN (or pass --admin-token)")
        }
        guard let base = URL(string: url), let scheme = base.scheme?.lowercased(), ["http", "https"].contains(scheme), base.host != nil else {
            throw CLIError("--ingest-url \(url) is not an http(s) URL")
        }
        return AdminClient(baseURL: url.hasSuffix("/") ? String(url.dropLast()) : url, adminToken: token)
    }
}

/// Validates a command-line argument that must be a UUID (an app or token id).
func parseUUID(_ text: String, _ what: String) throws -> UUID {
    guard let id = UUID(uuidString: text) else { throw ValidationError("\(what) '\(text)' is not a UUID") }
    return id
}
