import Foundation
import WireCodec

/// A progress mark: a record a processor appends to a command partition that has nothing new,
/// stating that the partition's event time has reached `at`. It changes no state; it only lets
/// the commands of other partitions up to that time be decided, because every record after it
/// counts as no earlier than it (docs/ARCHITECTURE.md#state-is-a-function-of-the-log).
///
/// Its envelope is a command's, with an empty payload:
/// `{"v":1,"type":"log.progress-mark","id":"<uuid>","at":"<RFC 3339, ms>","payload":{}}`.
public enum ProgressMark {
    public static let type = "log.progress-mark"
    public static let version = 1

    /// The (empty) payload.
    public struct Payload: Codable, Sendable, Equatable {
        public init() {}
    }

    /// The value of a mark at `at`.
    public static func value(at: Date, id: UUID = .random()) -> Data {
        // Encoding a fixed shape of a UUID and a date cannot fail.
        (try? WireJSON.encoder().encode(Envelope(v: version, type: type, id: id, at: at, payload: Payload()))) ?? Data()
    }

    /// The headers of a mark.
    public static var headers: RecordHeaders { RecordHeaders(type: type, version: version) }

    /// The time a mark's value states; nil when `value` is not a mark this code reads.
    public static func at(in value: Data) -> Date? {
        guard let envelope = try? WireJSON.decoder().decode(Envelope<Payload>.self, from: value),
              envelope.type == type, envelope.v <= version else { return nil }
        return envelope.at
    }
}

/// Event times are counted in milliseconds since 1970, the precision of an envelope's `at`
/// (docs/ARCHITECTURE.md#state-is-a-function-of-the-log).
public enum EventTime {
    public static func milliseconds(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded()) }
    public static func date(_ milliseconds: Int64) -> Date { Date(timeIntervalSince1970: Double(milliseconds) / 1000) }
}
