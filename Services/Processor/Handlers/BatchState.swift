import Contracts
import Foundation
import OutboundRendering
import Projections

/// The projection rows one batch works on: loaded once from the store, then changed in memory
/// by the handlers in command order, so that later commands of the batch see the effects of
/// earlier ones. Every change is also recorded as a `Mutation` for the batch's single commit,
/// and every outbound record the batch writes is collected in `outbound`.
package struct BatchState {
    /// Each app's rows by part (`AppPart`): a command reads its own part's.
    package private(set) var apps: [AppPart: AppRow]
    package private(set) var tokens: [AppPart: [ApiTokenRow]]
    package private(set) var adminTokens: [UUID: AdminTokenRow]
    package private(set) var devices: [DeviceKey: DeviceRow]
    /// The rows of `devices` by user, so that resolving a user costs its devices only and no
    /// lookup per device.
    private var devicesByUser: [UserKey: [DeviceRow]] = [:]
    private var pendingCounts: [DeviceKey: Int]
    private var pending: [PendingKey: PendingNotificationRow]
    /// Deliveries by app and id: the loaded ones and those sent in this batch.
    private var deliveries: [DeliveryKey: DeliveryRow]
    /// The loaded held pushes (`StateQuery.heldWaves`, `heldOf`) and those held in the batch,
    /// less those released or cancelled.
    private var held: [HeldPushKey: HeldPushRow]
    /// Users' settings by part: loaded, and as the batch changed them.
    private var userSettings: [UserPartKey: UserSettingsRow]
    /// The users each counted send reached: loaded (or known to the reader), and those the batch counted.
    private var countedSends: [CountedSendKey: [UInt64]]
    /// `countedSends(of:)` of each app part, with the app's text it was made from: every send
    /// asks, and the text changes only when a send is counted.
    private var countedSendsMade: [AppPart: (text: String, sends: [CountedSend])] = [:]
    /// Each loaded or recorded device outcome of a delivery.
    private var outcomes: [DeliveryOutcomeKey: DeliveryOutcome]
    /// Deliveries whose outcome counts changed in the batch, in the order they first did.
    private var recounted: [DeliveryKey] = []
    /// App parts whose count of users changed in the batch, in the order they first did.
    private var recountedUsers: [AppPart] = []
    /// Tracking rows stored before their delivery's send, for the sends of this batch.
    private var tracked: [UUID: [TrackedEvent]]
    /// Park marks by delivery, then app and part: those loaded (of the batch's deliveries, and
    /// every one old enough to expire in it) and those the batch set.
    private var parks: [UUID: [AppPart: Date]] = [:]
    /// How long parked reports wait for their send, in event time.
    private let trackingParkTime: TimeInterval
    /// How long statuses and acks are kept, in event time.
    private let retention: Retention
    /// Statuses and acks that may be pruned at the batch's end: those loaded as old enough, then
    /// those the batch stores (`finishPruning`).
    private var prunable: (statuses: [RegistrationStatusRow], acks: [AckRow])
    /// The event time of each app part's latest command so far: the clocks
    /// (`advance(to:app:)`). Each app, and each part of one, has its own, so that what expires in
    /// it depends on its own commands alone, whichever others a processor applies beside it
    /// (docs/ARCHITECTURE.md#scale-out).
    private var clocks: [AppPart: Date] = [:]
    /// The parts every app is split into: a part's devices are those whose tokens it holds.
    package let parts: AppParts
    /// Tracking events by outcome, for the batch's metrics.
    package private(set) var trackingOutcomes: [TrackingOutcome: Int] = [:]
    /// Reports gathered for `finishTracking`: per delivery, then app and part, the number of each
    /// (action, device); `trackingOrder` is the order pairs were first reported on.
    private var trackingReports: [UUID: [AppPart: [TrackingRowKey: Int]]] = [:]
    private var trackingOrder: [TrackingPair] = []
    package private(set) var mutations: [Mutation] = []
    package private(set) var outbound: [OutboundMessage] = []

    package init(_ snapshot: StateSnapshot, trackingParkTime: Duration = DecisionRules.default.trackingParkTime,
                 keeping retention: Retention = Retention(), parts: AppParts = .one) {
        self.trackingParkTime = trackingParkTime.inSeconds
        self.retention = retention
        prunable = (snapshot.agedStatuses, snapshot.agedAcks)
        self.parts = parts
        apps = snapshot.apps
        tokens = snapshot.tokens
        adminTokens = snapshot.adminTokens
        devices = snapshot.devices
        pendingCounts = snapshot.pendingCounts
        pending = snapshot.pending
        deliveries = snapshot.deliveries
        outcomes = snapshot.outcomes
        held = snapshot.held
        userSettings = snapshot.userSettings
        countedSends = snapshot.countedSends
        tracked = snapshot.trackedEvents
        for (pair, at) in snapshot.parkedTracking { parks[pair.deliveryId, default: [:]][pair.scope] = at }
        for device in snapshot.devices.values {
            devicesByUser[UserKey(appId: device.appId, userId: device.userId), default: []].append(device)
        }
    }

    /// How a command's token is judged (`authorization`).
    package enum TokenVerdict: Equatable {
        case authorized
        /// No such app in the org, or not one of its live tokens.
        case invalid
        /// A live token of the app without the scope asked for.
        case lacksScope
    }

    /// The app's row as its part `part` has it.
    package func app(_ appId: UUID, part: Int) -> AppRow? { apps[AppPart(appId, part: part)] }

    /// The app's tokens (revoked too) as its part `part` has them.
    package func tokens(of appId: UUID, part: Int) -> [ApiTokenRow] { tokens[AppPart(appId, part: part)] ?? [] }

    /// Whether the app exists in `orgId` (when given), `tokenHash` is one of its live tokens and
    /// that token has `scope` (a legacy token has every scope), as of this point of the log in
    /// the app's part `part`.
    package func authorization(app appId: UUID, part: Int, org orgId: UUID?, tokenHash: String, scope: ApiTokenScope) -> TokenVerdict {
        guard let app = app(appId, part: part) else { return .invalid }
        if let orgId, app.orgId != orgId { return .invalid }
        // Compares with every live token, not stopping at a match.
        var match: ApiTokenRow?
        for token in tokens(of: appId, part: part) where !token.revoked {
            if ApiTokens.constantTimeEquals(token.tokenHash, tokenHash) { match = token }
        }
        guard let match else { return .invalid }
        return match.grants(scope) ? .authorized : .lacksScope
    }

    /// Whether the app requires user assertions to bind a device to a user or clean up a user's
    /// devices, as of this point of the log in the app's part `part`.
    package func requiresIdentity(app appId: UUID, part: Int) -> Bool {
        app(appId, part: part)?.identityRequired ?? false
    }

    /// True when `authorization` is `.authorized`.
    package func authorizes(app appId: UUID, part: Int, org orgId: UUID?, tokenHash: String, scope: ApiTokenScope) -> Bool {
        authorization(app: appId, part: part, org: orgId, tokenHash: tokenHash, scope: scope) == .authorized
    }

    /// Whether part `part` holds the device of this token. A command about one device for another
    /// part was not written by a split (`AppScopedCommand.split`, which sends it to its token's
    /// part), and the processor stops before applying it (`PartMismatch`); deciding it would read
    /// a row another processor writes, so handlers refuse it too.
    package func holds(token: String, part: Int) -> Bool { parts.part(ofToken: token) == part }

    /// The user's devices that part `part` holds, ordered by token (a stable order: message ids
    /// follow it). Other parts' devices of the user are theirs: they are loaded with the user,
    /// and never looked at.
    package func devices(of user: UserKey, part: Int) -> [DeviceRow] {
        var devices = devicesByUser[user] ?? []
        if parts.count > 1 { devices.removeAll { !holds(token: $0.deviceToken, part: part) } }
        return devices.sorted { $0.deviceToken < $1.deviceToken }
    }

    package mutating func upsert(_ app: AppRow) {
        apps[AppPart(app.appId, part: app.part)] = app
        mutations.append(.upsertApp(app))
    }

    package mutating func upsert(_ token: ApiTokenRow) {
        let key = AppPart(token.appId, part: token.part)
        var list = tokens[key] ?? []
        list.removeAll { $0.tokenId == token.tokenId }
        list.append(token)
        tokens[key] = list
        mutations.append(.upsertApiToken(token))
    }

    package mutating func upsert(_ token: AdminTokenRow) {
        adminTokens[token.adminTokenId] = token
        mutations.append(.upsertAdminToken(token))
    }

    package mutating func record(_ entry: AuditEntryRow) {
        mutations.append(.putAuditEntry(entry))
    }

    /// Remembers the first request of an admin create's idempotency key (ingest reads it; no
    /// handler does: the created row's id is the key's).
    package mutating func record(_ key: IdempotencyKeyRow) {
        mutations.append(.putIdempotencyKey(key))
    }

    /// Stores the device. A device that changes hands loses its pending notifications: they
    /// were meant for the previous user. A user's first device in its part adds the user to the
    /// part's count, and a previous user's last one removes that user: the devices of both are
    /// loaded (`StateQuery.userKeys`, `.deviceOwners`).
    package mutating func upsert(_ device: DeviceRow) {
        let previous = devices[device.key]
        let part = parts.part(ofToken: device.deviceToken)
        if let previous, previous.userId != device.userId {
            unindex(previous)
            clearPending(device.key)
            if !hasDevices(previous.user, part: part) { countUsers(-1, app: device.appId, part: part) }
        }
        devices[device.key] = device
        let user = device.user
        if previous?.userId != device.userId {
            if !hasDevices(user, part: part) { countUsers(1, app: device.appId, part: part) }
            devicesByUser[user, default: []].append(device)
        } else if let index = devicesByUser[user]?.firstIndex(where: { $0.deviceToken == device.deviceToken }) {
            devicesByUser[user]![index] = device
        }
        mutations.append(.upsertDevice(device))
    }

    /// Deletes the device and its pending notifications: nothing more is sent to it. Its user's
    /// last device in its part removes the user from the part's count.
    package mutating func delete(_ key: DeviceKey) {
        guard let previous = devices.removeValue(forKey: key) else { return }
        unindex(previous)
        clearPending(key)
        let part = parts.part(ofToken: key.deviceToken)
        if !hasDevices(previous.user, part: part) { countUsers(-1, app: key.appId, part: part) }
        mutations.append(.deleteDevice(key))
    }

    /// Whether the user has a device that part `part` holds.
    private func hasDevices(_ user: UserKey, part: Int) -> Bool {
        devicesByUser[user]?.contains { holds(token: $0.deviceToken, part: part) } ?? false
    }

    /// The users with a device in the app's part `part` (`AppRow.users`), as of this point.
    package func users(of appId: UUID, part: Int) -> Int { app(appId, part: part)?.users ?? 0 }

    private mutating func countUsers(_ change: Int, app appId: UUID, part: Int) {
        let key = AppPart(appId, part: part)
        guard var app = apps[key] else { return }
        app.users = max(0, app.users + change)
        apps[key] = app
        if !recountedUsers.contains(key) { recountedUsers.append(key) }
    }

    /// Writes the app parts whose count of users the batch changed (once each, as they are now).
    package mutating func finishUsers() {
        for key in recountedUsers {
            if let app = apps[key] { mutations.append(.upsertApp(app)) }
        }
        recountedUsers = []
    }

    private mutating func unindex(_ device: DeviceRow) {
        devicesByUser[device.user]?.removeAll { $0.deviceToken == device.deviceToken }
    }

    package mutating func record(_ status: RegistrationStatusRow) {
        prunable.statuses.append(status)
        mutations.append(.putRegistrationStatus(status))
    }

    package mutating func enqueue(_ job: OutboxJob) {
        mutations.append(.enqueueOutbox(job))
    }

    // MARK: - Managed notifications

    /// The device's badge: its number of pending notifications. Known for the devices whose
    /// counts the batch's query asked for (`StateQuery.pendingCountDevices`/`Users`).
    package func pendingCount(_ device: DeviceKey) -> Int { pendingCounts[device] ?? 0 }

    /// Whether the notification is pending on the device: loaded (`StateQuery.pendingKeys`) or
    /// made pending earlier in the batch, and not removed since.
    package func isPending(_ key: PendingKey) -> Bool { pending[key] != nil }

    /// Makes the notification pending on the device (once).
    package mutating func addPending(_ row: PendingNotificationRow) {
        guard pending[row.key] == nil else { return }
        pending[row.key] = row
        pendingCounts[row.key.device, default: 0] += 1
        mutations.append(.putPending(row))
    }

    package mutating func removePending(_ key: PendingKey) {
        guard pending.removeValue(forKey: key) != nil else { return }
        pendingCounts[key.device, default: 1] -= 1
        mutations.append(.deletePending(key))
    }

    /// Always written (the count may not have been loaded); deleting nothing costs one lookup.
    private mutating func clearPending(_ device: DeviceKey) {
        pendingCounts[device] = nil
        pending = pending.filter { $0.key.device != device }
        mutations.append(.clearPending(device))
    }

    /// Stores the ack (of a pending notification: there is one per key).
    package mutating func recordAck(_ ack: AckRow) {
        prunable.acks.append(ack)
        mutations.append(.putAck(ack))
    }

    /// Stores the delivery of a send (the handler refuses a known delivery id).
    package mutating func record(_ delivery: DeliveryRow) {
        deliveries[delivery.key] = delivery
        mutations.append(.putDelivery(delivery))
    }

    /// The app part's delivery of this id. Another app's of the same id, or another part's, is
    /// not looked at: it is another processor's to apply (docs/ARCHITECTURE.md#scale-out).
    package func delivery(_ deliveryId: UUID, app: UUID, part: Int) -> DeliveryRow? {
        deliveries[DeliveryKey(appId: app, deliveryId: deliveryId, part: part)]
    }

    // MARK: - Held pushes

    /// Holds a push until its time (`HeldPushRow`).
    package mutating func hold(_ row: HeldPushRow) {
        held[row.key] = row
        mutations.append(.putHeldPush(row))
    }

    /// Removes a held push: released, or cancelled.
    package mutating func unhold(_ key: HeldPushKey) {
        held[key] = nil
        mutations.append(.deleteHeldPush(key))
    }

    /// The delivery part's held pushes (of those loaded and held in the batch), those of one
    /// time or all, in their tokens' byte order.
    package func heldPushes(of delivery: DeliveryKey, releasedAt wave: Date? = nil) -> [HeldPushRow] {
        let rows = held.values.filter { $0.key.delivery == delivery && (wave == nil || $0.releaseAt == wave) }
        let tokens = rows.map(\.deviceToken)
        var order = Array(rows.indices)
        order.sort { NotificationHandler.bytesPrecede(tokens[$0], tokens[$1]) }
        return order.map { rows[$0] }
    }

    // MARK: - Users' settings

    /// The user's settings as part `part` keeps them; nil: none (the app's apply).
    package func settings(of user: UserKey, part: Int) -> UserSettingsRow? {
        userSettings[UserPartKey(user: user, part: part)]
    }

    package mutating func record(_ row: UserSettingsRow) {
        userSettings[row.key] = row
        mutations.append(.putUserSettings(row))
    }

    /// The sends to an audience the app part's caps counted (`AppRow.countedSends`), each with
    /// the users it reached.
    package mutating func countedSends(of app: AppRow) -> [CountedSend] {
        guard let text = app.countedSends else { return [] }
        let part = AppPart(app.appId, part: app.part)
        if let made = countedSendsMade[part], made.text == text { return made.sends }
        let sends = CappedPushes(text).entries.map { entry in
            CountedSend(at: entry.at, delivery: entry.delivery, category: entry.category,
                        users: countedSends[CountedSendKey(appId: app.appId, part: app.part, delivery: entry.delivery)] ?? [])
        }
        countedSendsMade[part] = (text, sends)
        return sends
    }

    package mutating func record(_ row: CountedSendRow) {
        countedSends[row.key] = row.users
        countedSendsMade[AppPart(row.appId, part: row.part)] = nil
        mutations.append(.putCountedSend(row))
    }

    package mutating func forget(_ key: CountedSendKey) {
        countedSends[key] = nil
        countedSendsMade[AppPart(key.appId, part: key.part)] = nil
        mutations.append(.deleteCountedSend(key))
    }

    // MARK: - Delivery outcomes

    /// Stores a device's outcome of its delivery (the last report stays) and moves the device
    /// between the delivery's counts; the delivery row is written once, by `finishOutcomes`.
    /// `locale`: the variant of a localized send the push carried, counted per locale.
    package mutating func record(_ outcome: DeliveryOutcomeRow, locale: String? = nil) {
        let previous = outcomes.updateValue(outcome.outcome, forKey: outcome.key)
        mutations.append(.putDeliveryOutcome(outcome))
        let key = DeliveryKey(appId: outcome.appId, deliveryId: outcome.deliveryId,
                              part: AppParts.part(ofMessageIndex: outcome.messageIndex))
        guard previous != outcome.outcome, var delivery = deliveries[key] else { return }
        delivery.recount(from: previous, to: outcome.outcome, locale: locale)
        deliveries[key] = delivery
        if !recounted.contains(key) { recounted.append(key) }
    }

    /// Writes the deliveries whose counts the batch changed.
    package mutating func finishOutcomes() {
        for key in recounted {
            if let delivery = deliveries[key] { mutations.append(.putDelivery(delivery)) }
        }
        recounted = []
    }

    // MARK: - Tracking

    /// Moves the clock of the command's app part to its event time (it never goes back).
    /// *Before* each command.
    package mutating func advance(to at: Date, app: UUID, part: Int) {
        let key = AppPart(app, part: part)
        if at > clocks[key] ?? .distantPast { clocks[key] = at }
    }

    /// The pairs of a delivery that have reports stored or gathered before its send, or a park
    /// mark, in app id order, then part order.
    package func trackingPairs(of deliveryId: UUID) -> [TrackingPair] {
        var scopes = Set<AppPart>()
        if let parked = parks[deliveryId] { scopes.formUnion(parked.keys) }
        for event in tracked[deliveryId] ?? [] { scopes.insert(event.scope) }
        if let gathered = trackingReports[deliveryId] { scopes.formUnion(gathered.keys) }
        return scopes.sorted { ($0.appId.uuidString, $0.part) < ($1.appId.uuidString, $1.part) }
            .map { TrackingPair(deliveryId: deliveryId, appId: $0.appId, part: $0.part) }
    }

    /// The pair's reports so far, stored and gathered: the number of each (action, device).
    package func trackingReports(of pair: TrackingPair) -> [TrackingRowKey: Int] {
        var reports = trackingReports[pair.deliveryId]?[pair.scope] ?? [:]
        for event in tracked[pair.deliveryId] ?? [] where event.scope == pair.scope {
            reports[event.key, default: 0] += 1 + event.repeats
        }
        return reports
    }

    /// Counts a report; reports are gathered per pair and written by `finishTracking`. A report
    /// parked before its delivery's send marks its pair parked since the report's time.
    package mutating func countTracking(_ pair: TrackingPair, _ key: TrackingRowKey, outcome: TrackingOutcome, at: Date) {
        if outcome == .parked, parks[pair.deliveryId]?[pair.scope] == nil {
            parks[pair.deliveryId, default: [:]][pair.scope] = at
            mutations.append(.parkTracking(pair, at: at))
        }
        if trackingReports[pair.deliveryId]?[pair.scope] == nil { trackingOrder.append(pair) }
        trackingReports[pair.deliveryId, default: [:]][pair.scope, default: [:]][key, default: 0] += 1
        trackingOutcomes[outcome, default: 0] += 1
    }

    /// Drops the pair when its park time has passed by its app part's clock; true if it did.
    @discardableResult
    package mutating func expireIfDue(_ pair: TrackingPair) -> Bool {
        guard let parkedAt = parks[pair.deliveryId]?[pair.scope], hasExpired(parkedAt, scope: pair.scope) else { return false }
        dropTracking(pair)
        return true
    }

    private func hasExpired(_ parkedAt: Date, scope: AppPart) -> Bool {
        guard let clock = clocks[scope] else { return false }
        return parkedAt < clock.addingTimeInterval(-trackingParkTime)
    }

    /// Deletes these rows of the pair, stored or gathered.
    package mutating func deleteTracking(_ pair: TrackingPair, _ keys: Set<TrackingRowKey>) {
        var stored: [TrackingRowKey] = []
        tracked[pair.deliveryId]?.removeAll { event in
            guard event.scope == pair.scope, keys.contains(event.key) else { return false }
            stored.append(event.key)
            return true
        }
        if !stored.isEmpty { mutations.append(.deleteTracking(pair, stored)) }
        for key in keys { trackingReports[pair.deliveryId]?[pair.scope]?[key] = nil }
    }

    /// Deletes every report of the pair, stored or gathered, and its park mark.
    package mutating func dropTracking(_ pair: TrackingPair) {
        tracked[pair.deliveryId]?.removeAll { $0.scope == pair.scope }
        trackingReports[pair.deliveryId]?[pair.scope] = nil
        parks[pair.deliveryId]?[pair.scope] = nil
        mutations.append(.dropTracking(pair))
    }

    /// The pair's reports are its delivery's now: its park mark goes.
    package mutating func unparkTracking(_ pair: TrackingPair) {
        tracked[pair.deliveryId]?.removeAll { $0.scope == pair.scope }
        guard parks[pair.deliveryId]?.removeValue(forKey: pair.scope) != nil else { return }
        mutations.append(.unparkTracking(pair))
    }

    /// Ends the batch's tracking: drops the pairs whose park time has passed by their app's
    /// clock (as the app's next command would; an app without a command in the batch keeps its
    /// pairs), then writes the gathered reports, one mutation per
    /// pair in the order the batch first reported on them. A batch that repeats a report
    /// writes it once, with its number of reports.
    package mutating func finishTracking() {
        var expired: [TrackingPair] = []
        for (deliveryId, scopes) in parks {
            for (scope, parkedAt) in scopes where hasExpired(parkedAt, scope: scope) {
                expired.append(TrackingPair(deliveryId: deliveryId, appId: scope.appId, part: scope.part))
            }
        }
        for pair in expired.sorted(by: {
            ($0.deliveryId.uuidString, $0.appId.uuidString, $0.part) < ($1.deliveryId.uuidString, $1.appId.uuidString, $1.part)
        }) {
            dropTracking(pair)
        }
        for pair in trackingOrder {
            // A pair dropped and reported on again is listed twice: written once.
            guard let reports = trackingReports[pair.deliveryId]?.removeValue(forKey: pair.scope), !reports.isEmpty else { continue }
            let counts = reports.map { key, reports in
                TrackingCount(action: key.action, messageIndex: key.messageIndex, reports: reports)
            }.sorted { ($0.action, $0.messageIndex) < ($1.action, $1.messageIndex) }
            mutations.append(.countTracking(TrackingCounts(appId: pair.appId, deliveryId: pair.deliveryId, counts: counts, part: pair.part)))
        }
        trackingOrder = []
        trackingReports = [:]
    }

    // MARK: - Pruning

    /// Ends the batch's pruning: deletes the registration statuses and acks whose time to live
    /// has passed by their own app part's clock (an app part without a command in the batch keeps
    /// its rows until its next command). The clocks never go back and a row's app part applies
    /// its commands in one order, so a row goes exactly when its app part's last command so far
    /// is past its time plus the retention: the same rows remain whatever the batches, in a live
    /// processor and in a rebuild. The deletes are mutations of the commit, in its changelog entry.
    package mutating func finishPruning() {
        var statuses: [UUID: RegistrationStatusRow] = [:]
        for row in prunable.statuses { statuses[row.requestId] = row }
        // In the ids' byte order (their text's order too): comparing `uuidString`s formatted two
        // strings per comparison, a fifth of a replay's CPU.
        for (id, row) in statuses.sorted(by: { KeyOrder.less($0.key, $1.key) })
        where isPast(row.decidedAt, by: retention.registrationStatuses, scope: AppPart(row.appId, part: row.part)) {
            mutations.append(.deleteRegistrationStatus(id))
        }
        var acks: [PendingKey: AckRow] = [:]
        for row in prunable.acks { acks[row.key] = row }
        for (key, row) in acks.sorted(by: { KeyOrder.less($0.key, $1.key) })
        where isPast(row.ackedAt, by: retention.acks, scope: AppPart(row.appId, part: parts.part(ofToken: row.deviceToken))) {
            mutations.append(.deleteAck(key))
        }
        prunable = ([], [])
    }

    /// Whether `time` plus `retention` is before the clock of `scope` (false without a clock).
    private func isPast(_ time: Date, by retention: Duration, scope: AppPart) -> Bool {
        guard let clock = clocks[scope] else { return false }
        return time < clock.addingTimeInterval(-retention.inSeconds)
    }

    package mutating func rejectTracking(_ reason: TrackingOutcome.Reason, events: Int = 1) {
        trackingOutcomes[.rejected(reason), default: 0] += events
    }

    package mutating func emit(_ message: OutboundMessage) {
        outbound.append(message)
    }

    package mutating func reserveOutbound(_ count: Int) {
        outbound.reserveCapacity(outbound.count + count)
    }
}

/// One record for the outbound topic, keyed by device token (docs/API.md#outbound-payloads).
///
/// A send's records are kept as (template, position) and rendered when they are published,
/// by several tasks at once and while earlier records are already on the wire.
package struct OutboundMessage: Sendable, Equatable {
    package enum Kind: String, Sendable {
        case push, badgeUpdate = "badge-update"
    }

    package enum Body: Sendable {
        case rendered(Data)
        case template(OutboundTemplate, index: Int)
    }

    package var kind: Kind
    package var deviceToken: String
    package var body: Body

    package init(kind: Kind, deviceToken: String, value: Data) {
        self.init(kind: kind, deviceToken: deviceToken, body: .rendered(value))
    }

    package init(kind: Kind, deviceToken: String, body: Body) {
        self.kind = kind
        self.deviceToken = deviceToken
        self.body = body
    }

    /// The record value.
    package var value: Data {
        switch body {
        case .rendered(let data): data
        case .template(let template, let index): template.record(deviceToken: deviceToken, index: index)
        }
    }

    /// Appends the record value to `bytes`.
    package func writeValue(appendingTo bytes: inout [UInt8]) {
        switch body {
        case .rendered(let data): bytes.append(contentsOf: data)
        case .template(let template, let index): template.render(deviceToken: deviceToken, index: index, appendingTo: &bytes)
        }
    }

    package static func == (a: OutboundMessage, b: OutboundMessage) -> Bool {
        a.kind == b.kind && a.deviceToken == b.deviceToken && a.value == b.value
    }
}
