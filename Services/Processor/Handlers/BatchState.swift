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
    private var tokensByUser: [UserKey: Set<String>] = [:]
    private var pendingCounts: [DeviceKey: Int]
    private var pending: [PendingKey: PendingNotificationRow]
    private var acks: Set<PendingKey>
    private(set) var mutations: [Mutation] = []
    private(set) var outbound: [OutboundMessage] = []

    init(_ snapshot: StateSnapshot) {
        apps = snapshot.apps
        tokens = snapshot.tokens
        devices = snapshot.devices
        pendingCounts = snapshot.pendingCounts
        pending = snapshot.pending
        acks = snapshot.acks
        for device in snapshot.devices.values {
            tokensByUser[UserKey(appId: device.appId, userId: device.userId), default: []].insert(device.deviceToken)
        }
    }

    /// True when the app exists in `orgId` (when given) and `tokenHash` is one of its live tokens.
    func authorizes(app appId: UUID, org orgId: UUID?, tokenHash: String) -> Bool {
        guard let app = apps[appId] else { return false }
        if let orgId, app.orgId != orgId { return false }
        return (tokens[appId] ?? []).contains { !$0.revoked && ApiTokens.constantTimeEquals($0.tokenHash, tokenHash) }
    }

    /// The user's devices, ordered by token.
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
        if let previous = devices[device.key], previous.userId != device.userId {
            unindex(previous)
            clearPending(device.key)
        }
        devices[device.key] = device
        tokensByUser[UserKey(appId: device.appId, userId: device.userId), default: []].insert(device.deviceToken)
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
        tokensByUser[UserKey(appId: device.appId, userId: device.userId)]?.remove(device.deviceToken)
    }

    mutating func record(_ status: RegistrationStatusRow) {
        mutations.append(.putRegistrationStatus(status))
    }

    mutating func enqueue(_ job: OutboxJob) {
        mutations.append(.enqueueOutbox(job))
    }

    // MARK: - Managed notifications

    /// The device's badge: its number of pending notifications.
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

    private mutating func clearPending(_ device: DeviceKey) {
        guard pendingCount(device) > 0 else { return }
        pendingCounts[device] = nil
        pending = pending.filter { $0.key.device != device }
        mutations.append(.clearPending(device))
    }

    mutating func recordAck(_ ack: AckRow) {
        guard acks.insert(ack.key).inserted else { return }
        mutations.append(.putAck(ack))
    }

    mutating func record(_ delivery: DeliveryRow) {
        mutations.append(.putDelivery(delivery))
    }

    mutating func emit(_ message: OutboundMessage) {
        outbound.append(message)
    }

    mutating func reserveOutbound(_ count: Int) {
        outbound.reserveCapacity(outbound.count + count)
    }
}

/// One record for the outbound topic: keyed by device token (SPEC §4).
struct OutboundMessage: Sendable, Equatable {
    enum Kind: String, Sendable {
        case push, badgeUpdate = "badge-update"
    }

    var kind: Kind
    var deviceToken: String
    var value: Data
}
