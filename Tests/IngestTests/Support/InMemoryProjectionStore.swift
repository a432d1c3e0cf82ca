import Contracts
import Foundation
import Projections
import WireCodec

/// An in-memory store for ingest — the reads of `ProjectionReader`, and a `BatchStore` only to
/// count commits — holding apps, tokens, registration statuses, pending
/// notifications and deliveries seeded by the tests. It counts `commit` calls so tests can
/// prove ingest never writes, counts reads so tests can see the auth cache at work, and can be
/// told to fail every read.
actor InMemoryProjectionStore: ProjectionReader, BatchStore {
    /// What every read throws after `failEveryRead()`.
    struct Unavailable: Error {}

    private var apps: [UUID: AppRow] = [:]
    private var tokens: [UUID: [ApiTokenRow]] = [:]
    private var statuses: [UUID: RegistrationStatusRow] = [:]
    private var pending: [PendingKey: PendingNotificationRow] = [:]
    private var devices: [DeviceKey: DeviceRow] = [:]
    private var stats: [NotificationKey: DeliveryStatsRow] = [:]
    private var outcomes: [DeliveryOutcomeRow] = []
    private var adminTokens: [UUID: AdminTokenRow] = [:]
    private var audit: [AuditEntryRow] = []
    /// The audit queries asked, in order.
    private(set) var auditQueries: [AuditQuery] = []
    private var idempotencyKeys: [String: IdempotencyKeyRow] = [:]
    private var userSettingsRows: [UserKey: UserSettingsRow] = [:]
    private var failing = false
    private var storedOffsets: [PartitionKey: Int64] = [:]
    private var held: [HeldLane] = []
    private(set) var commitCount = 0
    /// Every read call so far (`load` and the single-row reads).
    private(set) var readCount = 0

    func seed(app: AppRow) { apps[app.appId] = app }
    func seed(outcome: DeliveryOutcomeRow) { outcomes.append(outcome) }
    func seed(token: ApiTokenRow) { tokens[token.appId, default: []].append(token) }
    func seed(status: RegistrationStatusRow) { statuses[status.requestId] = status }
    func seed(adminToken: AdminTokenRow) { adminTokens[adminToken.adminTokenId] = adminToken }
    func seed(audit entry: AuditEntryRow) { audit.append(entry) }
    /// Marks the admin token revoked, as the processor does when it applies `AdminTokenRevoked`.
    func revoke(adminTokenId: UUID) { adminTokens[adminTokenId]?.revoked = true }
    func seed(pending row: PendingNotificationRow) { pending[row.key] = row }
    func seed(device row: DeviceRow) { devices[row.key] = row }
    func seed(stats row: DeliveryStatsRow) {
        stats[NotificationKey(appId: row.delivery.appId, notificationId: row.delivery.deliveryId.uuidString.lowercased())] = row
    }
    /// Marks the token revoked, as the processor does when it applies `ApiTokenRevoked`.
    func revoke(tokenId: UUID) {
        for (appId, rows) in tokens {
            tokens[appId] = rows.map { row in
                var row = row
                if row.tokenId == tokenId { row.revoked = true }
                return row
            }
        }
    }
    func failEveryRead() { failing = true }

    private func check() throws {
        readCount += 1
        if failing { throw Unavailable() }
    }

    func load(_ query: StateQuery) throws -> StateSnapshot {
        try check()
        var snapshot = StateSnapshot()
        for id in query.appIds {
            snapshot.apps[AppPart(id)] = apps[id]
            snapshot.tokens[AppPart(id)] = tokens[id] ?? []
        }
        return snapshot
    }

    func commit(mutations: [Mutation], offsets: [OffsetUpdate]) {
        commitCount += 1
    }

    func devices(app appId: UUID, after: String?, limit: Int, having: DeviceNames) throws -> [DeviceRow] {
        try check()
        let after = after.map { Array($0.utf8) }
        let tokens = devices.keys.filter { $0.appId == appId }.map(\.deviceToken)
            .filter { token in after.map { $0.lexicographicallyPrecedes(token.utf8) } ?? true }
            .sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        return tokens.prefix(limit).map { devices[DeviceKey(appId: appId, deviceToken: $0)]! }
    }

    func deviceCount(app appId: UUID, name: DeviceName, upTo limit: Int) throws -> Int {
        try check()
        let count = devices.values.filter { device in
            device.appId == appId && (name.kind == .tag ? device.tags : device.topics).contains(name.name)
        }.count
        return min(count, limit)
    }

    func offsets(topics: [String]) -> [PartitionKey: Int64] { storedOffsets.filter { topics.contains($0.key.topic) } }
    func eventTimes(topics: [String]) -> [PartitionKey: Int64] { [:] }
    func heldLanes(topics: [String]) -> [HeldLane] { held.filter { topics.contains($0.lane.topic) } }
    func scheduledSends(app appId: UUID, state: ScheduleState, after: (sendAt: Date, deliveryId: UUID)?, limit: Int) throws -> [DeliveryRow] {
        try check()
        let rows = stats.values.map(\.delivery).filter { $0.appId == appId && $0.part == 0 && $0.schedule == state && $0.sendAt != nil }
            .sorted { ($0.sendAt!, $0.deliveryId.uuidString.lowercased()) < ($1.sendAt!, $1.deliveryId.uuidString.lowercased()) }
            .filter { row in after.map { (row.sendAt!, row.deliveryId.uuidString.lowercased()) > ($0.sendAt, $0.deliveryId.uuidString.lowercased()) } ?? true }
        return Array(rows.prefix(limit))
    }

    func waitingSends(dueBy: Date, after: DeliveryRow?, limit: Int) throws -> [DeliveryRow] {
        try check()
        func key(_ row: DeliveryRow) -> (Date, String, String, Int) {
            (row.sendAt!, row.appId.lowercasedString, row.deliveryId.lowercasedString, row.part)
        }
        let waiting = stats.values.map(\.delivery).filter { ($0.schedule == .waiting || $0.schedule == .sending) && ($0.sendAt ?? .distantFuture) <= dueBy }
            .filter { row in after.map { key(row) > key($0) } ?? true }
        return Array(waiting.sorted { key($0) < key($1) }.prefix(limit))
    }

    /// Sets what the processors have applied: the partitions' offsets and the held app parts' rows.
    func setApplied(offsets: [PartitionKey: Int64], held: [HeldLane] = []) {
        storedOffsets = offsets
        self.held = held
    }

    func app(_ appId: UUID) throws -> AppRow? {
        try check()
        return apps[appId]
    }

    func apps(after: UUID?, limit: Int) throws -> [AppRow] {
        try check()
        let ids = apps.keys.map(\.lowercasedString).sorted().filter { $0 > (after?.lowercasedString ?? "") }
        return ids.prefix(limit).map { apps[UUID(uuidString: $0)!]! }
    }

    func apiTokens(app appId: UUID) throws -> [ApiTokenRow] {
        try check()
        return tokens[appId] ?? []
    }

    func registrationStatuses(app appId: UUID, requestIds: [UUID]) throws -> [UUID: RegistrationStatusRow] {
        try check()
        var found: [UUID: RegistrationStatusRow] = [:]
        for id in requestIds {
            if let row = statuses[id], row.appId == appId { found[id] = row }
        }
        return found
    }

    func apiToken(hash: String) throws -> ApiTokenRow? {
        try check()
        return tokens.values.lazy.flatMap { $0 }.first { $0.tokenHash == hash }
    }

    /// Oldest first, by `sentAt` then `notificationId`, as the protocol requires.
    func pendingNotifications(_ device: DeviceKey) throws -> [PendingNotificationRow] {
        try check()
        return pending.values.filter { $0.key.device == device }.sorted {
            ($0.sentAt, $0.notificationId) < ($1.sentAt, $1.notificationId)
        }
    }

    func device(_ key: DeviceKey) throws -> DeviceRow? {
        try check()
        return devices[key]
    }

    func devicePropertyCounts(app appId: UUID) throws -> [DevicePropertiesCount] {
        try check()
        return devices.values.filter { $0.appId == appId }.map { DevicePropertiesCount($0, count: 1) }
    }

    func deliveryStats(app appId: UUID, deliveryId: UUID) throws -> DeliveryStatsRow? {
        try check()
        return stats[NotificationKey(appId: appId, notificationId: deliveryId.uuidString.lowercased())]
    }

    func userSettings(app appId: UUID, userId: String) throws -> UserSettingsRow? {
        try check()
        return userSettingsRows[UserKey(appId: appId, userId: userId)]
    }

    func seed(userSettings row: UserSettingsRow) { userSettingsRows[UserKey(appId: row.appId, userId: row.userId)] = row }

    func delivery(app appId: UUID, deliveryId: UUID) throws -> DeliveryRow? {
        try deliveryStats(app: appId, deliveryId: deliveryId)?.delivery
    }

    func deliveryOutcomes(app appId: UUID, deliveryId: UUID, outcome: DeliveryOutcome?, after: Int?,
                          limit: Int) throws -> [DeliveryOutcomeRow] {
        try check()
        return outcomes.filter {
            $0.appId == appId && $0.deliveryId == deliveryId && (outcome == nil || $0.outcome == outcome) && $0.messageIndex > (after ?? -1)
        }.sorted { $0.messageIndex < $1.messageIndex }.prefix(limit).map { $0 }
    }

    func createdAt() -> Date { Date(timeIntervalSince1970: 0) }

    func adminTokens(after: UUID?, limit: Int) throws -> [AdminTokenRow] {
        try check()
        return adminTokens.values.filter { $0.adminTokenId.lowercasedString > (after?.lowercasedString ?? "") }
            .sorted { $0.adminTokenId.lowercasedString < $1.adminTokenId.lowercasedString }.prefix(limit).map { $0 }
    }

    func idempotencyKey(scope: String, key: String) throws -> IdempotencyKeyRow? {
        try check()
        return idempotencyKeys[scope + "\n" + key]
    }

    func seed(idempotencyKey row: IdempotencyKeyRow) { idempotencyKeys[row.scope + "\n" + row.key] = row }

    func adminToken(id: UUID) throws -> AdminTokenRow? {
        try check()
        return adminTokens[id]
    }

    func adminToken(hash: String) throws -> AdminTokenRow? {
        try check()
        return adminTokens.values.first { $0.tokenHash == hash }
    }

    /// The filters as the stores apply them, newest first.
    func auditEntries(_ query: AuditQuery) throws -> [AuditEntryRow] {
        try check()
        auditQueries.append(query)
        func key(_ row: AuditEntryRow) -> (Int64, String) { (AuditCursor(row).atMillis, row.commandId.lowercasedString) }
        return audit.filter { row in
            if let app = query.appId, row.appId != app { return false }
            switch query.actor {
            case .bootstrap?: if row.actorId != nil || row.actorName != AdminActor.bootstrapName { return false }
            case .token(let id)?: if row.actorId != id { return false }
            case nil: break
            }
            if let type = query.type, row.type != type { return false }
            if let since = query.since, row.at < since { return false }
            if let until = query.until, row.at >= until { return false }
            if let before = query.before, key(row) >= (before.atMillis, before.commandId.lowercasedString) { return false }
            return true
        }.sorted { key($0) > key($1) }.prefix(query.limit).map { $0 }
    }
}
