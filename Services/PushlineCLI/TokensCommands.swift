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
            abstract: "Issue a new API token for an app; the token is shown only this once.",
            discussion: """
                The token authenticates once the processor has applied the command (a moment). The \
                app's other tokens stay valid; revoke them with `pushline tokens revoke`.

                Example:
                  pushline tokens issue $APP
                """
        )

        @Argument(help: "The app's mobileAppId.") var mobileAppId: String
        @OptionGroup var admin: AdminOptions

        func validate() throws { _ = try parseUUID(mobileAppId, "mobileAppId") }

        func run() async throws {
            let client = try admin.client()
            let app = try parseUUID(mobileAppId, "mobileAppId")
            let data = try await client.call(.POST, "/admin/v1/apps/\(app)/tokens", expected: 201, subject: .app(app))
            let issued = try client.decode(AdminAPI.TokenIssuedAnswer.self, from: data)
            if admin.json { return try Output.json(issued) }
            print("""
                API token issued for app \(app) (accepted; it authenticates once the processor has applied it).
                  tokenId    \(issued.tokenId)
                  API token  \(issued.apiToken)
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
