import Foundation
import WireCodec

/// What a device reports about a notification. The raw values are the tracking SDK's action codes.
public enum TrackingAction: Int, Codable, Sendable, CaseIterable, Comparable {
    /// The app was opened from the notification (`"1"`).
    case open = 1
    /// The notification was clicked or dismissed (`"2"`).
    case click = 2
    /// The notification reached the device's notification centre (`"7"`).
    case impression = 7

    public static func < (a: TrackingAction, b: TrackingAction) -> Bool { a.rawValue < b.rawValue }
}

extension TrackingAction: WireDecodable {}

/// One device's report: its `_mId` (the broadlogId) and what happened.
///
/// On the wire a pair `["<broadlogId>", <action code>]` rather than an object: a command
/// carries up to 1000 of them, and the pair is half the bytes and a third of the decoding
/// time of `{"broadlogId": …, "action": …}`.
public struct TrackingEvent: Codable, Sendable, Equatable {
    public var broadlogId: String
    public var action: TrackingAction

    public init(broadlogId: String, action: TrackingAction) {
        self.broadlogId = broadlogId
        self.action = action
    }

    public init(from decoder: any Decoder) throws {
        var pair = try decoder.unkeyedContainer()
        broadlogId = try pair.decode(String.self)
        action = try pair.decode(TrackingAction.self)
        guard pair.isAtEnd else {
            throw DecodingError.dataCorruptedError(in: pair, debugDescription: "a tracking event is [broadlogId, action]")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var pair = encoder.unkeyedContainer()
        try pair.encode(broadlogId)
        try pair.encode(action)
    }
}

extension TrackingEvent: WireDecodable {
    /// The pair `[broadlogId, action]`, as `init(from:)` reads it.
    public init?(wire reader: inout WireReader) {
        guard reader.consume("["), let broadlogId = String(wire: &reader), reader.consume(","),
              let action = TrackingAction(wire: &reader), reader.consume("]") else { return nil }
        self.init(broadlogId: broadlogId, action: action)
    }
}

/// The tracking events of one request that concern one delivery
/// (`POST /v1/apps/{id}/tracking`). A request reporting on several deliveries becomes one
/// command per delivery, in the order their first events appeared.
///
/// Keyed by app, like every command of an app (docs/ARCHITECTURE.md#keys-and-ordering): all events
/// of a delivery are applied by one processor, in order, so deduplicating them needs no
/// coordination. Whether the delivery
/// exists, had tracking on, and sent the broadlogId is decided by the processor, not here: the
/// events may legitimately be applied before the send they report on.
public struct TrackingReported: AppScopedCommand, Equatable {
    public static let type = CommandType.trackingReported
    public static let topic = CommandTopic.tracking

    @LowercaseUUID public var mobileAppId: UUID
    /// The `_dId` the devices received.
    @LowercaseUUID public var deliveryId: UUID
    public var events: [TrackingEvent]
    /// True when ingest held the deployment's key: the reported ids are checked against keyed
    /// message ids only (`MessageIdKeys`), which nobody can make without the key. Nil (absent:
    /// logs from before keyed ids, or an ingest without the key): against the unkeyed ids.
    public var keyedIds: Bool?

    public init(mobileAppId: UUID, deliveryId: UUID, events: [TrackingEvent], keyedIds: Bool? = nil) {
        self.mobileAppId = mobileAppId
        self.deliveryId = deliveryId
        self.events = events
        self.keyedIds = keyedIds
    }

    /// Whether the reported ids must be keyed ones.
    public var idsAreKeyed: Bool { keyedIds == true }

    /// Each event goes to the part of its message index (`AppParts.messageIndex`), read from the
    /// broadlogId's leading decimal digits; one whose id has no index goes to part 0, which
    /// refuses it as a broadlogId the delivery never sent.
    public func split(into parts: AppParts) -> [(part: Int, command: TrackingReported)] {
        guard parts.count > 1 else { return [(0, self)] }
        var byPart: [Int: [TrackingEvent]] = [:]
        for event in events { byPart[Self.part(of: event.broadlogId, parts: parts), default: []].append(event) }
        if byPart.isEmpty { byPart[0] = [] }
        return byPart.keys.sorted().map { ($0, TrackingReported(mobileAppId: mobileAppId, deliveryId: deliveryId, events: byPart[$0]!,
                                                                  keyedIds: keyedIds)) }
    }

    private static func part(of broadlogId: String, parts: AppParts) -> Int {
        guard let dash = broadlogId.utf8.firstIndex(of: UInt8(ascii: "-")),
              let index = Int(Substring(broadlogId.utf8[..<dash])), index >= 0 else { return 0 }
        let part = AppParts.part(ofMessageIndex: index)
        return part < parts.count ? part : 0
    }
}

extension TrackingReported: WireDecodable {
    private enum Key: String, CaseIterable { case mobileAppId, deliveryId, events, keyedIds }
    private static let keys = WireKeys<Key>()

    public init?(wire reader: inout WireReader) {
        var mobileAppId: UUID?, deliveryId: UUID?, events: [TrackingEvent]?, keyedIds: Bool?
        guard reader.object(Self.keys, { reader, key in
            switch key {
            case .mobileAppId: reader.read(&mobileAppId)
            case .deliveryId: reader.read(&deliveryId)
            case .events: reader.read(&events)
            case .keyedIds: reader.readOptional(&keyedIds)
            }
        }), let mobileAppId, let deliveryId, let events else { return nil }
        self.init(mobileAppId: mobileAppId, deliveryId: deliveryId, events: events, keyedIds: keyedIds)
    }
}

extension TrackingReported: HandWrittenCommand {
    public func writePayload(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("deliveryId")
        writer.uuid(deliveryId)
        writer.key("events")
        writer.beginArray()
        for event in events {
            writer.beginArray()
            writer.string(event.broadlogId)
            writer.int(event.action.rawValue)
            writer.endArray()
        }
        writer.endArray()
        writer.field("keyedIds", keyedIds)
        writer.key("mobileAppId")
        writer.uuid(mobileAppId)
        writer.endObject()
    }
}
