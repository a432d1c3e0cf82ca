import Contracts
import Foundation
import Projections

/// The projection rows one batch works on: loaded once from the store, then changed in memory
/// by the handlers in command order, so that later commands of the batch see the effects of
/// earlier ones. Every change is also recorded as a `Mutation` for the batch's single commit.
struct BatchState {
    private(set) var apps: [UUID: AppRow]
    private(set) var tokens: [UUID: [ApiTokenRow]]
    private(set) var devices: [DeviceKey: DeviceRow]
    private(set) var mutations: [Mutation] = []

    init(_ snapshot: StateSnapshot) {
        apps = snapshot.apps
        tokens = snapshot.tokens
        devices = snapshot.devices
    }

    /// True when the app exists in `orgId` (when given) and `tokenHash` is one of its live tokens.
    func authorizes(app appId: UUID, org orgId: UUID?, tokenHash: String) -> Bool {
        guard let app = apps[appId] else { return false }
        if let orgId, app.orgId != orgId { return false }
        return (tokens[appId] ?? []).contains { !$0.revoked && ApiTokens.constantTimeEquals($0.tokenHash, tokenHash) }
    }

    func devices(of user: UserKey) -> [DeviceRow] {
        devices.values
            .filter { $0.appId == user.appId && $0.userId == user.userId }
            .sorted { $0.deviceToken < $1.deviceToken }
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

    mutating func upsert(_ device: DeviceRow) {
        devices[device.key] = device
        mutations.append(.upsertDevice(device))
    }

    mutating func delete(_ key: DeviceKey) {
        guard devices.removeValue(forKey: key) != nil else { return }
        mutations.append(.deleteDevice(key))
    }

    mutating func record(_ status: RegistrationStatusRow) {
        mutations.append(.putRegistrationStatus(status))
    }

    mutating func enqueue(_ job: OutboxJob) {
        mutations.append(.enqueueOutbox(job))
    }
}
