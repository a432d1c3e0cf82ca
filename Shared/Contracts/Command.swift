import Foundation
import WireCodec

/// The type names of every command Pushline writes to Kafka. The raw value is the envelope's
/// `type` and the record header `type`.
public enum CommandType: String, Sendable, CaseIterable, Codable {
    case appCreated = "admin.app-created"
    case apiTokenIssued = "admin.api-token-issued"
    case apiTokenRevoked = "admin.api-token-revoked"
    case appSettingsChanged = "admin.app-settings-changed"
    case pushCredentialsSet = "admin.push-credentials-set"
    case pushCredentialsRemoved = "admin.push-credentials-removed"
    case deviceRegistrationRequested = "registration.device-registration-requested"
    case deviceCleanupRequested = "registration.device-cleanup-requested"
    case notificationRequested = "notification.requested"
    case notificationAcknowledged = "notification.acknowledged"
    case trackingReported = "tracking.reported"
    case deliveryResultReported = "delivery.result-reported"
    case adminTokenIssued = "admin.admin-token-issued"
    case adminTokenRevoked = "admin.admin-token-revoked"
}

/// Which command topic a command travels on.
public enum CommandTopic: Sendable {
    case admin, registration, notification, tracking, delivery

    public func name(in topics: Topics) -> String {
        switch self {
        case .admin: topics.admin
        case .registration: topics.registration
        case .notification: topics.notification
        case .tracking: topics.tracking
        case .delivery: topics.delivery
        }
    }
}

/// A command payload: knows its type name, current version, topic and record key.
public protocol Command: Codable, Sendable {
    static var type: CommandType { get }
    /// The payload version this code writes; readers skip versions they do not know.
    static var version: Int { get }
    static var topic: CommandTopic { get }
    /// The record key: all commands that must stay ordered share a key.
    var recordKey: String { get }
}

extension Command {
    public static var version: Int { 1 }
}

/// Record keys. Registration commands are keyed by (app, user) so that every command for one
/// user of one app lands in one partition, in order.
public enum RecordKey {
    public static func user(app: UUID, user: String) -> String { "\(app.lowercasedString)/\(user)" }
    public static func app(_ app: UUID) -> String { app.lowercasedString }
    public static func delivery(app: UUID, delivery: UUID) -> String {
        "\(app.lowercasedString)/delivery:\(delivery.lowercasedString)"
    }
    public static func device(app: UUID, token: String) -> String { "\(app.lowercasedString)/device:\(token)" }
    /// A named admin token's issue and revocation share a key, so they stay in order.
    public static func adminToken(_ id: UUID) -> String { "admin-token:\(id.lowercasedString)" }
}

/// A command ready to produce: topic, key, headers and the encoded envelope.
public struct EncodedCommand: Sendable {
    public var topic: String
    public var key: String
    public var type: String
    public var version: Int
    public var value: Data
    /// The envelope's `at`.
    public var at: Date

    /// Wraps `command` in an envelope and encodes it.
    public init<C: Command>(_ command: C, topics: Topics, id: UUID = .random(), at: Date = Date(), encoder: JSONEncoder) throws {
        self.at = at
        self.topic = C.topic.name(in: topics)
        self.key = command.recordKey
        self.type = C.type.rawValue
        self.version = C.version
        if let command = command as? any HandWrittenCommand {
            self.value = command.envelope(id: id, at: at)
        } else {
            self.value = try encoder.encode(Envelope(v: C.version, type: C.type.rawValue, id: id, at: at, payload: command))
        }
    }
}

/// A command whose payload ingest writes with `JSONWriter` instead of `JSONEncoder`: the commands
/// of the high-volume routes, where the encoder's reflection was a third of ingest's CPU
/// (docs/BENCHMARKS.md, "Ingest"). The bytes are the ones `WireJSON.encoder()` writes — keys in
/// sorted order, nil fields left out — so readers cannot tell the two apart
/// (`HandWrittenCommandsTests` compares them).
///
/// Each command's `writePayload` sits beside the command, as its synthesized `Codable`
/// conformance would encode it. A field added to one of these types is added there too:
/// `HandWrittenCommandsTests.testHandWrittenCommandsAreWhatTheEncoderWrites` fails until it is.
public protocol HandWrittenCommand: Command {
    /// Writes the payload object.
    func writePayload(to writer: inout JSONWriter)
}
