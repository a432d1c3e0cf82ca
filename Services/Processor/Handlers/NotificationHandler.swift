import Contracts
import Foundation
import OutboundRendering
import Projections
import WireCodec

/// Applies a send (docs/API.md#sending-notifications): resolves the target to the app's devices as
/// they are now, writes one outbound record per device, makes a managed notification pending on
/// each device, and enqueues the app callbacks of `ticket` and `im` sends
/// (docs/API.md#app-callbacks).
///
/// Everything derives from the command and the loaded rows — message ids from the delivery id,
/// the device's position and the key the command names, the timestamp from the command's time —
/// so applying the same command to the same state again writes byte-identical records.
package struct NotificationHandler: CommandHandler {
    /// How long an idempotency key names its first send, in command times
    /// (`PUSHLINE_IDEMPOTENCY_WINDOW_HOURS`).
    package let idempotencyWindow: Duration
    /// The keys of keyed message ids (`NotificationRequested.messageKeyId`).
    package let messageIdKeys: MessageIdKeys

    package init(idempotencyWindow: Duration = DecisionRules.default.idempotencyWindow, messageIdKeys: MessageIdKeys = .none) {
        self.idempotencyWindow = idempotencyWindow
        self.messageIdKeys = messageIdKeys
    }

    package func addNeeds(of c: NotificationRequested, to query: inout StateQuery) {
        query.appIds.insert(c.mobileAppId)
        query.deliveryIds.insert(c.deliveryId)
        if c.target.audience != nil { query.allDevicesOf.insert(c.mobileAppId) }
        for user in c.target.userIds { query.userKeys.insert(UserKey(appId: c.mobileAppId, userId: user)) }
        for token in c.target.deviceTokens { query.deviceKeys.insert(DeviceKey(appId: c.mobileAppId, deviceToken: token)) }
        query.trackedDeliveries.insert(c.deliveryId)
        // Users' settings (their quiet hours, their pushes the caps count), of apps that need them.
        query.userSettingsOfDevices.insert(c.mobileAppId)
        query.parkedDeliveries.insert(c.deliveryId)
        if c.managed {
            // Badges: a managed send stamps each device's pending count.
            for user in c.target.userIds { query.pendingCountUsers.insert(UserKey(appId: c.mobileAppId, userId: user)) }
            for token in c.target.deviceTokens { query.pendingCountDevices.insert(DeviceKey(appId: c.mobileAppId, deviceToken: token)) }
        }
    }

    package func addNeeds(of c: NotificationRequested, part: Int, to query: inout StateQuery) {
        guard c.firing == true, let wave = c.wave else { return addNeeds(of: c, to: &query) }
        // A wave needs its held pushes and (in the second round of the read) their devices and
        // users' settings as they are now: not its target's devices, which may be all of the app's.
        query.appIds.insert(c.mobileAppId)
        query.deliveryIds.insert(c.deliveryId)
        query.userSettingsOfDevices.insert(c.mobileAppId)
        query.heldWaves.insert(HeldWave(delivery: DeliveryKey(appId: c.mobileAppId, deliveryId: c.deliveryId, part: part), releaseAt: wave))
    }

    package init(rules: DecisionRules) {
        self.init(idempotencyWindow: rules.idempotencyWindow, messageIdKeys: rules.messageIdKeys)
    }

    package func apply(_ c: NotificationRequested, _ context: CommandContext, to state: inout BatchState) -> HandlerResult {
        var send: Send
        switch start(c, context, state: &state) {
        case .decided(let result): return result
        case .sending(let started): send = started
        }
        let part = context.part
        if let wave = send.wave {
            return release(wave, of: &send, state: &state)
        }
        let devices: [DeviceRow]
        if let audience = send.audience {
            devices = Self.resolve(audience, app: c.mobileAppId, part: part, in: state)
        } else {
            devices = Self.resolve(c.target, app: c.mobileAppId, part: part, in: state)
        }
        state.reserveOutbound(devices.count)
        var reached: [DeviceRow] = []
        reached.reserveCapacity(devices.count)
        for device in devices {
            let settings = send.readsUsers ? state.settings(of: device.user, part: part) : nil
            let timing = send.timing(of: device, quietHours: settings?.quietHours)
            guard timing.reaches else { continue }
            let (admitted, counted) = send.admit(device, settings: settings)
            if let counted { state.record(counted) }
            guard admitted else { continue }
            let badge = c.managed ? Self.makePending(c, device: device, at: context.at, state: &state) : nil
            if let held = send.hold(device, timing, badge: badge) {
                state.hold(held)
            } else {
                state.emit(send.message(to: device, badge: badge, only: devices.count == 1))
            }
            reached.append(device)
        }
        return finish(send, devices: reached, state: &state)
    }

    /// A wave: the held pushes of its time go to their devices as they are now (one gone, or
    /// moved to another user, gets nothing), unless their time to live ran out since they were
    /// due (expired). A push held for its local time meets quiet hours then (held again, or
    /// dropped); one held by quiet hours goes when those end, whatever runs at its release.
    private func release(_ wave: Date, of send: inout Send, state: inout BatchState) -> HandlerResult {
        let delivery = DeliveryKey(appId: send.command.mobileAppId, deliveryId: send.command.deliveryId, part: send.part)
        for row in state.heldPushes(of: delivery, releasedAt: wave) {
            state.unhold(row.key)
            send.released += 1
            guard let device = state.devices[DeviceKey(appId: row.appId, deviceToken: row.deviceToken)], device.userId == row.userId else {
                send.gone += 1
                continue
            }
            let settings = send.readsUsers ? state.settings(of: device.user, part: send.part) : nil
            let timing = send.timing(of: device, quietHours: settings?.quietHours, due: row.dueAt, quiet: row.releaseAt == row.dueAt)
            guard timing.reaches else { continue }
            if let held = send.hold(device, timing, badge: row.badge, due: row.dueAt) {
                state.hold(held)
            } else {
                state.emit(send.message(to: device, badge: row.badge, due: row.dueAt))
            }
        }
        return finish(send, devices: [], state: &state)
    }

    /// How a send starts: decided already (an unknown app, a repeat, a key this processor lacks,
    /// an audience it cannot read), or sending, its devices to come.
    package enum Start {
        case decided(HandlerResult)
        case sending(Send)
    }

    /// Everything a send decides before its devices: whether it is sent at all, and what each
    /// device's record is made from.
    package func start(_ c: NotificationRequested, _ context: CommandContext, state: inout BatchState) -> Start {
        guard let app = state.app(c.mobileAppId, part: context.part) else { return .decided(.rejected("unknown-app")) }
        // A send without a key has a new random delivery id; with a key, the id is the key's, so
        // a known id is a retry or a reuse of the key: it is counted, never sent again. The one
        // send of a known id that goes is a waiting send's firing.
        let known = state.delivery(c.deliveryId, app: c.mobileAppId, part: context.part)
        var waiting: DeliveryRow?
        var wave: Date?
        if c.firing == true, let time = c.wave {
            // A wave of held pushes: once, while the send still holds pushes for that time.
            guard let known, known.schedule == .sending, known.waves.contains(time) else { return .decided(.rejected("not-waiting")) }
            waiting = known
            wave = time
        } else if c.firing == true {
            guard let known, known.schedule == .waiting else { return .decided(.rejected("not-waiting")) }
            // Fired after its time to live: never sent late. (A local-time send's pushes expire
            // each from its device's own time: `Send.timing`.)
            if c.sendAtLocal == nil, let ttl = c.content.timeToLive, let sendAt = known.sendAt,
               context.at > sendAt.addingTimeInterval(TimeInterval(ttl)) {
                var expired = known
                expired.schedule = .expired
                expired.scheduledCommand = nil
                state.record(expired)
                return .decided(.applied)
            }
            waiting = known
        } else if let known {
            return .decided(repeated(c, of: known, at: context.at, state: &state))
        } else if c.isScheduled(at: context.at) {
            state.record(Self.waiting(c, at: context.at, part: context.part))
            return .decided(.applied)
        }
        // A send whose key this processor lacks is never made with other ids: the processor stops
        // before it (`MessageKeyMissing`); refused here only if applied without that check.
        var key: MessageIdKey?
        if let keyId = c.messageKeyId {
            guard let held = messageIdKeys.key(keyId) else { return .decided(.rejected("unknown-message-key")) }
            key = held
        }
        // Ingest wrote it parsed and canonical; another writer's unreadable one sends nothing.
        var audience: AudienceExpression?
        if let text = c.target.audience {
            guard let parsed = try? AudienceExpression.parse(text) else { return .decided(.rejected("invalid-audience")) }
            audience = parsed
        }
        return .sending(Send(command: c, app: app, part: context.part, at: context.at, series: MessageId.Series(deliveryId: c.deliveryId, key: key),
                             audience: audience, waiting: waiting, wave: wave, counted: state.countedSends(of: app)))
    }

    /// The delivery of a send kept until its time: nothing sent yet, its command kept for its
    /// firing.
    static func waiting(_ c: NotificationRequested, at: Date, part: Int) -> DeliveryRow {
        DeliveryRow(appId: c.mobileAppId, deliveryId: c.deliveryId, kind: c.kind, managed: c.managed, tracking: c.tracking,
                           sent: 0, createdAt: at, idempotencyKey: c.idempotencyKey,
                           requestHash: c.idempotencyKey == nil ? nil : c.requestHash, part: part, sendAt: c.sendAt,
                           schedule: .waiting, scheduledCommand: kept(c), sendAtLocal: c.sendAtLocal)
    }

    /// A send under way: each device's record, in the order the devices come, and the counts.
    package struct Send: Sendable {
        package let command: NotificationRequested
        let app: AppRow
        package let part: Int
        let at: Date
        /// One MAC per delivery: every template shares its series.
        let series: MessageId.Series
        /// The target's audience, parsed; nil for a send to users or tokens.
        package let audience: AudienceExpression?
        /// The delivery of a scheduled send as it waited, for its firing; nil for a send made at once.
        let waiting: DeliveryRow?
        /// The time of the held pushes this firing releases; nil for a send's own.
        package let wave: Date?
        /// The place of the first device this application sends to: 0, or for a wave the count
        /// sent before it.
        package private(set) var firstPlace = 0
        /// Held pushes released by this wave, and of those the ones whose device is gone.
        var released = 0, gone = 0
        /// Pushes held by this application, by the time they go out; dropped in quiet hours; past
        /// their time to live.
        private(set) var holds: [Date: Int] = [:]
        private(set) var dropped = 0, expired = 0
        /// Pushes over a frequency cap.
        private(set) var capped = 0
        /// A local-time send's wall-clock time, and quiet hours (the app's) unless it is critical.
        private let localTime: LocalDateTime?
        private let quietHours: QuietHours?
        /// Whether users' quiet hours apply (the send is not critical).
        private let quiet: Bool
        /// The app's caps that count this send (none when it is exempt), and all of them.
        private let caps: [FrequencyCap], allCaps: [FrequencyCap]
        /// Whether each device's user's settings are needed: caps count the send, or some users
        /// of the part have quiet hours of their own.
        package let readsUsers: Bool
        /// What the caps decided for each user of the send: a user's devices all get it or none.
        private var admitted: [String: Bool] = [:]
        /// The app part's sends to an audience its caps counted, each with the users it reached.
        private let counted: [CountedSend]
        /// A send to an audience that caps count is counted once (`CountedSend`), not on each
        /// user's row: the digests of the users it reached, so far.
        private(set) var reached: [UInt64] = []
        /// The users whose own row this send counted it on first.
        private(set) var newlyCounted = 0
        /// The send as a user's counted pushes name it, and its time in milliseconds.
        private let capName: String, capAt: Int64
        /// Each user's own quiet hours, read once, and when those running at the send's time
        /// end in each zone.
        private var userQuiet: [String: QuietHours?] = [:]
        private var userQuietEnds: [QuietEndKey: Date?] = [:]
        /// What is known of each time zone name the devices give (nil: none given) at this send.
        private var zoneFacts: [String?: ZoneFacts] = [:]
        private var zones = TimeZones()
        private let appZone: TimeZone
        /// One template per platform (and per badge, for a managed send, and per text, for a
        /// localized one): each device's record is the template with its token and message id,
        /// rendered when published.
        private var templates: [TemplateKey: OutboundTemplate] = [:]
        /// The devices sent to so far; the next one's place.
        package private(set) var sent = 0
        /// A localized send's devices each get the text of their locale's best match
        /// (docs/API.md#localized-content), counted per locale.
        private(set) var sentByLocale: [String: Int]?

        init(command: NotificationRequested, app: AppRow, part: Int, at: Date, series: MessageId.Series, audience: AudienceExpression?,
             waiting: DeliveryRow? = nil, wave: Date? = nil, counted: [CountedSend] = []) {
            self.counted = counted
            self.waiting = waiting
            self.wave = wave
            // A wave numbers its pushes on from those sent before it.
            if wave != nil, let waiting { sent = waiting.sent }
            firstPlace = sent
            localTime = command.sendAtLocal.flatMap(LocalDateTime.init)
            quiet = command.content.priority != .critical
            quietHours = quiet ? app.quietHours.flatMap(QuietHours.init) : nil
            allCaps = app.frequencyCaps.flatMap(FrequencyCap.list) ?? []
            caps = command.capExempt == true ? [] : allCaps.filter { $0.counts(command.capCategory) }
            // A user's row matters only with quiet hours or pushes counted on it.
            readsUsers = (!caps.isEmpty && app.countedUsers > 0) || (quiet && app.quietUsers > 0)
            capName = Self.capName(command.deliveryId)
            capAt = RFC3339.milliseconds(at)
            appZone = app.timeZone.flatMap { TimeZone(identifier: $0) } ?? TimeZone(secondsFromGMT: 0)!
            self.command = command
            self.app = app
            self.part = part
            self.at = at
            self.series = series
            self.audience = audience
            self.sentByLocale = command.content.localized == nil ? nil : [:]
        }

        /// When a device's push goes: now, held until `release`, or not at all (dropped in quiet
        /// hours, or past its time to live).
        package enum Timing {
            case now
            case hold(release: Date, due: Date)
            case drop, expire

            /// Whether the device gets the push, now or later.
            package var reaches: Bool {
                switch self {
                case .now, .hold: true
                case .drop, .expire: false
                }
            }
        }

        /// What is known of one time zone at the send's time.
        private struct ZoneFacts {
            let zone: TimeZone
            /// The local-time send's instant there.
            var localInstant: Date?
            /// When the quiet hours running at the send's time end there; nil: none run.
            var quietEnd: Date?
        }

        private mutating func facts(_ name: String?) -> ZoneFacts {
            if let known = zoneFacts[name] { return known }
            let zone = name.flatMap { zones.zone($0) } ?? appZone
            let facts = ZoneFacts(zone: zone, localInstant: localTime?.instant(in: zone), quietEnd: quietHours?.end(of: at, in: zone))
            zoneFacts[name] = facts
            return facts
        }

        /// When `device`'s push goes (docs/API.md#local-time-sends, #quiet-hours): a local-time
        /// send's at the device's own time, or at once if that passed; in quiet hours held to
        /// their end or dropped, unless the send is critical or `checked` is false (a push that
        /// quiet hours held already); never past its time to live, counted from `due` (a held
        /// push's) or its own time. Counts what it drops.
        package mutating func timing(of device: DeviceRow, quietHours own: String? = nil, due given: Date? = nil,
                                     quiet checked: Bool = true) -> Timing {
            let facts = facts(device.timeZone)
            var due = given ?? at
            if given == nil, let instant = facts.localInstant {
                if instant > at { return .hold(release: instant, due: instant) }
                due = instant
            }
            if let ttl = command.content.timeToLive, at > due.addingTimeInterval(TimeInterval(ttl)) {
                expired += 1
                return .expire
            }
            if checked, let end = quietEnd(facts, zoneName: device.timeZone, own: own) {
                if command.quietHours == .drop {
                    dropped += 1
                    return .drop
                }
                return .hold(release: end, due: due)
            }
            return .now
        }

        private struct QuietEndKey: Hashable {
            var zone: String?
            var quiet: String
        }

        /// When the quiet hours running at the send's time end for a device: the user's own
        /// (`own`) if they have them, else the app's; nil when none run (or the send is critical).
        private mutating func quietEnd(_ facts: ZoneFacts, zoneName: String?, own: String?) -> Date? {
            guard quiet, let own else { return facts.quietEnd }
            if userQuiet[own] == nil { userQuiet[own] = QuietHours(own) }
            guard let rule = userQuiet[own]!  else { return facts.quietEnd }
            let key = QuietEndKey(zone: zoneName, quiet: own)
            if let known = userQuietEnds[key] { return known }
            let end = rule.end(of: at, in: facts.zone)
            userQuietEnds[key] = end
            return end
        }

        /// Whether the app's frequency caps let `device`'s user get this push
        /// (docs/API.md#frequency-caps), decided once per user and counted for them: a send to an
        /// audience in `reached`, another on the user's row (the settings with the push counted,
        /// to record, the first time). A send applied again finds itself counted and decides as
        /// it did. Counts the devices it stops.
        package mutating func admit(_ device: DeviceRow, settings: UserSettingsRow?) -> (admitted: Bool, counted: UserSettingsRow?) {
            guard !caps.isEmpty else { return (true, nil) }
            if let known = admitted[device.userId] {
                if !known { capped += 1 }
                return (known, nil)
            }
            var pushes = CappedPushes(settings?.capped)
            var row: UserSettingsRow?
            let allowed: Bool
            // Only a send to an audience, or a user some counted send may have reached, needs the digest.
            let digest = audience == nil && counted.isEmpty ? 0 : UserDigest.of(device.userId)
            if pushes.counted(capName) {
                allowed = true
            } else if pushes.allows(command.capCategory, at: capAt, caps: caps, user: digest, sends: counted) {
                if audience != nil {
                    reached.append(digest)
                } else {
                    if settings?.capped == nil { newlyCounted += 1 }
                    pushes.add(command.capCategory, delivery: capName, at: capAt, caps: allCaps)
                    var own = settings ?? UserSettingsRow(appId: command.mobileAppId, userId: device.userId, part: part)
                    own.capped = pushes.text
                    row = own
                }
                allowed = true
            } else {
                allowed = false
            }
            admitted[device.userId] = allowed
            if !allowed { capped += 1 }
            return (allowed, row)
        }

        /// The name caps count a send by: the first 16 hex digits of its delivery id (made for
        /// every send, so without Foundation's string search).
        static func capName(_ deliveryId: UUID) -> String {
            var hex: [UInt8] = []
            hex.reserveCapacity(16)
            withUnsafeBytes(of: deliveryId.uuid) { UUIDHex.append(hex: $0.prefix(8), to: &hex) }
            return String(decoding: hex, as: UTF8.self)
        }

        /// Counts a send to an audience once for the app part, with the users it reached, and
        /// forgets the counted sends no cap looks back to any more; counts the users this send
        /// counted on their own rows first.
        func count(in state: inout BatchState) {
            guard newlyCounted > 0 || !reached.isEmpty, var app = state.app(command.mobileAppId, part: part) else { return }
            app.countedUsers += newlyCounted
            if !reached.isEmpty {
                var sends = CappedPushes(app.countedSends)
                let before = sends.entries
                sends.add(command.capCategory, delivery: capName, at: capAt, caps: allCaps)
                for entry in before where !sends.entries.contains(entry) {
                    state.forget(CountedSendKey(appId: app.appId, part: part, delivery: entry.delivery))
                }
                app.countedSends = sends.text
                state.record(CountedSendRow(appId: app.appId, part: part, delivery: capName, users: reached.sorted()))
            }
            state.upsert(app)
        }

        /// The held push of `device` when `timing` holds it, counted; nil when it goes now.
        package mutating func hold(_ device: DeviceRow, _ timing: Timing, badge: Int?, due: Date? = nil) -> HeldPushRow? {
            guard case .hold(let release, let due) = timing else { return nil }
            holds[release, default: 0] += 1
            return HeldPushRow(appId: command.mobileAppId, deliveryId: command.deliveryId, part: part, deviceToken: device.deviceToken,
                               userId: device.userId, releaseAt: release, dueAt: due, badge: badge)
        }

        /// Pushes held by this application.
        package var held: Int { holds.values.reduce(0, +) }

        /// The record of the next device. In an app in parts, each part names its devices by
        /// message indexes of its own (`AppParts.messageIndex`). `due`: a held push's time, which
        /// its time to live counts from. `only`: the send's one device, whose record is rendered
        /// as it is (a template, made for the records that share it, would be made for one).
        package mutating func message(to device: DeviceRow, badge: Int? = nil, due: Date? = nil, only: Bool = false) -> OutboundMessage {
            let c = command
            let variant = c.content.variant(for: device.locale)
            sentByLocale?[variant ?? NotificationHandler.defaultVariant, default: 0] += 1
            let index = AppParts.messageIndex(place: sent, part: part)
            sent += 1
            let key = TemplateKey(platform: device.platform, badge: badge, variant: variant, due: due)
            if let known = templates[key] {
                return OutboundMessage(kind: .push, deviceToken: device.deviceToken, body: .template(known, index: index))
            }
            var rendered = c
            var locale: String? = nil
            if c.content.localized != nil {
                rendered.content = c.content.localized(variant)
                locale = variant ?? NotificationHandler.defaultVariant
            }
            if only {
                return OutboundMessage(kind: .push, deviceToken: device.deviceToken, value: OutboundRecord.notification(
                    rendered, deviceToken: device.deviceToken, platform: device.platform, messageId: series.make(index: index),
                    sentAt: due ?? at, managedBadge: badge, locale: locale))
            }
            let template = OutboundTemplate(rendered, platform: device.platform, sentAt: due ?? at, managedBadge: badge, series: series,
                                            locale: locale)
            templates[key] = template
            return OutboundMessage(kind: .push, deviceToken: device.deviceToken, body: .template(template, index: index))
        }
    }

    /// Records the send's delivery once its devices are sent to (or held), and enqueues the
    /// callbacks of a ticket or im send to `devices`. A wave adds to the delivery as it is.
    package func finish(_ send: Send, devices: [DeviceRow], state: inout BatchState) -> HandlerResult {
        let c = send.command
        var delivery: DeliveryRow
        if let wave = send.wave, let current = state.delivery(c.deliveryId, app: c.mobileAppId, part: send.part) {
            delivery = current
            delivery.sent = send.sent
            if let counts = send.sentByLocale, !counts.isEmpty {
                delivery.sentByLocale = (delivery.sentByLocale ?? [:]).merging(counts, uniquingKeysWith: +)
            }
            delivery.held -= send.released
            delivery.waves.removeAll { $0 == wave }
        } else {
            delivery = DeliveryRow(appId: c.mobileAppId, deliveryId: c.deliveryId, kind: c.kind, managed: c.managed,
                                   tracking: c.tracking, sent: send.sent, createdAt: send.at,
                                   idempotencyKey: c.idempotencyKey, requestHash: c.idempotencyKey == nil ? nil : c.requestHash, part: send.part,
                                   sentByLocale: send.sentByLocale, sendAtLocal: c.sendAtLocal)
            if let waiting = send.waiting {
                // A firing: the delivery dates from the send, and keeps what was counted while it waited.
                delivery.createdAt = waiting.createdAt
                (delivery.duplicates, delivery.conflicts) = (waiting.duplicates, waiting.conflicts)
                delivery.sendAt = waiting.sendAt
                delivery.schedule = .fired
            }
            TrackingHandler.settle(delivery, state: &state)
        }
        delivery.held += send.held
        delivery.dropped += send.dropped
        delivery.expired += send.expired
        delivery.capped += send.capped
        send.count(in: &state)
        if !send.holds.isEmpty { delivery.waves = Array(Set(delivery.waves).union(send.holds.keys)).sorted() }
        if let next = delivery.waves.first {
            // Pushes still held: the send waits for the next of their times, its command kept.
            delivery.schedule = .sending
            delivery.sendAt = next
            var kept = c
            (kept.firing, kept.wave) = (nil, nil)
            delivery.scheduledCommand = Self.kept(kept)
        } else if delivery.schedule == .sending || send.wave != nil {
            delivery.schedule = .fired
            delivery.scheduledCommand = nil
        }
        state.record(delivery)
        if c.kind != .alert, send.wave == nil {
            Self.enqueueCallbacks(c, devices: devices, app: send.app, part: send.part, at: send.at, state: &state)
        }
        let decided = send.sent > send.firstPlace || send.held > 0 || send.dropped > 0 || send.expired > 0 || send.capped > 0
            || send.wave != nil
        return decided ? .applied : .rejected("no-devices")
    }

    /// A command's payload as a delivery keeps it for its firings (`DeliveryRow.scheduledCommand`).
    static func kept(_ c: NotificationRequested) -> String {
        var writer = JSONWriter(capacity: 1024)
        c.writePayload(to: &writer)
        return String(decoding: writer.data, as: UTF8.self)
    }

    /// Whether a send's devices are read from the store in pages as they are sent to
    /// (`BatchApplier`), rather than loaded with its batch: a send to an audience that keeps no
    /// state per device and calls back nobody (not managed, an alert), so that its devices need
    /// not be held at once.
    package static func streams(_ c: NotificationRequested) -> Bool {
        // A scheduled send is only kept until its firing, which streams; a wave reads its held
        // pushes instead.
        c.target.audience != nil && !c.managed && c.kind == .alert && (c.sendAt == nil || c.firing == true) && c.wave == nil
    }

    /// A send whose delivery id is known (docs/API.md#idempotency-keys), its firing aside. Within the key's window
    /// (counted from the first send's time), the same key and body is a duplicate and another
    /// body a conflict, each counted on the delivery. Anything else (a key past its window whose
    /// retry ingest could not tell, or a copied record of a send without a key) is refused. None
    /// is sent.
    private func repeated(_ c: NotificationRequested, of known: DeliveryRow, at: Date, state: inout BatchState) -> HandlerResult {
        guard let key = c.idempotencyKey, known.idempotencyKey == key else {
            return .rejected("duplicate-delivery")
        }
        guard at < known.createdAt.addingTimeInterval(idempotencyWindow.inSeconds) else {
            return .rejected("idempotency-key-expired")
        }
        let conflict = c.requestHash != known.requestHash
        // Every part of an app in parts refuses the repeat; part 0 counts it.
        if known.part == 0 {
            var delivery = known
            if conflict { delivery.conflicts += 1 } else { delivery.duplicates += 1 }
            state.record(delivery)
        }
        return .rejected(conflict ? "idempotency-key-conflict" : "idempotent-repeat")
    }

    private struct TemplateKey: Hashable {
        var platform: Platform
        var badge: Int?
        /// The key of `localized` whose text the template carries; nil: the send's own.
        var variant: String?
        /// A held push's due time (`HeldPushRow.dueAt`); nil: the send's.
        var due: Date?
    }

    /// The name `sentByLocale` counts the devices that got the send's own text under.
    package static let defaultVariant = "default"

    /// The target's devices that part `part` holds, each once, in a stable order that fixes the
    /// message ids: user by user as listed, each user's devices by token; or the tokens as
    /// listed. Tokens the app does not know are skipped.
    package static func resolve(_ target: NotificationTarget, app: UUID, part: Int, in state: BatchState) -> [DeviceRow] {
        var devices: [DeviceRow] = []
        if !target.userIds.isEmpty {
            var seen = Set<String>(minimumCapacity: target.userIds.count)
            for userId in target.userIds where seen.insert(userId).inserted {
                devices += state.devices(of: UserKey(appId: app, userId: userId), part: part)
            }
        }
        if !target.deviceTokens.isEmpty {
            var seen = Set<String>(minimumCapacity: target.deviceTokens.count)
            for token in target.deviceTokens where seen.insert(token).inserted && state.holds(token: token, part: part) {
                if let device = state.devices[DeviceKey(appId: app, deviceToken: token)] { devices.append(device) }
            }
        }
        return devices
    }

    /// The app's devices that part `part` holds and `audience` selects, as they are at the send's
    /// place in the event order (every device of the app is loaded, `StateQuery.allDevicesOf`,
    /// and the batch's earlier commands have changed them), in token order, which fixes the
    /// message ids.
    package static func resolve(_ audience: AudienceExpression, app: UUID, part: Int, in state: BatchState) -> [DeviceRow] {
        let devices = state.devices.values.filter { device in
            device.appId == app && selects(audience, device, part: part, of: state.parts)
        }
        // Positions are sorted, not rows: moving a row moves every one of its fields.
        let tokens = devices.map(\.deviceToken)
        var order = Array(devices.indices)
        order.sort { bytesPrecede(tokens[$0], tokens[$1]) }
        return order.map { devices[$0] }
    }

    /// Whether the audience takes `device`, of those part `part` holds.
    /// (`all` looks at no property, so a broadcast makes no `AudienceFacts`: 7 % of its time.)
    package static func selects(_ audience: AudienceExpression, _ device: DeviceRow, part: Int, of parts: AppParts) -> Bool {
        guard parts.part(ofToken: device.deviceToken) == part else { return false }
        if case .all = audience { return true }
        return audience.matches(AudienceFacts(device))
    }

    /// Whether `a`'s UTF-8 bytes come before `b`'s: one `memcmp` (the generic comparison of two
    /// `UTF8View`s was three quarters of a 100,000-device audience send).
    static func bytesPrecede(_ a: String, _ b: String) -> Bool {
        var a = a, b = b
        return a.withUTF8 { x in
            b.withUTF8 { y in
                let shared = min(x.count, y.count)
                let order = shared == 0 ? 0 : memcmp(x.baseAddress!, y.baseAddress!, shared)
                return order != 0 ? order < 0 : x.count < y.count
            }
        }
    }

    /// Makes the notification pending on the device and returns the device's badge. (No ack of
    /// it can be applied before: `AckHandler` counts acks of pending notifications only.)
    private static func makePending(_ c: NotificationRequested, device: DeviceRow, at: Date, state: inout BatchState) -> Int {
        let key = PendingKey(appId: c.mobileAppId, deviceToken: device.deviceToken, notificationId: c.notificationId)
        state.addPending(PendingNotificationRow(appId: c.mobileAppId, deviceToken: device.deviceToken,
                                                notificationId: c.notificationId, deliveryId: c.deliveryId, sentAt: at,
                                                text: c.content.alertText, businessId: c.businessId))
        return state.pendingCount(key.device)
    }

    /// One callback per user of the resolved devices, listing that user's devices, when the app
    /// has a callback URL. The job id is (delivery, user): a replay of the command finds the job
    /// and sends nothing. In an app in parts, each part stores its share of them instead, whether
    /// or not its view of the app has a URL (part 0's decides), and the commit that stores the
    /// delivery's last share merges them (`CallbackShare`, docs/ARCHITECTURE.md#one-app-in-parts).
    private static func enqueueCallbacks(_ c: NotificationRequested, devices: [DeviceRow], app: AppRow, part: Int, at: Date,
                                         state: inout BatchState) {
        let url = app.callbackUrl
        guard url != nil || state.parts.count > 1 else { return }
        let byUser = Dictionary(grouping: devices, by: \.userId)
        let users = byUser.keys.sorted().map { userId in
            CallbackShare.User(userId: userId, devices: byUser[userId]!.map { CallbackShare.Device(token: $0.deviceToken, platform: $0.platform) })
        }
        let share = CallbackShare(deliveryId: c.deliveryId, part: part, parts: state.parts.count, kind: c.kind, ticketId: c.ticketId,
                                  message: c.message, users: users)
        let maxAttempts = 1 + max(0, app.webhookRetries)
        if state.parts.count == 1, let url {
            for job in CallbackShare.callbacks([share], appId: c.mobileAppId, url: url, headers: app.callbackHeaders,
                                               maxAttempts: maxAttempts, at: at) {
                state.enqueue(job)
            }
        } else {
            state.enqueue(share.job(appId: c.mobileAppId, url: url ?? "", headers: app.callbackHeaders, maxAttempts: maxAttempts, at: at))
        }
    }
}
