import Foundation
import Projections

/// A part of a changelog entry as a record of the changelog topic: keyed by the lineage, its
/// value the entry's sequence number (8 bytes, big-endian), the part's index and the number of
/// parts (4 bytes each), then the part's bytes. An entry larger than `partBytes` (a large
/// fan-out's pending rows) is split so that every record stays well under the broker's
/// `message.max.bytes` (1 MB by default).
public struct ChangelogRecord: Sendable, Equatable {
    public static let partBytes = 512 * 1024
    static let headerBytes = 16

    public var seq: Int64
    public var part: Int
    public var parts: Int
    public var bytes: ArraySlice<UInt8>

    public init(seq: Int64, part: Int, parts: Int, bytes: ArraySlice<UInt8>) {
        self.seq = seq
        self.part = part
        self.parts = parts
        self.bytes = bytes
    }

    /// The records of one entry, in order.
    public static func split(seq: Int64, payload: [UInt8]) -> [ChangelogRecord] {
        let parts = max(1, (payload.count + partBytes - 1) / partBytes)
        return (0..<parts).map { part in
            let start = part * partBytes
            return ChangelogRecord(seq: seq, part: part, parts: parts, bytes: payload[start..<min(start + partBytes, payload.count)])
        }
    }

    public var value: Data {
        var data = Data(capacity: Self.headerBytes + bytes.count)
        withUnsafeBytes(of: UInt64(bitPattern: seq).bigEndian) { data.append(contentsOf: $0) }
        withUnsafeBytes(of: UInt32(part).bigEndian) { data.append(contentsOf: $0) }
        withUnsafeBytes(of: UInt32(parts).bigEndian) { data.append(contentsOf: $0) }
        data.append(contentsOf: bytes)
        return data
    }

    /// Reads a record's value; nil when it is too short or its part numbers make no sense.
    public init?(value: Data) {
        guard value.count >= Self.headerBytes else { return nil }
        let bytes = [UInt8](value)
        func integer(_ at: Int, _ count: Int) -> UInt64 {
            bytes[at..<at + count].reduce(0) { $0 << 8 | UInt64($1) }
        }
        let seq = Int64(bitPattern: integer(0, 8)), part = Int(integer(8, 4)), parts = Int(integer(12, 4))
        guard seq > 0, parts > 0, part < parts else { return nil }
        self.init(seq: seq, part: part, parts: parts, bytes: bytes[Self.headerBytes...])
    }
}
