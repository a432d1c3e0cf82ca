import Contracts
import Foundation

/// A store that runs `StoreRead`s: all it does for a read is render it, bind its values and
/// decode its rows. Ingest's reads and the inspection reads are written once, here, over it.
public protocol ReadRunner: Sendable {
    /// Every row of `read`, in one snapshot.
    func rows<Row: ReadRow>(_ read: StoreRead<Row>) async throws -> [Row]
}

extension ReadRunner {
    public func offsets(topics: [String]) async throws -> [PartitionKey: Int64] {
        try await partitions("next_offset", topics: topics)
    }

    public func eventTimes(topics: [String]) async throws -> [PartitionKey: Int64] {
        try await partitions("event_time", topics: topics)
    }

    public func heldLanes(topics: [String]) async throws -> [HeldLane] {
        let wanted = Set(topics)
        return try await rows(ReaderReads.heldLanes).compactMap(\.lane).filter { wanted.contains($0.lane.topic) }
    }

    private func partitions(_ column: String, topics: [String]) async throws -> [PartitionKey: Int64] {
        guard !topics.isEmpty else { return [:] }
        var values: [PartitionKey: Int64] = [:]
        for row in try await rows(ReaderReads.partitions(column, topics: topics)) { values[row.partition] = row.value }
        return values
    }

    public func scheduledSends(app appId: UUID, state: ScheduleState, after: (sendAt: Date, deliveryId: UUID)?,
                               limit: Int) async throws -> [DeliveryRow] {
        try await rows(ReaderReads.scheduledSends(app: appId, state: state, after: after, limit: limit))
    }

    public func waitingSends(dueBy: Date, after: DeliveryRow?, limit: Int) async throws -> [DeliveryRow] {
        try await rows(ReaderReads.waitingSends(dueBy: dueBy, after: after, limit: limit))
    }

    public func app(_ appId: UUID) async throws -> AppRow? {
        try await rows(ReaderReads.app(appId)).first
    }

    public func apps(after: UUID?, limit: Int) async throws -> [AppRow] {
        try await rows(ReaderReads.apps(after: after, limit: limit))
    }

    public func apiTokens(app appId: UUID) async throws -> [ApiTokenRow] {
        try await rows(ReaderReads.apiTokens(app: appId))
    }

    public func apiToken(hash: String) async throws -> ApiTokenRow? {
        try await rows(ReaderReads.apiToken(hash: hash)).first
    }

    public func adminTokens(after: UUID?, limit: Int) async throws -> [AdminTokenRow] {
        try await rows(ReaderReads.adminTokens(after: after, limit: limit))
    }

    public func adminToken(id: UUID) async throws -> AdminTokenRow? {
        try await rows(ReaderReads.adminToken(id: id)).first
    }

    public func adminToken(hash: String) async throws -> AdminTokenRow? {
        try await rows(ReaderReads.adminToken(hash: hash)).first
    }

    public func idempotencyKey(scope: String, key: String) async throws -> IdempotencyKeyRow? {
        try await rows(ReaderReads.idempotencyKey(scope: scope, key: key)).first
    }

    public func auditEntries(_ query: AuditQuery) async throws -> [AuditEntryRow] {
        try await rows(ReaderReads.auditEntries(query))
    }

    public func devices(app appId: UUID, user userId: String) async throws -> [DeviceRow] {
        try await rows(ReaderReads.devices(app: appId, user: userId))
    }

    public func device(_ key: DeviceKey) async throws -> DeviceRow? {
        try await rows(ReaderReads.device(key)).first
    }

    public func registrationStatuses(app appId: UUID, requestIds: [UUID]) async throws -> [UUID: RegistrationStatusRow] {
        guard !requestIds.isEmpty else { return [:] }
        var statuses: [UUID: RegistrationStatusRow] = [:]
        for status in try await rows(ReaderReads.registrationStatuses(app: appId, requestIds: requestIds)) {
            statuses[status.requestId] = status
        }
        return statuses
    }

    public func pendingNotifications(_ device: DeviceKey) async throws -> [PendingNotificationRow] {
        try await rows(ReaderReads.pendingNotifications(device))
    }

    public func userSettings(app appId: UUID, userId: String) async throws -> UserSettingsRow? {
        try await rows(StoreRead<UserSettingsRow>("WHERE app_id = \(appId) AND user_id = \(userId) AND part = 0",
                                                  firstColumnIsFirstValue: true)).first
    }

    public func delivery(app appId: UUID, deliveryId: UUID) async throws -> DeliveryRow? {
        DeliveryRow.summed(try await rows(ReaderReads.delivery(app: appId, deliveryId: deliveryId)))
    }

    public func devices(app appId: UUID, after: String?, limit: Int, having: DeviceNames) async throws -> [DeviceRow] {
        try await rows(StateReads.devicePage(app: appId, after: after, limit: limit, having: having))
    }

    public func deviceCount(app appId: UUID, name: DeviceName, upTo limit: Int) async throws -> Int {
        Int(try await rows(StateReads.deviceCount(app: appId, name: name, upTo: limit)).first?.value ?? 0)
    }

    public func devicePropertyCounts(app appId: UUID) async throws -> [DevicePropertiesCount] {
        try await rows(ReaderReads.devicePropertyCounts(app: appId))
    }

    public func deliveryStats(app appId: UUID, deliveryId: UUID) async throws -> DeliveryStatsRow? {
        DeliveryStatsRow(parts: try await rows(ReaderReads.deliveryStats(app: appId, deliveryId: deliveryId)))
    }

    public func deliveryOutcomes(app appId: UUID, deliveryId: UUID, outcome: DeliveryOutcome?, after: Int?,
                                 limit: Int) async throws -> [DeliveryOutcomeRow] {
        try await rows(ReaderReads.deliveryOutcomes(app: appId, deliveryId: deliveryId, outcome: outcome, after: after, limit: limit))
    }

    public func outboxJob(_ id: String) async throws -> OutboxJob? {
        try await rows(ReaderReads.outboxJob(id)).first
    }

    public func outboxJobs(after id: String?, limit: Int) async throws -> [OutboxJob] {
        guard limit > 0 else { return [] }
        return try await rows(ReaderReads.outboxJobs(after: id, limit: limit))
    }

    public func nextOutboxDue() async throws -> Date? {
        try await rows(ReaderReads.nextOutboxDue).first?.value.map(ProjectionValues.date(millis:))
    }
}
