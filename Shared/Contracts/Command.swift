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
    case userIdentityChanged = "admin.user-identity-changed"
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

/// A command about one app. Every command of an app shares one record key, the app's id, so
/// that an app's commands land in one partition index of every command topic (the topics have
/// the same partition count): that index is the app's *shard*, and one processor applies it
/// alone (docs/ARCHITECTURE.md#scale-out). No decision about an app depends on another app's
/// commands, so shards are applied side by side and the state is still a function of the log.
public protocol AppScopedCommand: Command {
    var mobileAppId: UUID { get }
    /// The command for each part of its app that it concerns, when the app is split into
    /// `parts` (docs/ARCHITECTURE.md#one-app-in-parts). By default every part: each keeps its own
    /// view of the app and decides for the devices it holds.
    func split(into parts: AppParts) -> [(part: Int, command: Self)]
}

extension AppScopedCommand {
    public var recordKey: String { RecordKey.app(mobileAppId) }

    public func split(into parts: AppParts) -> [(part: Int, command: Self)] { parts.all.map { ($0, self) } }
}

/// A command about one device: its token's part alone decides it.
public protocol DeviceScopedCommand: AppScopedCommand {
    var deviceToken: String { get }
}

extension DeviceScopedCommand {
    public func split(into parts: AppParts) -> [(part: Int, command: Self)] { [(parts.part(ofToken: deviceToken), self)] }
}

/// Record keys.
public enum RecordKey {
    public static func app(_ app: UUID) -> String { app.lowercasedString }
    /// A named admin token's issue and revocation share a key, so they stay in order.
    public static func adminToken(_ id: UUID) -> String { "admin-token:\(id.lowercasedString)" }

    /// The partition a key lands in, of a topic of `partitions` partitions: librdkafka's default
    /// partitioner (`consistent_random`), the CRC-32 of the key's bytes modulo the count.
    public static func partition(of key: String, partitions: Int) -> Int32 {
        Int32(CRC32.checksum(key.utf8) % UInt32(max(1, partitions)))
    }
}

/// CRC-32 (IEEE 802.3, as zlib and librdkafka compute it).
public enum CRC32 {
    private static let table: [UInt32] = (0..<256).map { n in
        var c = UInt32(n)
        for _ in 0..<8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }

    public static func checksum(_ bytes: some Sequence<UInt8>) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for b in bytes { crc = table[Int((crc ^ UInt32(b)) & 0xFF)] ^ (crc >> 8) }
        return crc ^ 0xFFFF_FFFF
    }
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
    /// The part of its app the command is for (`AppParts`): 0 unless the app is split.
    public var part: Int
    /// The parts its app is split into.
    public var parts: AppParts

    /// The records of `command`: one for each part of its app it concerns
    /// (`AppScopedCommand.split`), sharing the command's id; one record, part 0, for a command
    /// about no app.
    public static func parts<C: Command>(of command: C, parts: AppParts, topics: Topics, id: UUID = .random(), at: Date = Date(),
                                         encoder: JSONEncoder) throws -> [EncodedCommand] {
        guard parts.count > 1, let scoped = command as? any AppScopedCommand else {
            return [try EncodedCommand(command, topics: topics, id: id, at: at, encoder: encoder)]
        }
        return try Self.split(scoped, parts: parts, topics: topics, id: id, at: at, encoder: encoder)
    }

    private static func split<C: AppScopedCommand>(_ command: C, parts: AppParts, topics: Topics, id: UUID, at: Date,
                                                   encoder: JSONEncoder) throws -> [EncodedCommand] {
        try command.split(into: parts).map {
            try EncodedCommand($0.command, topics: topics, id: id, at: at, part: $0.part, parts: parts, encoder: encoder)
        }
    }

    /// Wraps `command` in an envelope and encodes it.
    public init<C: Command>(_ command: C, topics: Topics, id: UUID = .random(), at: Date = Date(), part: Int = 0,
                            parts: AppParts = .one, encoder: JSONEncoder) throws {
        self.at = at
        self.part = part
        self.parts = parts
        self.topic = C.topic.name(in: topics)
        self.key = command.recordKey
        self.type = C.type.rawValue
        self.version = C.version
        if let command = command as? any HandWrittenCommand {
            self.value = command.envelope(id: id, at: at, part: part)
        } else {
            self.value = try encoder.encode(Envelope(v: C.version, type: C.type.rawValue, id: id, at: at, part: part, payload: command))
        }
    }

    /// The partition the command goes to, of a topic of `partitions` partitions: its key's
    /// (`RecordKey.partition`), moved on by its part (`AppParts.partition`).
    public func partition(partitions: Int) -> Int32 {
        parts.partition(key: key, part: part, partitions: partitions)
    }

    /// The partition a producer must be told for this record: nil for part 0, whose key leads the
    /// producer's partitioner to it, as before parts; else `partition(partitions:)`.
    public func assignedPartition(partitions: Int) -> Int32? {
        part == 0 ? nil : partition(partitions: partitions)
    }
}

/// The parts every app is split into, so that several processors share one large app
/// (docs/ARCHITECTURE.md#one-app-in-parts). A device token is in one part for good
/// (`part(ofToken:)`); an app's parts are spread over the partitions from its key's
/// (`partition(key:part:partitions:)`), so that they are on different shards. With one part (the
/// default) the log is what it was before parts.
public struct AppParts: Sendable, Hashable, CustomStringConvertible {
    /// How many parts: at least 1; more than the command topics' partitions share shards.
    public let count: Int

    public static let one = AppParts(1)

    public init(_ count: Int) {
        precondition(count >= 1, "an app has at least one part")
        self.count = count
    }

    /// The part that holds the device of this token: the CRC-32 of its bytes modulo the count.
    public func part(ofToken token: String) -> Int {
        count == 1 ? 0 : Int(CRC32.checksum(token.utf8) % UInt32(count))
    }

    /// Every part, in order.
    public var all: Range<Int> { 0..<count }

    /// The partition of a command with this key and part: its key's, moved on by the part times
    /// the partitions over the parts. The parts are spread evenly, so that any contiguous range of
    /// shards, as a consumer group's range assignment hands its members, holds as few of one
    /// app's parts as it can.
    public func partition(key: String, part: Int, partitions: Int) -> Int32 {
        let total = max(1, partitions)
        let stride = max(1, total / count)
        return Int32((Int(RecordKey.partition(of: key, partitions: total)) + part * stride) % total)
    }

    public var description: String { "\(count) part\(count == 1 ? "" : "s")" }

    /// A push's message index within its delivery names its part: part × `indexStride` + its
    /// place among the part's devices. Part 0's indexes are the places themselves, as before
    /// parts; the part of an index, and whether it is within its part's sent count, need no part
    /// count.
    public static let indexStride = 1_000_000_000

    /// The message index of the device at `place` among the devices part `part` sent to.
    public static func messageIndex(place: Int, part: Int) -> Int { part * indexStride + place }

    /// The part a message index is of.
    public static func part(ofMessageIndex index: Int) -> Int { index / indexStride }

    /// The place a message index has among its part's devices.
    public static func place(ofMessageIndex index: Int) -> Int { index % indexStride }
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
