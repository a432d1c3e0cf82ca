import ArgumentParser
import Contracts
import Foundation
import Settings
import WireCodec

/// Where an app's routes are and the API token that calls them; shared by `send`, `audiences`
/// and `devices`, which act for an app as its backend does (scope `server`).
struct AppTokenOptions: ParsableArguments {
    @Option(name: .customLong("ingest-url"),
            help: "Base URL of a running ingest (PUSHLINE_INGEST_URL, default \(AdminOptions.defaultIngestURL)).")
    var ingestURL: String?
    @Option(name: .customLong("token"),
            help: "The app's server API token (PUSHLINE_API_TOKEN; prefer the variable: arguments show in process lists).")
    var token: String?
    @Flag(help: "Print JSON (for scripts) instead of text.") var json = false

    func client(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> AdminClient {
        let settings = SettingsReader(environment: environment, overrides: ["PUSHLINE_API_TOKEN": token])
        guard let token = settings.raw("PUSHLINE_API_TOKEN"), !token.isEmpty else {
            throw CLIError("no API token: set PUSHLINE_API_TOKEN to the app's server token (or pass --token)")
        }
        // The URL checks are the admin options'; the bearer is the app's token.
        let admin = try AdminOptions(ingestURL: ingestURL, adminToken: token).client(environment: environment)
        return AdminClient(baseURL: admin.baseURL, adminToken: token)
    }
}

extension AdminOptions {
    init(ingestURL: String?, adminToken: String?) {
        self.init()
        self.ingestURL = ingestURL
        self.adminToken = adminToken
    }
}

/// `pushline send`: one notification to users, devices, a topic, every device or an audience.
struct Send: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Send a notification with the app's server token (POST /v1/apps/{id}/notifications).",
        discussion: """
            Exactly one target: --user (repeatable), --device (repeatable), --topic, --all or \
            --audience (an expression: docs/API.md#audiences). Prints the delivery id.

              pushline send $APP --topic news --title "Goal!" --body "1-0"
              pushline send $APP --audience 'tag:vip and locale:pt' --body "Olá"
              pushline send $APP --all --title "Sale" --at 2026-12-01T09:00:00Z
            """)

    @Argument(help: "The app id.") var app: String
    @Option(name: .customLong("user"), help: "A user id (repeat for more).") var users: [String] = []
    @Option(name: .customLong("device"), help: "A device token (repeat for more).") var devices: [String] = []
    @Option(help: "A topic: its subscribers.") var topic: String?
    @Flag(help: "Every device of the app.") var all = false
    @Option(help: "An audience expression, such as 'tag:vip and version >= 5'.") var audience: String?
    @Option(help: "The title.") var title: String?
    @Option(help: "The body.") var body: String?
    @Option(name: .customLong("idempotency-key"), help: "A key that makes a retry the same delivery.") var idempotencyKey: String?
    @Option(help: "When to send (RFC 3339, such as 2026-12-01T09:00:00Z; at most 30 days ahead): a scheduled send.") var at: String?
    @OptionGroup var options: AppTokenOptions

    func validate() throws {
        _ = try parseUUID(app, "app id")
        if let at, RFC3339.date(from: at) == nil { throw ValidationError("--at must be an RFC 3339 time, such as 2026-12-01T09:00:00Z") }
        let given = [!users.isEmpty, !devices.isEmpty, topic != nil, all, audience != nil].filter { $0 }.count
        guard given == 1 else { throw ValidationError("give exactly one target: --user, --device, --topic, --all or --audience") }
        guard title != nil || body != nil else { throw ValidationError("give --title, --body or both") }
    }

    /// The send's body: the target as `to`, and the text.
    func request() -> NotificationAPI.SendRequest {
        let to = NotificationAPI.Target(users: users.isEmpty ? nil : users, devices: devices.isEmpty ? nil : devices, topic: topic,
                                        all: all ? true : nil, audience: audience)
        return NotificationAPI.SendRequest(to: to, title: title, body: body, sendAt: at)
    }

    func run() async throws {
        let app = try parseUUID(app, "app id")
        let client = try options.client()
        let data = try await client.call(.POST, "/v1/apps/\(app.lowercasedString)/notifications", body: request(), expected: 202,
                                         subject: .apiToken, headers: idempotencyKey.map { ["Idempotency-Key": $0] } ?? [:])
        let accepted = try client.decode(NotificationAPI.SendAccepted.self, from: data)
        if options.json {
            try Output.json(accepted)
        } else {
            print(accepted.deliveryId + (accepted.sendAt.map { " scheduled for " + RFC3339.string(from: $0) } ?? ""))
        }
    }
}

/// `pushline scheduled`: an app's scheduled sends, listed or cancelled.
struct Scheduled: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Scheduled sends of an app (docs/API.md#scheduled-sends).",
        subcommands: [List.self, Cancel.self], defaultSubcommand: List.self)

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the app's scheduled sends in one state, by time.",
            discussion: "  pushline scheduled list $APP [--state waiting|fired|cancelled|expired] [--limit 100] [--after NEXT]")

        @Argument(help: "The app id.") var app: String
        @Option(help: "waiting (default), fired, cancelled or expired.") var state: String = ScheduleState.waiting.rawValue
        @Option(help: "At most this many (1…1000).") var limit: Int = 100
        @Option(help: "The next of the previous page.") var after: String?
        @OptionGroup var options: AppTokenOptions

        func validate() throws {
            _ = try parseUUID(app, "app id")
            guard ScheduleState(rawValue: state) != nil else { throw ValidationError("--state must be waiting, fired, cancelled or expired") }
            guard (1...1000).contains(limit) else { throw ValidationError("--limit must be 1…1000") }
        }

        /// The route's path and query.
        func path() throws -> String {
            var query = "schedule=\(state)&limit=\(limit)"
            if let after { query += "&after=" + (after.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? after) }
            return "/v1/apps/\(try parseUUID(app, "app id").lowercasedString)/notifications?" + query
        }

        func run() async throws {
            let client = try options.client()
            let data = try await client.call(.GET, try path(), expected: 200, subject: .apiToken)
            let list = try client.decode(NotificationAPI.ScheduledList.self, from: data)
            if options.json { return try Output.json(list) }
            for send in list.notifications {
                print("\(send.deliveryId)  \(RFC3339.string(from: send.sendAt))  \(send.schedule.rawValue)")
            }
            if let next = list.next { print("more: --after \(next)") }
        }
    }

    struct Cancel: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Cancel a scheduled send that still waits; answered once the cancel is applied.",
            discussion: "  pushline scheduled cancel $APP $DELIVERY")

        @Argument(help: "The app id.") var app: String
        @Argument(help: "The delivery id the send was answered with.") var delivery: String
        @OptionGroup var options: AppTokenOptions

        func validate() throws {
            _ = try parseUUID(app, "app id")
            _ = try parseUUID(delivery, "delivery id")
        }

        func run() async throws {
            let app = try parseUUID(app, "app id"), delivery = try parseUUID(delivery, "delivery id")
            let client = try options.client()
            let data = try await client.call(.DELETE, "/v1/apps/\(app.lowercasedString)/notifications/\(delivery.lowercasedString)",
                                             expected: 200, subject: .apiToken)
            let cancelled = try client.decode(NotificationAPI.Cancelled.self, from: data)
            if options.json { try Output.json(cancelled) } else { print("\(cancelled.deliveryId) cancelled") }
        }
    }
}

/// `pushline audiences count`: how many devices an audience selects now.
struct Audiences: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Audiences of an app (docs/API.md#audiences).",
        subcommands: [Count.self])

    struct Count: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Count the devices an audience expression selects now, without sending.",
            discussion: "  pushline audiences count $APP 'topic:news or tag:vip'")

        @Argument(help: "The app id.") var app: String
        @Argument(help: "The audience expression.") var audience: String
        @OptionGroup var options: AppTokenOptions

        func run() async throws {
            let app = try parseUUID(app, "app id")
            let client = try options.client()
            let data = try await client.call(.POST, "/v1/apps/\(app.lowercasedString)/audiences/count",
                                             body: AudiencesAPI.CountRequest(audience: audience), expected: 200, subject: .apiToken)
            let count = try client.decode(AudiencesAPI.Count.self, from: data)
            if options.json { try Output.json(count) } else { print("\(count.devices) devices: \(count.audience)") }
        }
    }
}

/// `pushline devices change`: a device's or a user's devices' properties, tags and topics.
struct Devices: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Device properties, tags and topics of an app (docs/API.md#device-properties).",
        subcommands: [Change.self])

    struct Change: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Change one device (--device) or every device of a user (--user) as the app's backend.",
            discussion: "  pushline devices change $APP --user u-42 --add-tag vip --subscribe news --locale pt-BR")

        @Argument(help: "The app id.") var app: String
        @Option(help: "The device token.") var device: String?
        @Option(help: "The user id: every device of the user (with --device: that device, if the user's).") var user: String?
        @Option(help: "The locale (BCP 47, pt-BR).") var locale: String?
        @Option(name: .customLong("time-zone"), help: "The IANA time zone (Europe/Lisbon).") var timeZone: String?
        @Option(name: .customLong("app-version"), help: "The app version (5.2.1).") var appVersion: String?
        @Option(name: .customLong("add-tag"), help: "A tag to add (repeatable).") var addTags: [String] = []
        @Option(name: .customLong("remove-tag"), help: "A tag to remove (repeatable).") var removeTags: [String] = []
        @Option(help: "A topic to subscribe to (repeatable).") var subscribe: [String] = []
        @Option(help: "A topic to unsubscribe from (repeatable).") var unsubscribe: [String] = []
        @OptionGroup var options: AppTokenOptions

        func validate() throws {
            _ = try parseUUID(app, "app id")
            guard device != nil || user != nil else { throw ValidationError("give --device, --user or both") }
        }

        /// The change: only what the options give.
        func change() -> DevicesAPI.Change {
            let tags = addTags.isEmpty && removeTags.isEmpty ? nil
                : DevicesAPI.TagChange(add: addTags.isEmpty ? nil : addTags, remove: removeTags.isEmpty ? nil : removeTags)
            let topics = subscribe.isEmpty && unsubscribe.isEmpty ? nil
                : DevicesAPI.TopicChange(subscribe: subscribe.isEmpty ? nil : subscribe, unsubscribe: unsubscribe.isEmpty ? nil : unsubscribe)
            return DevicesAPI.Change(deviceToken: device, userId: user, locale: locale, timeZone: timeZone, appVersion: appVersion,
                                     tags: tags, topics: topics)
        }

        func run() async throws {
            let app = try parseUUID(app, "app id")
            let client = try options.client()
            let data = try await client.call(.POST, "/v1/apps/\(app.lowercasedString)/devices/changes/batch",
                                             body: DevicesAPI.ChangeBatch(changes: [change()]), expected: 202, subject: .apiToken)
            let accepted = try client.decode(DevicesAPI.Accepted.self, from: data)
            if options.json { try Output.json(accepted) } else { print("accepted: the change applies in the event order") }
        }
    }
}
