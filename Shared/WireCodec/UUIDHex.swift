import Foundation

/// Hex formatting (lower case) and parsing of UUIDs without Foundation's intermediate strings
/// (and, for parsing, its `sscanf`).
public enum UUIDHex {
    /// The lower-case hex digit of a nibble.
    @inlinable @inline(__always)
    public static func digit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? 0x30 &+ nibble : 0x57 &+ nibble
    }

    /// Writes the 36 bytes of `uuid.uuidString.lowercased()` to `out` (at least 36 bytes long).
    @inlinable @inline(__always)
    public static func write(_ uuid: UUID, to out: UnsafeMutableBufferPointer<UInt8>) {
        withUnsafeBytes(of: uuid.uuid) { raw in
            var at = 0
            for i in 0..<16 {
                if i == 4 || i == 6 || i == 8 || i == 10 {
                    out[at] = 0x2d
                    at += 1
                }
                out[at] = digit(raw[i] >> 4)
                out[at + 1] = digit(raw[i] & 0x0f)
                at += 2
            }
        }
    }

    /// Appends the 36 bytes of `uuid.uuidString.lowercased()`, written on the stack and appended
    /// at once (not byte by byte, each append checking the array's capacity).
    @inlinable
    public static func append(_ uuid: UUID, to out: inout [UInt8]) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 36) { text in
            write(uuid, to: text)
            out.append(contentsOf: text)
        }
    }

    /// The UUID written in `text` as 36 bytes `8-4-4-4-12` of hex digits of either case, as
    /// `UUID(uuidString:)` reads it. Nil for anything else, including the few other strings that
    /// reads (its `sscanf` skips blanks and takes signs).
    @inlinable
    public static func parse(_ text: UnsafeBufferPointer<UInt8>) -> UUID? {
        guard text.count == 36, text[8] == 0x2d, text[13] == 0x2d, text[18] == 0x2d, text[23] == 0x2d else { return nil }
        // The 32 digits into two 64-bit halves, written out big-endian: the UUID's bytes in order.
        var halves: (UInt64, UInt64) = (0, 0)
        var values: UInt8 = 0  // all digit values or-ed: 16 or more when a byte was no digit
        digitValues.withUnsafeBufferPointer { digitValues in
            var at = 0
            for digit in 0..<32 {
                if at == 8 || at == 13 || at == 18 || at == 23 { at += 1 }
                let value = digitValues[Int(text[at])]
                values |= value
                if digit < 16 { halves.0 = halves.0 << 4 | UInt64(value) } else { halves.1 = halves.1 << 4 | UInt64(value) }
                at += 1
            }
        }
        guard values < 16 else { return nil }
        halves = (halves.0.bigEndian, halves.1.bigEndian)
        return withUnsafeBytes(of: halves) { UUID(uuid: $0.load(as: uuid_t.self)) }
    }

    /// The value of each byte as a hex digit of either case, 0xff for any other byte. A table:
    /// the digits of UUIDs are random, so branching on digit or letter is often mispredicted.
    @usableFromInline static let digitValues: [UInt8] = (0...255).map { byte in
        switch UInt8(byte) {
        case 0x30...0x39: UInt8(byte - 0x30)
        case 0x41...0x46: UInt8(byte - 0x37)
        case 0x61...0x66: UInt8(byte - 0x57)
        default: 0xff
        }
    }

    /// Appends the lower-case hex of `bytes`.
    @inlinable
    public static func append<Bytes: Sequence>(hex bytes: Bytes, to out: inout [UInt8]) where Bytes.Element == UInt8 {
        for byte in bytes {
            out.append(digit(byte >> 4))
            out.append(digit(byte & 0x0f))
        }
    }
}

extension UUID {
    /// `UUID(uuidString:)` for less: the 36-byte hex form is read by table, anything else by
    /// Foundation, which decides.
    @inlinable
    public init?(parsing text: String) {
        var text = text
        guard let id = text.withUTF8(UUIDHex.parse) ?? UUID(uuidString: text) else { return nil }
        self = id
    }

    /// `uuidString.lowercased()`, the form of every UUID in Pushline's wire formats, for less.
    @inlinable
    public var lowercasedString: String {
        var out = [UInt8]()
        out.reserveCapacity(36)
        UUIDHex.append(self, to: &out)
        return String(decoding: out, as: UTF8.self)
    }
}
