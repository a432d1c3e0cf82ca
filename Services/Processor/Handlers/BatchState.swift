import Contracts
import Foundation
import Projections

/// The projection rows one batch works on: loaded once from the store, then changed in memory
/// by the handlers in command order, so that later commands of the batch see the effects of
/// earlier ones. Every change is also recorded as a `Mutation` for the batch's single commit,
/// and every outbound record the batch writes is collected in `outbound`.
struct BatchState {
    private(set) var apps: [UUID: AppRow]
    private(set) var tokens: [UUID: [ApiTokenRow]]
    private(set) var devices: [DeviceKey: DeviceRow]
    /// Device tokens of each user among `devices`, so that resolving a user costs its devices only.
    private var tokensByUser: [UserKey: [String]] = [:]
    private var pendingCounts: [DeviceKey: Int]
    private var pending: [PendingKey: PendingNotificationRow]
    private var acks: Set<PendingKey>
    /// Deliveries by id (whichever app sent them): the loaded ones and those sent in this batch.
    private var deliveries: [UUID: DeliveryRow]
    /// Tracking rows stored before their delivery's send, for the sends of this batch.
    private var tracked: [UUID: [TrackedEvent]]
    /// Tracking events by outcome, for the batch's metrics.
    private(set) var trackingOutcomes: [TrackingOutcome: Int] = [:]
    /// The (delivery, app) pairs this batch parked reports of.
    private var parkedTargets: Set<TrackingTarget> = []
    /// Reports gathered for `finishTracking`: per delivery, the number of each (action, device).
    private var trackingReports: [TrackingTarget: [TrackingReport: Int]] = [:]
    private var trackingTargets: [TrackingTarget] = []
    private(set) var mutations: [Mutation] = []
    private(set) var outbound: [OutboundMessage] = []

    init(_ snapshot: StateSnapshot) {
        apps = snapshot.apps
        tokens = snapshot.tokens
        devices = snapshot.devices
        pendingCounts = snapshot.pendingCounts
        pending = snapshot.pending
        acks = snapshot.acks
        deliveries = snapshot.deliveries
        tracked = snapshot.trackedEvents
        for device in snapshot.devices.values {
            tokensByUser[UserKey(appId: device.appId, userId: device.userId), default: []].append(device.deviceToken)
        }
    }

    /// True when the app exists in `orgId` (when given) and `tokenHash` is one of its live tokens.
    func authorizes(app appId: UUID, org orgId: UUID?, tokenHash: String) -> Bool {
        guard let app = apps[appId] else { return false }
        if let orgId, app.orgId != orgId { return false }
        return (tokens[appId] ?? []).contains { !$0.revoked && ApiTokens.constantTimeEquals($0.tokenHash, tokenHash) }
    }

    /// The user's devices, ordered by token (a stable order: message ids follow it).
    func devices(of user: UserKey) -> [DeviceRow] {
        guard let tokens = tokensByUser[user] else { return [] }
        return tokens.sorted().compactMap { devices[DeviceKey(appId: user.appId, deviceToken: $0)] }
    }

    mutating func upsert(_ app: AppRow) {
        apps[app.appId] = app
        mutations.append(.upsertApp(app))
    }

    mutating func upsert(_ token: ApiTokenRow) {
        var list = tokens[token.appId] ?? []
        list.removeAll { $0.tokenId == token.tokenId }
        list.append(token)
        tokens[token.appId] = list
        mutations.append(.upsertApiToken(token))
    }

    /// Stores the device. A device that changes hands loses its pending notifications: they
    /// were meant for the previous user.
    mutating func upsert(_ device: DeviceRow) {
        let previous = devices[device.key]
        if let previous, previous.userId != device.userId {
            unindex(previous)
            clearPending(device.key)
        }
        devices[device.key] = device
        if previous?.userId != device.userId {
            tokensByUser[UserKey(appId: device.appId, userId: device.userId), default: []].append(device.deviceToken)
        }
        mutations.append(.upsertDevice(device))
    }

    /// Deletes the device and its pending notifications: nothing more is sent to it.
    mutating func delete(_ key: DeviceKey) {
        guard let previous = devices.removeValue(forKey: key) else { return }
        unindex(previous)
        clearPending(key)
        mutations.append(.deleteDevice(key))
    }

    private mutating func unindex(_ device: DeviceRow) {
        tokensByUser[UserKey(appId: device.appId, userId: device.userId)]?.removeAll { $0 == device.deviceToken }
    }

    mutating func record(_ status: RegistrationStatusRow) {
        mutations.append(.putRegistrationStatus(status))
    }

    mutating func enqueue(_ job: OutboxJob) {
        mutations.append(.enqueueOutbox(job))
    }

    // MARK: - Managed notifications

    /// The device's badge: its number of pending notifications. Known for the devices whose
    /// counts the batch's query asked for (`StateQuery.pendingCountDevices`/`Users`).
    func pendingCount(_ device: DeviceKey) -> Int { pendingCounts[device] ?? 0 }

    func isAcknowledged(_ key: PendingKey) -> Bool { acks.contains(key) }

    /// Makes the notification pending on the device (once).
    mutating func addPending(_ row: PendingNotificationRow) {
        guard pending[row.key] == nil else { return }
        pending[row.key] = row
        pendingCounts[row.key.device, default: 0] += 1
        mutations.append(.putPending(row))
    }

    mutating func removePending(_ key: PendingKey) {
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

    mutating func recordAck(_ ack: AckRow) {
        guard acks.insert(ack.key).inserted else { return }
        mutations.append(.putAck(ack))
    }

    /// Stores the delivery; the first row of a delivery id stays.
    mutating func record(_ delivery: DeliveryRow) {
        if deliveries[delivery.deliveryId] == nil { deliveries[delivery.deliveryId] = delivery }
        mutations.append(.putDelivery(delivery))
    }

    func delivery(_ deliveryId: UUID) -> DeliveryRow? { deliveries[deliveryId] }

    // MARK: - Tracking

    /// The tracking rows stored before the delivery's send (loaded for this batch's sends).
    func trackedBeforeSend(_ deliveryId: UUID) -> [TrackedEvent] { tracked[deliveryId] ?? [] }

    /// Counts a report; reports are gathered per delivery and written by `finishTracking`.
    mutating func countTracking(app appId: UUID, delivery deliveryId: UUID, action: TrackingAction, messageIndex: Int,
                                outcome: TrackingOutcome, at: Date) {
        let target = TrackingTarget(appId: appId, deliveryId: deliveryId)
        if trackingReports[target] == nil { trackingTargets.append(target) }
        if outcome == .parked, parkedTargets.insert(target).inserted {
            mutations.append(.parkTracking(deliveryId: deliveryId, appId: appId, at: at))
        }
        trackingReports[target, default: [:]][TrackingReport(action: action, messageIndex: messageIndex), default: 0] += 1
        trackingOutcomes[outcome, default: 0] += 1
    }

    /// Writes the batch's gathered reports: one mutation per delivery (in the order the batch
    /// first reported on them), its counts by action and device. A batch that repeats a report
    /// writes it once, with its number of reports.
    mutating func finishTracking() {
        for target in trackingTargets {
            let counts = (trackingReports[target] ?? [:]).map { key, reports in
                TrackingCount(action: key.action, messageIndex: key.messageIndex, reports: reports)
            }.sorted { ($0.action, $0.messageIndex) < ($1.action, $1.messageIndex) }
            mutations.append(.countTracking(TrackingCounts(appId: target.appId, deliveryId: target.deliveryId, counts: counts)))
        }
        trackingTargets = []
        trackingReports = [:]
    }

    mutating func expireParkedTracking(before cutoff: Date) {
        mutations.append(.expireParkedTracking(before: cutoff))
    }

    mutating func rejectTracking(_ reason: TrackingOutcome.Reason, events: Int = 1) {
        trackingOutcomes[.rejected(reason), default: 0] += events
    }

    mutating func discardTracking(of delivery: DeliveryRow) {
        tracked[delivery.deliveryId] = nil
        mutations.append(.discardTracking(deliveryId: delivery.deliveryId, appId: delivery.appId,
                                          validBelow: delivery.tracking ? delivery.sent : 0))
    }

    mutating func emit(_ message: OutboundMessage) {
        outbound.append(message)
    }

    mutating func reserveOutbound(_ count: Int) {
        outbound.reserveCapacity(outbound.count + count)
    }
}

/// One record for the outbound topic, keyed by device token (docs/API.md#outbound-payloads).
///
/// A send's records are kept as (template, position) and rendered when they are published,
/// by several tasks at once and while earlier records are already on the wire.
struct OutboundMessage: Sendable, Equatable {
    enum Kind: String, Sendable {
        case push, badgeUpdate = "badge-update"
    }

    enum Body: Sendable {
        case rendered(Data)
        case template(OutboundTemplate, index: Int)
    }

    var kind: Kind
    var deviceToken: String
    var body: Body

    init(kind: Kind, deviceToken: String, value: Data) {
        self.init(kind: kind, deviceToken: deviceToken, body: .rendered(value))
    }

    init(kind: Kind, deviceToken: String, body: Body) {
        self.kind = kind
        self.deviceToken = deviceToken
        self.body = body
    }

    /// The record value.
    var value: Data {
        switch body {
        case .rendered(let data): data
        case .template(let template, let index): template.record(deviceToken: deviceToken, index: index)
        }
    }

    static func == (a: OutboundMessage, b: OutboundMessage) -> Bool {
        a.kind == b.kind && a.deviceToken == b.deviceToken && a.value == b.value
    }
}

/// The app and delivery a tracking report names.
struct TrackingTarget: Hashable {
    var appId: UUID
    var deliveryId: UUID
}

/// What a tracking report says about its delivery: this device did this.
struct TrackingReport: Hashable {
    var action: TrackingAction
    var messageIndex: Int
}
