import ArgumentParser
import Contracts
import Foundation
import WireCodec

/// `pushline admin-tokens …`: named admin tokens through the admin API.
struct AdminTokens: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "admin-tokens",
        abstract: "Issue, list and revoke named admin tokens (through the ingest's admin API).",
        discussion: """
            PUSHLINE_ADMIN_TOKEN stays the bootstrap token (actor `bootstrap` in the audit log). A \
            named token is an admin token of its own, recorded by name in `pushline audit`; give each \
            operator or automation one, and revoke it when it leaves.
            """,
        subcommands: [Create.self, List.self, Revoke.self]
    )

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Issue a named admin token; the token is shown only this once.",
            discussion: """
                NAME: 1 to 64 ASCII letters, digits, '.', '_', '-' or '@', starting with a letter or \
                digit; `bootstrap` is reserved. The token works on every ingest instance once the \
                command is answered.

                Example:
                  pushline admin-tokens create alice@ops
                """
        )

        @Argument(help: "The token's name, as the audit log shows its actor.") var name: String
        @OptionGroup var admin: AdminOptions

        func run() async throws {
            let client = try admin.client()
            let data = try await client.call(.POST, "/admin/v1/admin-tokens", body: AdminAPI.CreateAdminToken(name: name),
                                             expected: 201, subject: .none)
            let created = try client.decode(AdminAPI.AdminTokenCreated.self, from: data)
            if admin.json { return try Output.json(created) }
            print("""
                Admin token issued.
                  id     \(created.id)
                  name   \(created.name)
                  token  \(created.token)
                The token is shown only this once: store it now.
                """)
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the named admin tokens (never the tokens themselves), ordered by id.",
            discussion: """
                Examples:
                  pushline admin-tokens list
                  pushline admin-tokens list --json | jq -r '.adminTokens[] | select(.revoked | not) | .name'
                """
        )

        @OptionGroup var admin: AdminOptions

        func run() async throws {
            let client = try admin.client()
            var tokens: [AdminAPI.AdminTokenView] = []
            var after: UUID?
            while true {
                let path = "/admin/v1/admin-tokens?limit=1000" + (after.map { "&after=\($0.lowercasedString)" } ?? "")
                let page = try client.decode(AdminAPI.AdminTokenList.self, from: try await client.call(.GET, path, expected: 200, subject: .none))
                tokens += page.adminTokens
                guard let next = page.next else { break }
                guard next != after, !page.adminTokens.isEmpty else { throw CLIError("ingest at \(client.baseURL) repeated the page after \(next)") }
                after = next
            }
            if admin.json { return try Output.json(AdminAPI.AdminTokenList(adminTokens: tokens, next: nil)) }
            guard !tokens.isEmpty else { return print("no named admin tokens (the bootstrap token is PUSHLINE_ADMIN_TOKEN)") }
            print(Output.table(["ID", "NAME", "STATE", "CREATED", "REVOKED"], tokens.map { token in
                [token.id.lowercasedString, token.name, token.revoked ? "revoked" : "active", RFC3339.string(from: token.createdAt),
                 token.revokedAt.map(RFC3339.string(from:)) ?? "-"]
            }))
        }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Revoke a named admin token.",
            discussion: """
                Answered once every ingest instance refuses the token (the command applied, plus the \
                auth cache time PUSHLINE_AUTH_CACHE_MS). Revoking a revoked token changes nothing.

                Example:
                  pushline admin-tokens revoke $ADMIN_TOKEN_ID
                """
        )

        @Argument(help: "The admin token's id (`pushline admin-tokens list`).") var id: String
        @OptionGroup var admin: AdminOptions

        func validate() throws { _ = try parseUUID(id, "id") }

        func run() async throws {
            let client = try admin.client()
            let tokenId = try parseUUID(id, "id")
            _ = try await client.call(.DELETE, "/admin/v1/admin-tokens/\(tokenId.lowercasedString)", expected: 202, subject: .adminToken(tokenId))
            if admin.json { return try Output.json(Output.AdminTokenRevoked(id: tokenId)) }
            print("Admin token \(tokenId.lowercasedString) revoked.")
        }
    }
}

/// `pushline audit`: the admin audit log, newest first.
struct Audit: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show the audit log of admin changes, newest first.",
        discussion: """
            Every admin command — apps, API tokens, settings, push credentials, admin tokens — with \
            its time in the log, actor, request id, outcome and what changed (never a secret: \
            credentials by fingerprint, tokens by id, callback header values redacted).

            Examples:
              pushline audit --limit 20
              pushline audit --app $APP --since 2026-11-01T00:00:00Z
              pushline audit --actor bootstrap --type admin.api-token-revoked
              pushline audit --json | jq '.entries[] | {at, type, actor}'
            """
    )

    @Option(help: "Only changes of this app (mobileAppId).") var app: String?
    @Option(help: "Only changes by this admin token id, or `bootstrap`.") var actor: String?
    @Option(help: "Only commands of this type, e.g. admin.app-settings-changed.") var type: String?
    @Option(help: "Only changes at or after this RFC 3339 time.") var since: String?
    @Option(help: "Only changes before this RFC 3339 time.") var until: String?
    @Option(help: "At most this many entries (all when not given).") var limit: Int?
    @OptionGroup var admin: AdminOptions

    func validate() throws {
        if let app { _ = try parseUUID(app, "--app") }
        if let actor, actor != AdminActor.bootstrapName { _ = try parseUUID(actor, "--actor") }
        for (option, value) in [("--since", since), ("--until", until)] {
            if let value, RFC3339.date(from: value) == nil { throw ValidationError("\(option) '\(value)' is not an RFC 3339 time") }
        }
        if let limit, limit < 1 { throw ValidationError("--limit must be at least 1, not \(limit)") }
    }

    /// The query of the first page (the later pages add `after`).
    func queryItems(pageSize: Int) -> [URLQueryItem] {
        var items = [URLQueryItem(name: "limit", value: "\(pageSize)")]
        if let app { items.append(URLQueryItem(name: "app", value: app.lowercased())) }
        if let actor { items.append(URLQueryItem(name: "actor", value: actor.lowercased())) }
        if let type { items.append(URLQueryItem(name: "type", value: type)) }
        if let since { items.append(URLQueryItem(name: "since", value: since)) }
        if let until { items.append(URLQueryItem(name: "until", value: until)) }
        return items
    }

    func run() async throws {
        let client = try admin.client()
        var entries: [AdminAPI.AuditEntry] = []
        var after: String?
        while limit.map({ entries.count < $0 }) ?? true {
            let pageSize = min(1000, limit.map { $0 - entries.count } ?? 1000)
            var components = URLComponents()
            components.queryItems = queryItems(pageSize: pageSize) + (after.map { [URLQueryItem(name: "after", value: $0)] } ?? [])
            // `+` is a space in a query; RFC 3339 offsets carry one.
            let query = components.percentEncodedQuery?.replacingOccurrences(of: "+", with: "%2B") ?? ""
            let data = try await client.call(.GET, "/admin/v1/audit?\(query)", expected: 200, subject: .none)
            let page = try client.decode(AdminAPI.AuditPage.self, from: data)
            entries += page.entries
            guard let next = page.next else { break }
            guard next != after, !page.entries.isEmpty else { throw CLIError("ingest at \(client.baseURL) repeated the page after \(next)") }
            after = next
        }
        if admin.json { return try Output.json(AdminAPI.AuditPage(entries: entries, next: nil)) }
        guard !entries.isEmpty else { return print("no audit entries") }
        print(Output.table(["AT", "TYPE", "APP", "ACTOR", "OUTCOME", "REQUEST", "CHANGES"], entries.map(Output.auditRow)))
    }
}
