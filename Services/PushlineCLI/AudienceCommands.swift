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
              pushline send $APP --all --title "Bom dia" --local 2026-12-01T09:00
              pushline send $APP --topic deals --body "Flash sale" --cap-category marketing --quiet-hours drop
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
    @Option(help: "A local date and time, such as 2026-12-01T09:00: each device gets it at that time in its own zone.") var local: String?
    @Option(name: .customLong("quiet-hours"), help: "hold (default) or drop a push that would arrive in quiet hours.") var quietHours: String?
    @Option(help: "high, normal or critical (critical ignores quiet hours).") var priority: String?
    @Option(name: .customLong("cap-category"), help: "The category the app's frequency caps count the push in.") var capCategory: String?
    @Flag(name: .customLong("cap-exempt"), help: "No frequency cap counts or stops the push.") var capExempt = false
    @OptionGroup var options: AppTokenOptions

    func validate() throws {
        _ = try parseUUID(app, "app id")
        if let at, RFC3339.date(from: at) == nil { throw ValidationError("--at must be an RFC 3339 time, such as 2026-12-01T09:00:00Z") }
        if let local, LocalDateTime(local) == nil { throw ValidationError("--local must be a local date and time, such as 2026-12-01T09:00") }
        if at != nil && local != nil { throw ValidationError("give --at or --local, not both") }
        if let quietHours, QuietHoursMode(rawValue: quietHours) == nil { throw ValidationError("--quiet-hours must be hold or drop") }
        if let priority, NotificationPriority(rawValue: priority.lowercased()) == nil {
            throw ValidationError("--priority must be high, normal or critical")
        }
        if let capCategory, !FrequencyCap.isCategory(capCategory) {
            throw ValidationError("--cap-category is 1 to 64 of a-z, 0-9, '-', '_' and '.'")
        }
        let given = [!users.isEmpty, !devices.isEmpty, topic != nil, all, audience != nil].filter { $0 }.count
        guard given == 1 else { throw ValidationError("give exactly one target: --user, --device, --topic, --all or --audience") }
        guard title != nil || body != nil else { throw ValidationError("give --title, --body or both") }
    }

    /// The send's body: the target as `to`, and the text.
    func request() -> NotificationAPI.SendRequest {
        let to = NotificationAPI.Target(users: users.isEmpty ? nil : users, devices: devices.isEmpty ? nil : devices, topic: topic,
                                        all: all ? true : nil, audience: audience)
        var request = NotificationAPI.SendRequest(to: to, title: title, body: body, priority: priority, sendAt: at, sendAtLocal: local,
                                                  quietHours: quietHours, capCategory: capCategory)
        request.capExempt = capExempt ? true : nil
        return request
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
            let local = accepted.sendAtLocal.map { " at \($0) in each device's zone" } ?? ""
            print(accepted.deliveryId + (accepted.sendAt.map { " scheduled for " + RFC3339.string(from: $0) } ?? "") + local)
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
            discussion: """
                  pushline scheduled list $APP [--state waiting|sending|fired|cancelled|expired] [--limit 100] [--after NEXT]

                A send is sending while some of its pushes are held for a later time (a local-time send's \
                later zones, quiet hours): its time is then its next wave's, and it shows how many are held.
                """)

        @Argument(help: "The app id.") var app: String
        @Option(help: "waiting (default), sending, fired, cancelled or expired.") var state: String = ScheduleState.waiting.rawValue
        @Option(help: "At most this many (1…1000).") var limit: Int = 100
        @Option(help: "The next of the previous page.") var after: String?
        @OptionGroup var options: AppTokenOptions

        func validate() throws {
            _ = try parseUUID(app, "app id")
            guard ScheduleState(rawValue: state) != nil else {
                throw ValidationError("--state must be waiting, sending, fired, cancelled or expired")
            }
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
                let local = send.sendAtLocal.map { "  local \($0)" } ?? ""
                let held = send.held > 0 ? "  held \(send.held)" : ""
                print("\(send.deliveryId)  \(RFC3339.string(from: send.sendAt))  \(send.schedule.rawValue)\(local)\(held)")
            }
            if let next = list.next { print("more: --after \(next)") }
        }
    }

    struct Cancel: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Cancel a scheduled send that still waits, or the pushes a sending one still holds; answered once applied.",
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

/// `pushline users settings`: a user's own settings (their quiet hours), read or set.
struct Users: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Users of an app (docs/API.md#quiet-hours).",
        subcommands: [Settings.self])

    struct Settings: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show a user's own settings, or set them (answered once applied).",
            discussion: """
                  pushline users settings $APP alice
                  pushline users settings $APP alice --quiet-hours 23:00-07:00
                  pushline users settings $APP alice --no-quiet-hours
                """)

        @Argument(help: "The app id.") var app: String
        @Argument(help: "The user id.") var user: String
        @Option(name: .customLong("quiet-hours"), help: "The user's own quiet hours, such as 23:00-07:00, replacing the app's.")
        var quietHours: String?
        @Flag(name: .customLong("no-quiet-hours"), help: "Remove the user's own quiet hours: the app's apply again.") var noQuietHours = false
        @OptionGroup var options: AppTokenOptions

        func validate() throws {
            _ = try parseUUID(app, "app id")
            if quietHours != nil && noQuietHours { throw ValidationError("--quiet-hours and --no-quiet-hours contradict each other") }
            if let quietHours, QuietHours(quietHours) == nil {
                throw ValidationError("--quiet-hours must be HH:MM-HH:MM, such as 23:00-07:00, with a start other than its end")
            }
        }

        /// The PUT body these options ask for; nil: only read.
        func change() -> NotificationAPI.UserSettings? {
            noQuietHours ? NotificationAPI.UserSettings(quietHours: "") : quietHours.map { NotificationAPI.UserSettings(quietHours: $0) }
        }

        func run() async throws {
            let client = try options.client()
            let user = user.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(CharacterSet(charactersIn: "/"))) ?? user
            let path = "/v1/apps/\(try parseUUID(app, "app id").lowercasedString)/users/\(user)/settings"
            let data = if let change = change() {
                try await client.call(.PUT, path, body: change, expected: 200, subject: .apiToken)
            } else {
                try await client.call(.GET, path, expected: 200, subject: .apiToken)
            }
            let settings = try client.decode(NotificationAPI.UserSettings.self, from: data)
            if options.json { return try Output.json(settings) }
            print("quiet hours: " + (settings.quietHours ?? "the app's"))
        }
    }
}
