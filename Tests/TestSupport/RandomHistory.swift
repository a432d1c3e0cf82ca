import Contracts
import Foundation
import OutboundRendering
import WireCodec

/// A seeded random history of commands of every kind, written to race: tokens issued and
/// revoked, app settings changed, registrations and cleanups around sends, tokens moving between
/// users, acknowledgements and engagement reports both before (refused; parked) and after the
/// sends they name, and `at`s that are not in production order (a record may be older than one
/// produced before it), and sends with an idempotency key retried, some with another body (a
/// conflict). Time too: scheduled and local-time sends (their firings are the processors' to
/// append, as live), cancels racing them, quiet hours and frequency caps of apps and users, and
/// devices changing their time zone.
/// The same seed gives the same commands, in the same production order, byte for byte (but for
/// the closing commands' times, which the producer gives).
///
/// With its apps in `parts` (docs/ARCHITECTURE.md#one-app-in-parts), each command is written to
/// every part it concerns, as a split log has it (`EncodedCommand.parts`), and the message ids
/// that acks, reports and outcomes name are of every part.
public struct RandomHistory: Sendable {
    public let seed: UInt64
    /// The random history's records, in production order.
    public let commands: [EncodedCommand]
    /// The closing commands, in order, each to be written as its records at a time the producer
    /// gives: the moment it is produced, after the one before it was acknowledged. A record
    /// counts as no earlier than a progress mark before it on its partition, and a mark is never
    /// later than the moment it was appended; so closing commands timed by the clock are applied
    /// in their order, which the history's own times (long past) do not promise.
    public let closing: [Closing]

    public struct Closing: Sendable {
        let records: @Sendable (Date) throws -> [EncodedCommand]

        /// The command's records, stamped `at`.
        public func records(at: Date) throws -> [EncodedCommand] { try records(at) }
    }

    public init(seed: UInt64, count: Int = 600, topics: Topics = Topics(prefix: "pushline."), parts: AppParts = .one) throws {
        self.seed = seed
        var random = SplitMix64(seed: seed)
        let encoder = WireJSON.encoder()
        let base = Date(timeIntervalSince1970: 1_790_000_000)

        struct App {
            var org: UUID
            var id: UUID
            var tokens: [(id: UUID, hash: String)]
            var sends: [(delivery: UUID, nid: String, managed: Bool, key: String?)]
        }
        var apps: [App] = []
        var out: [EncodedCommand] = []
        var step = 0
        func pick(_ n: Int) -> Int { Int(random.next() % UInt64(max(1, n))) }
        func add<C: Command>(_ command: C, inOrder: Bool = false) throws {
            step += 1
            // Mostly in order, some up to 60 ms older than records produced before them.
            let at = base.addingTimeInterval(Double(step * 20 - (inOrder ? 0 : pick(4) * 20)) / 1000)
            out += try EncodedCommand.parts(of: command, parts: parts, topics: topics, id: random.uuid(), at: at, encoder: encoder)
        }
        /// A message index of a device the app's sends reach: a few places of one of the parts.
        func messageIndex(part: Int? = nil) -> Int {
            let place = pick(4)
            return AppParts.messageIndex(place: place, part: part ?? (parts.count > 1 ? pick(parts.count) : 0))
        }
        func device(_ app: Int, _ n: Int) -> String {
            String(format: "%016llx", seed) + String(format: "%032x", app) + String(format: "%016x", n)
        }

        // Several apps, so that several processors have shards to apply (an app is one shard).
        for a in 0..<6 {
            let token = (id: random.uuid(), hash: ApiTokens.hash("history-\(seed)-\(a)-0"))
            let app = App(org: random.uuid(), id: random.uuid(), tokens: [token], sends: [])
            try add(AppCreated(orgId: app.org, mobileAppId: app.id, name: "history \(a)", tokenId: token.id, tokenHash: token.hash))
            apps.append(app)
        }
        // Sends are announced before they happen, so that acks and reports may come first. One in
        // three has an idempotency key, and its delivery id is the key's.
        for a in apps.indices {
            for n in 0..<12 {
                let key: String? = random.next() % 3 == 0 ? "key-\(seed)-\(n)" : nil
                let delivery = key.map { IdempotencyKeys.deliveryId(app: apps[a].id, key: $0) } ?? random.uuid()
                apps[a].sends.append((delivery, "n-\(random.next() % 1_000_000)", random.next() % 2 == 0, key))
            }
        }
        var sent = [Int](repeating: 0, count: apps.count)
        /// The keyed sends written so far, to be retried.
        var keyed: [[NotificationRequested]] = Array(repeating: [], count: apps.count)

        // Whatever the draw, the history holds a local-time send and a scheduled send (on an even
        // app, with no quiet hours, and delivery ids no cancel names) and a user's own quiet hours
        // (on an odd app; not the last of them, "", which removes them): the tests check a dump for
        // each. First, so that the scheduled send is applied before any progress mark moves its
        // app's time past it, and fires at the next.
        for (n, local) in [(0, Self.localTimes[pick(Self.localTimes.count)]), (1, nil)] {
            let app = apps[2 * pick(apps.count / 2)]
            try add(NotificationRequested(
                deliveryId: random.uuid(), mobileAppId: app.id, target: NotificationTarget(userIds: ["u\(pick(6))"]),
                content: NotificationContent(title: "t time-\(n)", body: "b"), managed: false, businessId: nil, tracking: true,
                kind: .alert, sendAt: local.map { LocalDateTime($0)!.earliestInstant } ?? base.addingTimeInterval(Double(step * 20 + 200) / 1000),
                sendAtLocal: local.map { LocalDateTime($0)!.description }))
        }
        try add(UserSettingsChanged(mobileAppId: apps[2 * pick(apps.count / 2) + 1].id, userId: "u\(pick(6))",
                                    quietHours: Self.quietHours[pick(Self.quietHours.count - 1)]))

        while out.count < count {
            let a = pick(apps.count)
            let app = apps[a]
            let user = "u\(pick(6))"
            switch pick(100) {
            case 0..<30:
                // Mostly a current token, sometimes a revoked or unknown one.
                let hash = pick(10) == 0 ? ApiTokens.hash("forged-\(random.next())") : app.tokens[pick(app.tokens.count)].hash
                // Some give properties (docs/API.md#device-properties), which audiences read.
                let properties = pick(3) == 0
                try add(DeviceRegistrationRequested(
                    registrationRequestId: random.uuid(), orgId: app.org, mobileAppId: app.id, userId: user, platform: .ios,
                    deviceToken: device(a, pick(10)), apiTokenHash: hash, trackStatus: true, callback: nil,
                    timeZone: properties ? ["Europe/Lisbon", "America/Sao_Paulo"][pick(2)] : nil,
                    locale: properties ? ["pt", "pt-BR", "es", "en-US"][pick(4)] : nil, appVersion: properties ? ["1.9", "2", "2.10"][pick(3)] : nil,
                    tags: properties ? [["vip"], ["beta"], ["vip", "beta"]][pick(3)] : nil, topics: properties && pick(2) == 0 ? ["news"] : nil))
            case 30..<34:
                // A property change of one device, or of all of a user's devices, racing the sends.
                let labels = [["vip"], ["beta"], ["news"], []]
                try add(DeviceChangeRequested(
                    mobileAppId: app.id, deviceToken: pick(2) == 0 ? device(a, pick(10)) : nil, userId: pick(3) == 0 ? nil : user,
                    locale: pick(3) == 0 ? ["pt", "es"][pick(2)] : nil,
                    timeZone: pick(3) == 0 ? ["Europe/Lisbon", "America/Sao_Paulo", "Asia/Tokyo", "Mars/Olympus"][pick(4)] : nil,
                    appVersion: pick(4) == 0 ? "3" : nil,
                    addTags: labels[pick(4)], removeTags: labels[pick(4)], subscribe: pick(2) == 0 ? ["news"] : nil,
                    unsubscribe: pick(4) == 0 ? ["news"] : nil))
            case 34..<38:
                try add(DeviceCleanupRequested(orgId: app.org, mobileAppId: app.id, userId: user,
                                               deviceToken: pick(3) == 0 ? nil : device(a, pick(10)), apiTokenHash: app.tokens[0].hash))
            case 38..<55:
                if !keyed[a].isEmpty, pick(4) == 0 {
                    // A retry of a keyed send (ingest wrote it again), or its key with another body.
                    var retry = keyed[a][pick(keyed[a].count)]
                    if pick(3) == 0 {
                        retry.target = NotificationTarget(userIds: ["u\(pick(6))"])
                        retry.requestHash = "other-body-\(pick(1_000))"
                    }
                    try add(retry)
                    continue
                }
                guard sent[a] < app.sends.count else { continue }
                let send = app.sends[sent[a]]
                sent[a] += 1
                let users = (0..<(1 + pick(3))).map { _ in "u\(pick(6))" }
                // Some go to an audience (alerts that are not managed); some are tickets and chat
                // messages: an app with a callback URL calls back per user.
                let audience = pick(3) == 0 ? Self.audiences[pick(Self.audiences.count)] : nil
                let kind = audience != nil ? .alert : [NotificationKind.alert, .alert, .ticket, .im][pick(4)]
                // Some wait for a time (a few steps on, or a wall-clock time in each device's zone),
                // hold or drop in quiet hours, or count for a cap (docs/API.md#frequency-caps).
                // (Time only on even apps, quiet hours only on odd ones: a firing's time is the
                // processors' clock, and quiet hours running then would hold a push for a time
                // that might come while the test compares the stores.)
                let time = a % 2 == 0 ? pick(6) : 0
                let local = time == 4 ? Self.localTimes[pick(Self.localTimes.count)] : nil
                let command = NotificationRequested(
                    deliveryId: send.delivery, mobileAppId: app.id,
                    target: audience.map { NotificationTarget(audience: $0) } ?? NotificationTarget(userIds: users),
                    content: NotificationContent(title: "t \(send.nid)", body: "b",
                                                 localized: pick(3) == 0 ? ["pt": LocalizedText(title: "pt"), "es": LocalizedText(body: "es")] : nil),
                    managed: send.managed && audience == nil,
                    businessId: send.managed && audience == nil ? "bid" : nil, tracking: pick(5) != 0, kind: kind,
                    ticketId: kind == .ticket ? "ticket-\(send.nid)" : nil, message: kind == .im ? "message \(send.nid)" : nil,
                    idempotencyKey: send.key, requestHash: send.key.map { "body-\($0)" },
                    sendAt: time == 3 ? base.addingTimeInterval(Double(step * 20 + pick(5) * 20) / 1000)
                        : local.map { LocalDateTime($0)!.earliestInstant },
                    sendAtLocal: local.map { LocalDateTime($0)!.description },
                    quietHours: pick(3) == 0 ? .drop : nil, capCategory: pick(2) == 0 ? "promo" : nil, capExempt: pick(8) == 0 ? true : nil)
                if send.key != nil { keyed[a].append(command) }
                try add(command)
            case 55..<67:
                // Mostly of a send written already (an ack counts only for a notification pending
                // on its device); sometimes of one not yet written, which is refused.
                let send = app.sends[sent[a] > 0 && pick(4) != 0 ? pick(sent[a]) : pick(app.sends.count)]
                try add(NotificationAcknowledged(mobileAppId: app.id, notificationId: send.nid, deviceToken: device(a, pick(10))))
            case 67..<78:
                let send = app.sends[pick(app.sends.count)]
                let series = MessageId.Series(deliveryId: send.delivery)
                let events = (0..<(1 + pick(3))).map { _ in
                    TrackingEvent(broadlogId: series.make(index: messageIndex()), action: TrackingAction.allCases[pick(3)])
                }
                try add(TrackingReported(mobileAppId: app.id, deliveryId: send.delivery, events: events))
            case 78..<82:
                // A sender's report; a dead token retires its device unless registered after `invalidSince`.
                // Mostly on a send already written (with six apps, one of all of them would rarely be).
                let send = app.sends[sent[a] > 0 && pick(4) != 0 ? pick(sent[a]) : pick(app.sends.count)]
                let outcome = DeliveryOutcome.allCases[pick(3)]
                let token = device(a, pick(10))
                try add(DeliveryResultReported(
                    mobileAppId: app.id, deviceToken: token, platform: .ios, deliveryId: pick(5) == 0 ? nil : send.delivery,
                    messageId: MessageId.make(deliveryId: send.delivery, index: messageIndex(part: parts.part(ofToken: token))), outcome: outcome,
                    reason: outcome == .delivered ? nil : "reason \(pick(3))", status: outcome == .delivered ? 200 : 410,
                    invalidSince: pick(2) == 0 ? nil : base.addingTimeInterval(Double(step * 20 - pick(40) * 20) / 1000)))
            case 82..<88:
                let token = (id: random.uuid(), hash: ApiTokens.hash("history-\(seed)-\(a)-\(app.tokens.count)"))
                apps[a].tokens.append(token)
                try add(ApiTokenIssued(mobileAppId: app.id, tokenId: token.id, tokenHash: token.hash))
            case 88..<94:
                try add(ApiTokenRevoked(mobileAppId: app.id, tokenId: app.tokens[pick(app.tokens.count)].id))
            case 94..<97:
                // A callback URL set, changed or removed ("") with the rest; time settings.
                let callback = [nil, "", "http://127.0.0.1:9/callback-\(a)-\(pick(3))"][pick(3)]
                try add(AppSettingsChanged(mobileAppId: app.id, name: "renamed \(pick(1_000))", callbackUrl: callback, webhookRetries: pick(4),
                                           timeZone: pick(2) == 0 ? ["", "America/Sao_Paulo", "Asia/Tokyo"][pick(3)] : nil,
                                           quietHours: a % 2 == 1 && pick(2) == 0 ? Self.quietHours[pick(Self.quietHours.count)] : nil,
                                           frequencyCaps: pick(2) == 0 ? ["", "*:2/3600", "promo:1/86400,*:4/86400"][pick(3)] : nil))
                // A user's own quiet hours, or a cancel of one of the app's sends (waiting, sending, or past it).
                if a % 2 == 1, pick(2) == 0 {
                    try add(UserSettingsChanged(mobileAppId: app.id, userId: user, quietHours: Self.quietHours[pick(Self.quietHours.count)]))
                } else {
                    try add(NotificationCancelled(mobileAppId: app.id, deliveryId: app.sends[pick(app.sends.count)].delivery))
                }
            case 97..<99:
                // Stand-in seals: the processor stores credentials, it never opens them.
                let sealed = SealedSecret(keyId: "k\(pick(3))", box: "box-\(pick(1_000))")
                if pick(2) == 0 {
                    try add(PushCredentialsSet(mobileAppId: app.id, apns: APNsCredentials(
                        teamId: "TEAM\(pick(10))", keyId: "KEY\(pick(10))", bundleId: "com.example.\(a)",
                        environment: pick(2) == 0 ? .production : .sandbox, fingerprint: "SHA256:\(pick(1_000))", privateKey: sealed)))
                } else {
                    try add(PushCredentialsSet(mobileAppId: app.id, fcm: FCMCredentials(
                        projectId: "project-\(a)", clientEmail: "sender@project-\(a).test", privateKeyId: nil,
                        tokenUri: "https://oauth2.test/token", fingerprint: "SHA256:\(pick(1_000))", serviceAccount: sealed)))
                }
            default:
                try add(PushCredentialsRemoved(mobileAppId: app.id, provider: pick(2) == 0 ? .apns : .fcm))
            }
        }
        // Every history ends with one of each thing the tests check a dump for, written in order
        // so that none can be decided before what it names (`closing`): on a fresh token and a
        // callback URL, a device registered to a user of its own, a keyed ticket send to that user
        // (an app callback) and its retry, and the device's outcome.
        var closing: [Closing] = []
        func close<C: Command & Sendable>(_ command: C) {
            let (id, parts, topics) = (random.uuid(), parts, topics)
            closing.append(Closing { at in
                try EncodedCommand.parts(of: command, parts: parts, topics: topics, id: id, at: at, encoder: WireJSON.encoder())
            })
        }
        let closingApp = apps[0]
        let closingToken = (id: random.uuid(), hash: ApiTokens.hash("history-\(seed)-closing"))
        let closingDevice = device(0, 10)
        close(ApiTokenIssued(mobileAppId: closingApp.id, tokenId: closingToken.id, tokenHash: closingToken.hash))
        close(AppSettingsChanged(mobileAppId: closingApp.id, callbackUrl: "http://127.0.0.1:9/callback-closing"))
        close(DeviceRegistrationRequested(
            registrationRequestId: random.uuid(), orgId: closingApp.org, mobileAppId: closingApp.id, userId: "u-closing", platform: .ios,
            deviceToken: closingDevice, apiTokenHash: closingToken.hash, trackStatus: true, callback: nil))
        let closingKey = "key-\(seed)-closing"
        let closingDelivery = IdempotencyKeys.deliveryId(app: closingApp.id, key: closingKey)
        let closingSend = NotificationRequested(
            deliveryId: closingDelivery, mobileAppId: closingApp.id, target: NotificationTarget(userIds: ["u-closing"]),
            content: NotificationContent(title: "closing", body: "b"), managed: false, businessId: nil, tracking: true,
            kind: .ticket, ticketId: "ticket-closing", idempotencyKey: closingKey, requestHash: "body-\(closingKey)")
        close(closingSend)
        close(closingSend)
        close(DeliveryResultReported(
            mobileAppId: closingApp.id, deviceToken: closingDevice, platform: .ios, deliveryId: closingDelivery,
            messageId: MessageId.make(deliveryId: closingDelivery, index: AppParts.messageIndex(place: 0, part: parts.part(ofToken: closingDevice))),
            outcome: .delivered,
            reason: nil, status: 200, invalidSince: nil))
        commands = out
        self.closing = closing
    }

    /// Local times of local-time sends around the history's time (2026-09-21T14:13Z): passed in
    /// some zones, ahead in others.
    static let localTimes = ["2026-09-21T15:00", "2026-09-21T12:00", "2026-09-21T23:30", "2026-09-22T09:00"]
    /// Quiet hours (`""` removes them), some of which run at the history's time in some zones.
    static let quietHours = ["14:00-15:00", "15:00-16:00", "11:00-12:00", "22:00-08:00", ""]

    /// The audiences of the history's audience sends, in canonical form.
    static let audiences = ["all", "tag:vip", "topic:news", "tag:vip or topic:news", "not tag:vip and locale:pt",
                            "version >= 2 and platform:ios", "timezone:Europe/Lisbon or locale:es"]
}
