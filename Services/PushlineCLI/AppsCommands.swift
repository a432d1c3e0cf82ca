import ArgumentParser
import Contracts
import Foundation

/// `pushline apps …`: create, list, show and change apps through the admin API.
struct Apps: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Create, list, show and change apps (through the ingest's admin API).",
        subcommands: [Create.self, List.self, Show.self, Change.self, Credentials.self, Identity.self, SigningSecret.self]
    )

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create an app with its two API tokens: a client token and a server token.",
            discussion: """
                Prints the app's mobileAppId, orgId and its two API tokens with their ids. The \
                client token (scope client) is the one that ships inside the mobile app: it can only \
                register devices, clean up, acknowledge and report tracking. The server token (scopes \
                client and server) sends notifications: keep it on your servers only. The tokens are \
                shown only this once: store them now. The app is usable once the processor has \
                applied the command (`pushline apps show <mobileAppId>` answers then).

                Examples:
                  pushline apps create --name "My App"
                  pushline apps create --name "My App" --org-id $ORG --json
                """
        )

        @Option(help: "The app's name.") var name: String
        @Option(name: .customLong("org-id"), help: "The org that owns it (default: a new org).") var orgId: String?
        @OptionGroup var admin: AdminOptions

        func validate() throws {
            if name.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty { throw ValidationError("--name must not be empty") }
            if let orgId { _ = try parseUUID(orgId, "--org-id") }
        }

        func run() async throws {
            let client = try admin.client()
            let body = AdminAPI.CreateApp(orgId: try orgId.map { try parseUUID($0, "--org-id") }, name: name)
            let data = try await client.call(.POST, "/admin/v1/apps", body: body, expected: 201, subject: .none)
            let created = try client.decode(AdminAPI.AppCreatedAnswer.self, from: data)
            if admin.json { return try Output.json(created) }
            print(Output.describe(created))
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show an app as the projection store has it: name, callback, webhook retries and hosts, tokens and their scopes.",
            discussion: """
                An app created or changed a moment ago may not show (or not show the change) until \
                the processor has applied the command. Each token is listed with its scopes; a token \
                marked LEGACY was issued before scopes existed, has every scope, and should be \
                replaced by a client and a server token (docs/API.md, "Replacing legacy tokens").

                Examples:
                  pushline apps show $APP
                  pushline apps show $APP --json
                """
        )

        @Argument(help: "The app's mobileAppId.") var mobileAppId: String
        @OptionGroup var admin: AdminOptions

        func validate() throws { _ = try parseUUID(mobileAppId, "mobileAppId") }

        func run() async throws {
            let client = try admin.client()
            let app = try parseUUID(mobileAppId, "mobileAppId")
            let data = try await client.call(.GET, "/admin/v1/apps/\(app)", expected: 200, subject: .app(app))
            let view = try client.decode(AdminAPI.AppView.self, from: data)
            if admin.json { return try Output.json(view) }
            print(Output.describe(view))
        }
    }

    struct Change: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set",
            abstract: "Change an app's settings (PATCH): name, callback URL and headers, webhook retries and hosts, time zone, quiet hours, caps.",
            discussion: """
                Only the settings given change. --callback-header replaces all of the app's callback \
                headers with the ones given (repeat it for several); --clear-callback-headers removes \
                them all. The change is accepted (HTTP 202) and shows in `apps show` once the processor \
                has applied it.

                Examples:
                  pushline apps set $APP --callback-url https://example.com/pushline
                  pushline apps set $APP --callback-header X-Key=abc --callback-header X-B=1
                  pushline apps set $APP --remove-callback-url --clear-callback-headers
                  pushline apps set $APP --name "Renamed" --webhook-retries 3
                  pushline apps set $APP --webhook-host hooks.example.com --webhook-host '*.example.net'
                  pushline apps set $APP --open-webhook-hosts
                  pushline apps set $APP --time-zone America/Sao_Paulo --quiet-hours 22:00-08:00
                  pushline apps set $APP --cap marketing=3/24 --cap '*=10/24'
                  pushline apps set $APP --no-quiet-hours --no-caps

                --cap CATEGORY=LIMIT/HOURS caps the pushes one user gets in HOURS, of that category \
                (a send's --cap-category) or, with *, of every push (docs/API.md#frequency-caps).

                Until an app lists --webhook-host, its status webhooks are open: whoever holds the \
                client token (it ships in the app) chooses the URL they are POSTed to.
                """
        )

        @Argument(help: "The app's mobileAppId.") var mobileAppId: String
        @Option(help: "A new name.") var name: String?
        @Option(name: .customLong("callback-url"), help: "The absolute http(s) URL app callbacks go to.") var callbackURL: String?
        @Flag(name: .customLong("remove-callback-url"), help: "Remove the callback URL.") var removeCallbackURL = false
        @Option(name: .customLong("callback-header"), help: ArgumentHelp("A header sent with every callback, as NAME=VALUE (repeatable).",
                                                                           valueName: "name=value"))
        var callbackHeaders: [String] = []
        @Flag(name: .customLong("clear-callback-headers"), help: "Remove every callback header.") var clearCallbackHeaders = false
        @Option(name: .customLong("webhook-retries"), help: "Extra webhook/callback attempts after the first (0...10).") var webhookRetries: Int?
        @Option(name: .customLong("webhook-host"), help: ArgumentHelp(
            "A host status webhooks may reach (repeatable; replaces the list): a host name, an IP address, or *.domain for its subdomains.",
            valueName: "host"))
        var webhookHosts: [String] = []
        @Flag(name: .customLong("open-webhook-hosts"), help: "Remove the host list: status webhooks may go wherever the client token says.")
        var openWebhookHosts = false
        @Option(name: .customLong("time-zone"), help: "The IANA time zone of devices that give none (such as Europe/Lisbon; UTC to reset).")
        var timeZone: String?
        @Option(name: .customLong("quiet-hours"), help: "Default quiet hours in each device's zone, such as 22:00-08:00.") var quietHours: String?
        @Flag(name: .customLong("no-quiet-hours"), help: "Remove the default quiet hours.") var noQuietHours = false
        @Option(name: .customLong("cap"), help: ArgumentHelp("A frequency cap, CATEGORY=LIMIT/HOURS or *=LIMIT/HOURS (repeatable; replaces them).",
                                                              valueName: "category=limit/hours"))
        var caps: [String] = []
        @Flag(name: .customLong("no-caps"), help: "Remove the frequency caps.") var noCaps = false
        @OptionGroup var admin: AdminOptions

        func validate() throws {
            _ = try parseUUID(mobileAppId, "mobileAppId")
            _ = try update()
        }

        /// The PATCH body these options ask for; a `ValidationError` for contradictory or empty ones.
        func update() throws -> AdminAPI.UpdateApp {
            if callbackURL != nil && removeCallbackURL {
                throw ValidationError("--callback-url and --remove-callback-url contradict each other")
            }
            if !callbackHeaders.isEmpty && clearCallbackHeaders {
                throw ValidationError("--callback-header and --clear-callback-headers contradict each other")
            }
            if callbackURL == "" { throw ValidationError("--callback-url must not be empty (use --remove-callback-url)") }
            if !webhookHosts.isEmpty && openWebhookHosts {
                throw ValidationError("--webhook-host and --open-webhook-hosts contradict each other")
            }
            if let webhookRetries, !(0...10).contains(webhookRetries) {
                throw ValidationError("--webhook-retries must be between 0 and 10, not \(webhookRetries)")
            }
            var headers: [String: String]? = clearCallbackHeaders ? [:] : nil
            if !callbackHeaders.isEmpty { headers = try HeaderArgument.parse(callbackHeaders) }
            let hosts: [String]? = openWebhookHosts ? [] : (webhookHosts.isEmpty ? nil : webhookHosts)
            if quietHours != nil && noQuietHours { throw ValidationError("--quiet-hours and --no-quiet-hours contradict each other") }
            if let quietHours, QuietHours(quietHours) == nil {
                throw ValidationError("--quiet-hours must be HH:MM-HH:MM, such as 22:00-08:00, with a start other than its end")
            }
            if !caps.isEmpty && noCaps { throw ValidationError("--cap and --no-caps contradict each other") }
            let frequencyCaps: [AdminAPI.Cap]? = noCaps ? [] : caps.isEmpty ? nil : try caps.map(Self.cap)
            let update = AdminAPI.UpdateApp(name: name, callbackUrl: removeCallbackURL ? "" : callbackURL, callbackHeaders: headers,
                                            webhookRetries: webhookRetries, webhookHosts: hosts, timeZone: timeZone,
                                            quietHours: noQuietHours ? "" : quietHours, frequencyCaps: frequencyCaps)
            if update == AdminAPI.UpdateApp() {
                throw ValidationError("nothing to change: give --name, --callback-url, --remove-callback-url, --callback-header, --clear-callback-headers, --webhook-retries, --webhook-host, --open-webhook-hosts, --time-zone, --quiet-hours, --no-quiet-hours, --cap or --no-caps")
            }
            return update
        }

        /// `marketing=3/24` or `*=10/24`.
        static func cap(_ text: String) throws -> AdminAPI.Cap {
            let parts = text.split(separator: "=", maxSplits: 1).map(String.init)
            let numbers = parts.count == 2 ? parts[1].split(separator: "/").map(String.init) : []
            guard parts.count == 2, numbers.count == 2, let limit = Int(numbers[0]), let hours = Int(numbers[1]),
                  FrequencyCap(category: parts[0] == "*" ? nil : parts[0], limit: limit, window: hours * 3600) != nil,
                  hours <= FrequencyCap.maxWindow / 3600 else {
                throw ValidationError("--cap must be CATEGORY=LIMIT/HOURS or *=LIMIT/HOURS (limit 1…1000, hours 1…720), not \(text)")
            }
            return AdminAPI.Cap(category: parts[0] == "*" ? nil : parts[0], limit: limit, windowHours: hours)
        }

        func run() async throws {
            let client = try admin.client()
            let app = try parseUUID(mobileAppId, "mobileAppId")
            _ = try await client.call(.PATCH, "/admin/v1/apps/\(app)", body: try update(), expected: 202, subject: .app(app))
            if admin.json { return try Output.json(Output.Accepted(mobileAppId: app, tokenId: nil)) }
            print("Settings change of app \(app) accepted; `pushline apps show \(app)` shows it once the processor has applied it.")
        }
    }
}

extension Apps {
    struct SigningSecret: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "signing-secret",
            abstract: "Print the secret that checks the x-pushline-signature of an app's webhooks and callbacks.",
            discussion: """
                Give it to the app's webhook and callback receivers: each request carries \
                `x-pushline-signature: t=<unix seconds>,v1=<hex>`, the HMAC-SHA256 of "<t>." and the \
                body under this secret (docs/API.md, "Webhook signatures"). During a rotation of \
                PUSHLINE_SECRETS_KEY the secrets of the previous keys are listed too (--json).

                Examples:
                  pushline apps signing-secret $APP
                  pushline apps signing-secret $APP --json
                """
        )

        @Argument(help: "The app's mobileAppId.") var mobileAppId: String
        @OptionGroup var admin: AdminOptions

        func validate() throws { _ = try parseUUID(mobileAppId, "mobileAppId") }

        func run() async throws {
            let client = try admin.client()
            let app = try parseUUID(mobileAppId, "mobileAppId")
            let data = try await client.call(.GET, "/admin/v1/apps/\(app)/webhook-signing-secret", expected: 200, subject: .app(app))
            let view = try client.decode(AdminAPI.WebhookSigningSecretView.self, from: data)
            if admin.json { return try Output.json(view) }
            print(view.secret)
        }
    }
}

/// `NAME=VALUE` arguments (`--callback-header`) → a header map.
enum HeaderArgument {
    static func parse(_ arguments: [String]) throws -> [String: String] {
        var headers: [String: String] = [:]
        for argument in arguments {
            guard let equals = argument.firstIndex(of: "=") else {
                throw ValidationError("--callback-header '\(argument)' is not NAME=VALUE")
            }
            let name = String(argument[..<equals]).trimmingCharacters(in: .whitespaces)
            let value = String(argument[argument.index(after: equals)...])
            guard !name.isEmpty, name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "!#$%&'*+-.^_`|~".contains($0)) }) else {
                throw ValidationError("--callback-header '\(argument)': '\(name)' is not a header name")
            }
            guard headers.keys.allSatisfy({ $0.lowercased() != name.lowercased() }) else {
                throw ValidationError("--callback-header \(name) is given twice")
            }
            headers[name] = value
        }
        return headers
    }
}
