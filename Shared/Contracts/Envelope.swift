import Foundation
import WireCodec

/// The versioned JSON envelope every Pushline record carries:
/// `{"v":1,"type":"…","id":"<uuid>","at":"<RFC 3339>","payload":{…}}`, and `"part":p` on the
/// command of an app's part p > 0 (`AppParts`).
///
/// The `type` and `v` are also sent as record headers so a consumer can route or skip a
/// record without decoding its body.
public struct Envelope<Payload: Codable & Sendable>: Codable, Sendable {
    public var v: Int
    public var type: String
    @LowercaseUUID public var id: UUID
    public var at: Date
    /// The part of its app the command is for (`AppParts`); absent for part 0, so that a log of
    /// apps in one part is what it was before parts.
    public var part: Int?
    public var payload: Payload

    public init(v: Int = 1, type: String, id: UUID = .random(), at: Date = Date(), part: Int = 0, payload: Payload) {
        self.v = v
        self.type = type
        self.id = id
        self.at = at
        self.part = part == 0 ? nil : part
        self.payload = payload
    }

    /// The command's part of its app: 0 unless the envelope names another.
    public var appPart: Int { part ?? 0 }
}

/// Hand-written decoding of the envelopes of the hottest commands: registrations, cleanups,
/// sends (and scheduled sends' firings), acknowledgements, tracking reports and the sender's
/// delivery outcomes. Decoding them with
/// `JSONDecoder` took a third of the processor's CPU time (outcomes: a quarter of it during a
/// broadcast's delivery).
///
/// A value it returns is exactly what `WireJSON.decoder()` decodes from the same bytes. It
/// returns nil for other command types and whenever it is not certain (escapes, unknown or
/// repeated keys, numbers other than plain integers, dates with offsets, malformed JSON…): the
/// caller then decodes with `JSONDecoder`, which decides. Each command's reader (`init?(wire:)`)
/// sits beside the command; a field added to one of these commands is an unknown key there until
/// it is read there too, so such records keep taking the fallback.
public enum FastEnvelope {
    public static func decode<C: Command>(_: C.Type, from data: Data) -> Envelope<C>? {
        // `C.type` names the payload type, so each cast is from `Envelope<C>` to itself.
        switch C.type {
        case .deviceRegistrationRequested: read(DeviceRegistrationRequested.self, data) as? Envelope<C>
        case .deviceCleanupRequested: read(DeviceCleanupRequested.self, data) as? Envelope<C>
        case .notificationAcknowledged: read(NotificationAcknowledged.self, data) as? Envelope<C>
        case .trackingReported: read(TrackingReported.self, data) as? Envelope<C>
        case .deliveryResultReported: read(DeliveryResultReported.self, data) as? Envelope<C>
        case .notificationRequested: read(NotificationRequested.self, data) as? Envelope<C>
        default: nil
        }
    }

    private static func read<P: Command & WireDecodable>(_: P.Type, _ data: Data) -> Envelope<P>? {
        data.withUnsafeBytes { Envelope<P>(whole: $0.assumingMemoryBound(to: UInt8.self)) }
    }
}

private enum EnvelopeKey: String, CaseIterable { case v, type, id, at, part, payload }
private let envelopeKeys = WireKeys<EnvelopeKey>()

extension Envelope: WireDecodable where Payload: WireDecodable {
    public init?(wire reader: inout WireReader) {
        var v: Int?, type: String?, id: UUID?, at: Date?, part: Int?, payload: Payload?
        guard reader.object(envelopeKeys, { reader, key in
            switch key {
            case .v: reader.read(&v)
            case .type: reader.read(&type)
            case .id: reader.read(&id)
            case .at: reader.read(&at)
            case .part: reader.read(&part)
            case .payload: reader.read(&payload)
            }
        }), let v, let type, let id, let at, let payload else { return nil }
        // An explicit 0 is left to JSONDecoder, which keeps it as written.
        guard part != 0 else { return nil }
        self.init(v: v, type: type, id: id, at: at, part: part ?? 0, payload: payload)
    }
}

extension HandWrittenCommand {
    /// The envelope `WireJSON.encoder()` writes around this payload, by hand (`EncodedCommand`):
    /// `{"at":…,"id":…,"part":…,"payload":…,"type":…,"v":…}`, without `part` for part 0.
    func envelope(id: UUID, at: Date, part: Int) -> Data {
        Self.envelope(id: id, at: at, part: part) { writePayload(to: &$0) }
    }

    /// The envelope around the payload `payload` writes.
    static func envelope(id: UUID, at: Date, part: Int, capacity: Int = 512, payload: (inout JSONWriter) -> Void) -> Data {
        var writer = JSONWriter(capacity: capacity)
        writer.beginObject()
        writer.key("at")
        writer.date(at)
        writer.key("id")
        writer.uuid(id)
        if part != 0 {
            writer.key("part")
            writer.int(part)
        }
        writer.key("payload")
        payload(&writer)
        writer.key("type")
        writer.string(Self.type.rawValue)
        writer.key("v")
        writer.int(Self.version)
        writer.endObject()
        return writer.data
    }
}

extension NotificationRequested {
    /// The envelope of a kept send's firing, written around the payload its delivery keeps
    /// while it waits (as `writePayload` wrote it) as it is, without reading it: the kept fields,
    /// then `firing` (true) and `wave` when given. Readers take an object's keys in any order, so
    /// it reads as the kept send with those two set. Nil when `kept` is not one object or names
    /// `firing` or `wave` itself (a key, as a string's content has every quote escaped): the
    /// caller then reads the send and writes it whole.
    public static func firingEnvelope(kept: String, wave: Date?, id: UUID, at: Date, part: Int) -> Data? {
        var kept = kept
        return kept.withUTF8 { bytes -> Data? in
            guard bytes.count > 2, bytes.first == UInt8(ascii: "{"), bytes.last == UInt8(ascii: "}"),
                  bytes.firstRange(of: Self.firingKey) == nil, bytes.firstRange(of: Self.waveKey) == nil else { return nil }
            return Self.envelope(id: id, at: at, part: part, capacity: bytes.count + 192) { writer in
                writer.appendVerbatim(bytes[..<(bytes.count - 1)])
                writer.appendVerbatim(#","firing":true"#.utf8)
                writer.endValue()
                if let wave {
                    writer.key("wave")
                    writer.date(wave)
                }
                writer.endObject()
            }
        }
    }

    private static let firingKey = Array(#""firing":"#.utf8), waveKey = Array(#""wave":"#.utf8)
}
