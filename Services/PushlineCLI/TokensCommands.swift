import ArgumentParser
import Contracts
import Foundation

/// `pushline tokens …`: issue and revoke an app's API tokens through the admin API.
struct Tokens: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Issue and revoke an app's API tokens (through the ingest's admin API).",
        subcommands: [Issue.self, Revoke.self]
    )

    struct Issue: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Issue a new API token for an app, with its scopes; the token is shown only this once.",
            discussion: """
                --scope is required: client (the token that ships inside the mobile app: device \
                registration, cleanups, acks, pending notifications, tracking, registration \
                statuses) or server (sends, delivery statistics and outcomes; keep it on your \
                servers). Repeat it, or give a comma list, for both. The scopes cannot be changed \
                later: issue another token instead. The app's other tokens stay valid; revoke them \
                with `pushline tokens revoke`.

                Examples:
                  pushline tokens issue $APP --scope client
                  pushline tokens issue $APP --scope server
                  pushline tokens issue $APP --scope client,server
                """
        )

        @Argument(help: "The app's mobileAppId.") var mobileAppId: String
        @Option(name: .customLong("scope"), help: ArgumentHelp("client or server (repeatable, or a comma list).", valueName: "scope"))
        var scopeArguments: [String] = []
        @OptionGroup var admin: AdminOptions

        func validate() throws {
            _ = try parseUUID(mobileAppId, "mobileAppId")
            _ = try scopes()
        }

        /// The scopes asked for, each once and sorted.
        func scopes() throws -> [ApiTokenScope] {
            let names = scopeArguments.flatMap { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } }
            guard !names.isEmpty else {
                throw ValidationError("--scope is required: client (ships in the mobile app), server (sends; stays on your servers), or both")
            }
            return ApiTokenScopes.normalized(try names.map { name in
                guard let scope = ApiTokenScope(rawValue: name) else {
                    throw ValidationError("--scope '\(name)' is not a scope: use client or server")
                }
                return scope
            })
        }

        func run() async throws {
            let client = try admin.client()
            let app = try parseUUID(mobileAppId, "mobileAppId")
            let data = try await client.call(.POST, "/admin/v1/apps/\(app)/tokens", body: AdminAPI.IssueToken(scopes: try scopes()),
                                             expected: 201, subject: .app(app))
            let issued = try client.decode(AdminAPI.TokenIssuedAnswer.self, from: data)
            if admin.json { return try Output.json(issued) }
            let scopes = issued.scopes.map(\.rawValue).joined(separator: ",")
            let use = issued.scopes.contains(.server)
                ? "It can send: keep it on your servers only."
                : "A client token: it ships inside the mobile app and cannot send."
            print("""
                API token issued for app \(app).
                  tokenId    \(issued.tokenId)
                  scopes     \(scopes)
                  API token  \(issued.apiToken)
                \(use)
                The API token is shown only this once: store it now.
                """)
        }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Revoke one of an app's API tokens.",
            discussion: """
                Accepted (HTTP 202): the token stops authenticating once the processor has applied the \
                command, plus at most the ingest's token cache time (PUSHLINE_AUTH_CACHE_MS, 1 s by \
                default). `pushline apps show` lists the tokens and whether they are revoked.

                Example:
                  pushline tokens revoke $APP $TOKEN_ID
                """
        )

        @Argument(help: "The app's mobileAppId.") var mobileAppId: String
        @Argument(help: "The tokenId to revoke (`pushline apps show` lists them).") var tokenId: String
        @OptionGroup var admin: AdminOptions

        func validate() throws {
            _ = try parseUUID(mobileAppId, "mobileAppId")
            _ = try parseUUID(tokenId, "tokenId")
        }

        func run() async throws {
            let client = try admin.client()
            let app = try parseUUID(mobileAppId, "mobileAppId")
            let token = try parseUUID(tokenId, "tokenId")
            _ = try await client.call(.DELETE, "/admin/v1/apps/\(app)/tokens/\(token)", expected: 202,
                                      subject: .token(app: app, token: token))
            if admin.json { return try Output.json(Output.Accepted(mobileAppId: app, tokenId: token)) }
            print("Revocation of token \(token) of app \(app) accepted; the token stops working once the processor has applied it.")
        }
    }
}
