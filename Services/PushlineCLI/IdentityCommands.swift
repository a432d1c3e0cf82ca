import ArgumentParser
import Contracts
import Foundation

extension Apps {
    /// `pushline apps identity …`: an app's verified user identity (docs/API.md#verified-user-identity).
    struct Identity: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Make an app's identity secret and require (or stop requiring) user assertions.",
            discussion: """
                While an app does not require user assertions, anyone holding its client token can \
                bind a device to any user id. Turn it on in three steps: `new-secret` (give the \
                secret to the app's backend, which signs each signed-in user's id with it), ship \
                an app release that presents the assertions, then `require`.
                """,
            subcommands: [NewSecret.self, Require.self, Off.self]
        )

        struct NewSecret: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "new-secret",
                abstract: "Make a new identity secret, shown once; assertions made with the previous one stop working.",
                discussion: "Example:\n  pushline apps identity new-secret $APP"
            )

            @Argument(help: "The app's mobileAppId.") var mobileAppId: String
            @OptionGroup var admin: AdminOptions

            func validate() throws { _ = try parseUUID(mobileAppId, "mobileAppId") }

            func run() async throws {
                let app = try parseUUID(mobileAppId, "mobileAppId")
                let client = try admin.client()
                let data = try await client.call(.POST, "/admin/v1/apps/\(app)/identity-secret", expected: 201, subject: .app(app))
                let answer = try client.decode(AdminAPI.IdentitySecretAnswer.self, from: data)
                if admin.json { return try Output.json(answer) }
                print("""
                    Identity secret (shown only this once): \(answer.identitySecret)
                    A user assertion is the hex HMAC-SHA256 of the user id under this secret:
                      printf %s "$USER_ID" | openssl dgst -sha256 -hmac "$SECRET" -r | cut -d' ' -f1
                    User identity: \(Output.describe(answer.userIdentity))
                    """)
            }
        }

        struct Require: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Require user assertions to bind a device to a user, clean up a user's devices or read a pending list.",
                discussion: "Example:\n  pushline apps identity require $APP"
            )

            @Argument(help: "The app's mobileAppId.") var mobileAppId: String
            @OptionGroup var admin: AdminOptions

            func validate() throws { _ = try parseUUID(mobileAppId, "mobileAppId") }

            func run() async throws { try await set(required: true, mobileAppId, admin) }
        }

        struct Off: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Stop requiring user assertions (the secret is kept).",
                discussion: "Example:\n  pushline apps identity off $APP"
            )

            @Argument(help: "The app's mobileAppId.") var mobileAppId: String
            @OptionGroup var admin: AdminOptions

            func validate() throws { _ = try parseUUID(mobileAppId, "mobileAppId") }

            func run() async throws { try await set(required: false, mobileAppId, admin) }
        }
    }
}

/// `PUT …/identity` and what it answered.
private func set(required: Bool, _ mobileAppId: String, _ admin: AdminOptions) async throws {
    let app = try parseUUID(mobileAppId, "mobileAppId")
    let client = try admin.client()
    let data = try await client.call(.PUT, "/admin/v1/apps/\(app)/identity", body: AdminAPI.SetUserIdentity(required: required),
                                     expected: 202, subject: .app(app))
    let view = try client.decode(AdminAPI.UserIdentityView.self, from: data)
    if admin.json { return try Output.json(view) }
    print("User identity: \(Output.describe(view))")
}
