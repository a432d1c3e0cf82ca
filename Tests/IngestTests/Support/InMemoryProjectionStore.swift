import Contracts
import Foundation
import Projections

/// An in-memory `ProjectionStore` holding apps, tokens and registration statuses seeded by the
/// tests. It counts `commit` calls so tests can prove ingest never writes, and can be told to
/// fail every read.
actor InMemoryProjectionStore: ProjectionStore {
    /// What every read throws after `failEveryRead()`.
    struct Unavailable: Error {}

    private var apps: [UUID: AppRow] = [:]
    private var tokens: [UUID: [ApiTokenRow]] = [:]
    private var statuses: [UUID: RegistrationStatusRow] = [:]
    private var failing = false
    private(set) var commitCount = 0

    func seed(app: AppRow) { apps[app.appId] = app }
    func seed(token: ApiTokenRow) { tokens[token.appId, default: []].append(token) }
    func seed(status: RegistrationStatusRow) { statuses[status.requestId] = status }
    func failEveryRead() { failing = true }

    private func check() throws {
        if failing { throw Unavailable() }
    }

    func load(_ query: StateQuery) throws -> StateSnapshot {
        try check()
        var snapshot = StateSnapshot()
        for id in query.appIds {
            snapshot.apps[id] = apps[id]
            snapshot.tokens[id] = tokens[id] ?? []
        }
        return snapshot
    }

    func commit(mutations: [Mutation], offsets: [OffsetUpdate]) {
        commitCount += 1
    }

    func offsets(topics: [String]) -> [PartitionKey: Int64] { [:] }

    func app(_ appId: UUID) throws -> AppRow? {
        try check()
        return apps[appId]
    }

    func apiTokens(app appId: UUID) throws -> [ApiTokenRow] {
        try check()
        return tokens[appId] ?? []
    }

    func devices(app appId: UUID, user userId: String) throws -> [DeviceRow] {
        try check()
        return []
    }

    func device(_ key: DeviceKey) throws -> DeviceRow? {
        try check()
        return nil
    }

    func registrationStatuses(app appId: UUID, requestIds: [UUID]) throws -> [UUID: RegistrationStatusRow] {
        try check()
        var found: [UUID: RegistrationStatusRow] = [:]
        for id in requestIds {
            if let row = statuses[id], row.appId == appId { found[id] = row }
        }
        return found
    }

    func claimOutboxJobs(now: Date, limit: Int, leaseUntil: Date) -> [OutboxJob] { [] }
    func recordOutboxAttempt(jobId: String, result: OutboxAttemptResult) {}
    func outboxJob(_ id: String) -> OutboxJob? { nil }
    func nextOutboxDue() -> Date? { nil }
    func dump() -> String { "" }
}
