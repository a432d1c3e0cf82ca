import Foundation

/// The versioned JSON envelope every Pushline record carries:
/// `{"v":1,"type":"…","id":"<uuid>","at":"<RFC 3339>","payload":{…}}`.
///
/// The `type` and `v` are also sent as record headers so a consumer can route or skip a
/// record without decoding its body.
public struct Envelope<Payload: Codable & Sendable>: Codable, Sendable {
    public var v: Int
    public var type: String
    public var id: UUID
    public var at: Date
    public var payload: Payload

    public init(v: Int = 1, type: String, id: UUID = UUID(), at: Date = Date(), payload: Payload) {
        self.v = v
        self.type = type
        self.id = id
        self.at = at
        self.payload = payload
    }
}

/// The names of the record headers that repeat the envelope's `type` and `v`.
public enum RecordHeader {
    public static let type = "type"
    public static let version = "v"
    /// The request id of the HTTP request that produced the command (for log correlation).
    public static let requestId = "request-id"
}

/// The one JSON coder setup of Pushline: RFC 3339 dates with fractional seconds.
public enum WireJSON {
    public static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(RFC3339.string(from: date))
        }
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    public static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            guard let date = RFC3339.date(from: text) else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "not an RFC 3339 date: \(text)")
            }
            return date
        }
        return decoder
    }
}

/// RFC 3339 timestamps in UTC with millisecond precision (`2026-11-22T10:00:00.123Z`).
public enum RFC3339 {
    public static func string(from date: Date) -> String {
        date.formatted(.iso8601.year().month().day().dateSeparator(.dash).time(includingFractionalSeconds: true)
            .timeSeparator(.colon).timeZone(separator: .omitted))
    }

    public static func date(from text: String) -> Date? {
        if let d = try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text) { return d }
        return try? Date.ISO8601FormatStyle().parse(text)
    }
}
