import Contracts
import Foundation
import Projections

/// A decoded command with the envelope facts the handlers need. Handlers use the envelope's
/// `id` and `at` rather than the clock, so a replay decides exactly what the first run did.
struct ProcessorCommand: Sendable {
    enum Body: Sendable {
        case appCreated(AppCreated)
        case apiTokenIssued(ApiTokenIssued)
        case apiTokenRevoked(ApiTokenRevoked)
        case appSettingsChanged(AppSettingsChanged)
        case deviceRegistrationRequested(DeviceRegistrationRequested)
        case deviceCleanupRequested(DeviceCleanupRequested)
        case notificationRequested(NotificationRequested)
        case notificationAcknowledged(NotificationAcknowledged)
        case trackingReported(TrackingReported)
    }

    var id: UUID
    var at: Date
    var body: Body

    var type: CommandType {
        switch body {
        case .appCreated: .appCreated
        case .apiTokenIssued: .apiTokenIssued
        case .apiTokenRevoked: .apiTokenRevoked
        case .appSettingsChanged: .appSettingsChanged
        case .deviceRegistrationRequested: .deviceRegistrationRequested
        case .deviceCleanupRequested: .deviceCleanupRequested
        case .notificationRequested: .notificationRequested
        case .notificationAcknowledged: .notificationAcknowledged
        case .trackingReported: .trackingReported
        }
    }

    /// Where the command goes in its batch: admin commands first, so that an app created a
    /// moment before its first registration is known to it when both share a batch; tracking
    /// last, so that it sees the deliveries sent in the same batch. The rest keep their
    /// consumed order (a partition keeps per-key order).
    var stage: Int {
        switch body {
        case .appCreated, .apiTokenIssued, .apiTokenRevoked, .appSettingsChanged: 0
        case .trackingReported: 2
        default: 1
        }
    }

    /// Adds the rows this command needs to decide its outcome.
    func addNeeds(to query: inout StateQuery) {
        switch body {
        case .appCreated(let c): query.appIds.insert(c.mobileAppId)
        case .apiTokenIssued(let c): query.appIds.insert(c.mobileAppId)
        case .apiTokenRevoked(let c): query.appIds.insert(c.mobileAppId)
        case .appSettingsChanged(let c): query.appIds.insert(c.mobileAppId)
        case .deviceRegistrationRequested(let c):
            query.appIds.insert(c.mobileAppId)
            query.deviceKeys.insert(DeviceKey(appId: c.mobileAppId, deviceToken: c.deviceToken))
            // The user's devices, for the per-user cap.
            query.userKeys.insert(UserKey(appId: c.mobileAppId, userId: c.userId))
        case .deviceCleanupRequested(let c):
            query.appIds.insert(c.mobileAppId)
            if let token = c.deviceToken {
                query.deviceKeys.insert(DeviceKey(appId: c.mobileAppId, deviceToken: token))
            } else {
                query.userKeys.insert(UserKey(appId: c.mobileAppId, userId: c.userId))
            }
        case .notificationRequested(let c):
            query.appIds.insert(c.mobileAppId)
            for user in c.target.userIds { query.userKeys.insert(UserKey(appId: c.mobileAppId, userId: user)) }
            for token in c.target.deviceTokens { query.deviceKeys.insert(DeviceKey(appId: c.mobileAppId, deviceToken: token)) }
            query.trackedDeliveries.insert(c.deliveryId)
            if c.managed {
                // Badges: a managed send stamps each device's pending count.
                query.ackedNotifications.insert(NotificationKey(appId: c.mobileAppId, notificationId: c.notificationId))
                for user in c.target.userIds { query.pendingCountUsers.insert(UserKey(appId: c.mobileAppId, userId: user)) }
                for token in c.target.deviceTokens { query.pendingCountDevices.insert(DeviceKey(appId: c.mobileAppId, deviceToken: token)) }
            }
        case .notificationAcknowledged(let c):
            query.appIds.insert(c.mobileAppId)
            query.deviceKeys.insert(DeviceKey(appId: c.mobileAppId, deviceToken: c.deviceToken))
            query.pendingCountDevices.insert(DeviceKey(appId: c.mobileAppId, deviceToken: c.deviceToken))
            query.pendingKeys.insert(PendingKey(appId: c.mobileAppId, deviceToken: c.deviceToken, notificationId: c.notificationId))
        case .trackingReported(let c):
            query.deliveryIds.insert(c.deliveryId)
        }
    }
}

/// Turns consumed records into commands. Unknown types and versions are reported, never fatal.
struct CommandDecoder {
    enum Outcome {
        case command(ProcessorCommand)
        case unknownType(String)
        case unsupportedVersion(type: String, version: Int)
        case malformed(type: String, error: String)

        /// One line for an operator: the command's type and id, or why it could not be read.
        var summary: String {
            switch self {
            case .command(let c): "\(c.type.rawValue) \(c.id.uuidString.lowercased())"
            case .unknownType(let t): "unknown type \(t)"
            case .unsupportedVersion(let t, let v): "\(t) of unsupported version \(v)"
            case .malformed(let t, let e): "malformed \(t): \(e)"
            }
        }
    }

    private let decoder = WireJSON.decoder()
    private static let escapedNUL = DecodingError.dataCorrupted(.init(
        codingPath: [], debugDescription: "a string holds the NUL character (\\u0000), which no projection store can hold"))

    func decode(type typeName: String?, version: Int?, value: Data) -> Outcome {
        guard let typeName, let type = CommandType(rawValue: typeName) else { return .unknownType(typeName ?? "<none>") }
        let version = version ?? 1
        do {
            switch type {
            case .appCreated: return try wrap(AppCreated.self, version, value, ProcessorCommand.Body.appCreated)
            case .apiTokenIssued: return try wrap(ApiTokenIssued.self, version, value, ProcessorCommand.Body.apiTokenIssued)
            case .apiTokenRevoked: return try wrap(ApiTokenRevoked.self, version, value, ProcessorCommand.Body.apiTokenRevoked)
            case .appSettingsChanged: return try wrap(AppSettingsChanged.self, version, value, ProcessorCommand.Body.appSettingsChanged)
            case .deviceRegistrationRequested:
                return try wrap(DeviceRegistrationRequested.self, version, value, ProcessorCommand.Body.deviceRegistrationRequested)
            case .deviceCleanupRequested:
                return try wrap(DeviceCleanupRequested.self, version, value, ProcessorCommand.Body.deviceCleanupRequested)
            case .notificationRequested:
                return try wrap(NotificationRequested.self, version, value, ProcessorCommand.Body.notificationRequested)
            case .notificationAcknowledged:
                return try wrap(NotificationAcknowledged.self, version, value, ProcessorCommand.Body.notificationAcknowledged)
            case .trackingReported:
                return try wrap(TrackingReported.self, version, value, ProcessorCommand.Body.trackingReported)
            }
        } catch {
            return .malformed(type: typeName, error: String(describing: error))
        }
    }

    private func wrap<C: Command>(_: C.Type, _ version: Int, _ value: Data, _ make: (C) -> ProcessorCommand.Body) throws -> Outcome {
        guard version <= C.version else { return .unsupportedVersion(type: C.type.rawValue, version: version) }
        // The hottest commands are read by hand; whatever that reading is unsure of, JSONDecoder decides.
        // (It takes no escapes, so only the records it leaves to JSONDecoder need the NUL check.)
        let envelope: Envelope<C>
        if let fast = FastEnvelope.decode(C.self, from: value) {
            envelope = fast
        } else {
            guard !value.withUnsafeBytes({ JSONEscapes.containNUL($0) }) else { throw Self.escapedNUL }
            envelope = try decoder.decode(Envelope<C>.self, from: value)
        }
        guard envelope.v <= C.version else { return .unsupportedVersion(type: C.type.rawValue, version: envelope.v) }
        return .command(ProcessorCommand(id: envelope.id, at: envelope.at, body: make(envelope.payload)))
    }
}
