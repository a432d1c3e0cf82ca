import Foundation
import WireCodec

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
