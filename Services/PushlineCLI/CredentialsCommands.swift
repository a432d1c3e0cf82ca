import ArgumentParser
import Contracts
import Foundation
import WireCodec

extension Apps {
    /// `pushline apps credentials …`: an app's APNs and FCM credentials.
    struct Credentials: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Set, show and remove an app's APNs and FCM credentials.",
            discussion: """
                Ingest checks the key, seals it with the deployment's PUSHLINE_SECRETS_KEY and \
                shows only what is not secret (ids, environment, project, a key fingerprint).
                """,
            subcommands: [SetAPNs.self, SetFCM.self, Show.self, Remove.self]
        )

        struct SetAPNs: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "set-apns",
                abstract: "Set the app's APNs signing key (token-based authentication).",
                discussion: """
                    Example:
                      pushline apps credentials set-apns $APP --team-id ABCDE12345 --key-id KEY1234567 \\
                        --bundle-id com.example.app --private-key-file AuthKey_KEY1234567.p8 --environment production
                    """
            )

            @Argument(help: "The app's mobileAppId.") var mobileAppId: String
            @Option(name: .customLong("team-id"), help: "The Apple developer team id.") var teamId: String
            @Option(name: .customLong("key-id"), help: "The APNs key's id.") var keyId: String
            @Option(name: .customLong("bundle-id"), help: "The app's bundle id (the apns-topic).") var bundleId: String
            @Option(name: .customLong("private-key-file"), help: "The .p8 file.") var privateKeyFile: String
            @Option(help: "production or sandbox.") var environment: String = "production"
            @OptionGroup var admin: AdminOptions

            func validate() throws { _ = try parseUUID(mobileAppId, "mobileAppId") }

            func run() async throws {
                let app = try parseUUID(mobileAppId, "mobileAppId")
                let key = try readText(privateKeyFile, "--private-key-file")
                let body = AdminAPI.SetAPNsCredentials(teamId: teamId, keyId: keyId, bundleId: bundleId, privateKey: key,
                                                        environment: environment)
                let client = try admin.client()
                let data = try await client.call(.PUT, "/admin/v1/apps/\(app)/credentials/apns", body: body, expected: 202,
                                                 subject: .app(app))
                let view = try client.decode(AdminAPI.APNsCredentialsView.self, from: data)
                if admin.json { return try Output.json(view) }
                print("APNs credentials set: \(Output.describe(view))")
            }
        }

        struct SetFCM: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "set-fcm",
                abstract: "Set the app's FCM service account (HTTP v1).",
                discussion: """
                    Example:
                      pushline apps credentials set-fcm $APP --service-account-file my-project-1234-abcdef.json
                    """
            )

            @Argument(help: "The app's mobileAppId.") var mobileAppId: String
            @Option(name: .customLong("service-account-file"), help: "The service account's JSON key file.") var serviceAccountFile: String
            @OptionGroup var admin: AdminOptions

            func validate() throws { _ = try parseUUID(mobileAppId, "mobileAppId") }

            func run() async throws {
                let app = try parseUUID(mobileAppId, "mobileAppId")
                let text = try readText(serviceAccountFile, "--service-account-file")
                guard let account = try? JSONValue.parse(text) else {
                    throw CLIError("--service-account-file \(serviceAccountFile) is not JSON")
                }
                let client = try admin.client()
                let data = try await client.call(.PUT, "/admin/v1/apps/\(app)/credentials/fcm",
                                                 body: AdminAPI.SetFCMCredentials(serviceAccount: account), expected: 202,
                                                 subject: .app(app))
                let view = try client.decode(AdminAPI.FCMCredentialsView.self, from: data)
                if admin.json { return try Output.json(view) }
                print("FCM credentials set: \(Output.describe(view))")
            }
        }

        struct Show: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Show what is not secret of the app's credentials for one provider.",
                discussion: "Example:\n  pushline apps credentials show $APP apns"
            )

            @OptionGroup var target: AppProvider
            @OptionGroup var admin: AdminOptions

            func run() async throws {
                let (app, provider) = try target.parsed()
                let client = try admin.client()
                let data = try await client.call(.GET, "/admin/v1/apps/\(app)/credentials/\(provider.rawValue)", expected: 200,
                                                 subject: .app(app))
                switch provider {
                case .apns:
                    let view = try client.decode(AdminAPI.APNsCredentialsView.self, from: data)
                    if admin.json { return try Output.json(view) }
                    print(Output.describe(view))
                case .fcm:
                    let view = try client.decode(AdminAPI.FCMCredentialsView.self, from: data)
                    if admin.json { return try Output.json(view) }
                    print(Output.describe(view))
                }
            }
        }

        struct Remove: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Remove the app's credentials for one provider: its pushes there are then skipped.",
                discussion: "Example:\n  pushline apps credentials remove $APP fcm"
            )

            @OptionGroup var target: AppProvider
            @OptionGroup var admin: AdminOptions

            func run() async throws {
                let (app, provider) = try target.parsed()
                _ = try await admin.client().call(.DELETE, "/admin/v1/apps/\(app)/credentials/\(provider.rawValue)", expected: 202,
                                                  subject: .app(app))
                print("\(provider.rawValue) credentials removed (accepted).")
            }
        }
    }
}

/// An app and one of its push providers, as `show` and `remove` take them.
struct AppProvider: ParsableArguments {
    @Argument(help: "The app's mobileAppId.") var mobileAppId: String
    @Argument(help: "apns or fcm.") var provider: String

    func validate() throws { _ = try parsed() }

    func parsed() throws -> (app: UUID, provider: PushProvider) {
        guard let provider = PushProvider(rawValue: provider) else { throw ValidationError("provider must be apns or fcm") }
        return (try parseUUID(mobileAppId, "mobileAppId"), provider)
    }
}

private func readText(_ path: String, _ option: String) throws -> String {
    guard let data = FileManager.default.contents(atPath: path) else { throw CLIError("\(option): cannot read \(path)") }
    return String(decoding: data, as: UTF8.self)
}
