import Foundation

/// A minimal JSON writer appending UTF-8 to a byte buffer.
///
/// Push payloads are rendered once per device (100,000+ a second), where `JSONEncoder`'s
/// reflection and dictionaries cost more than the payload is worth. Commas are inserted by
/// the writer; nesting and key/value alternation are the caller's job (not checked).
public struct JSONWriter: Sendable {
    public private(set) var bytes: [UInt8]
    /// One flag is enough: a value (or a closed container) needs a comma before the next item
    /// of its container; an opened container or a written key does not.
    private var needsComma = false

    public init(capacity: Int = 1024) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    /// A writer that appends to `storage`, taking it over (`storage` is left empty): hand the
    /// bytes back with `storage = writer.bytes` once written.
    public init(appendingTo storage: inout [UInt8]) {
        bytes = []
        swap(&bytes, &storage)
    }

    /// Empties the buffer but keeps its storage, to render the next record without allocating.
    public mutating func reset() {
        bytes.removeAll(keepingCapacity: true)
        needsComma = false
    }

    public var data: Data { Data(bytes) }

    // MARK: Structure

    public mutating func beginObject() { separate(); bytes.append(0x7b); needsComma = false }
    public mutating func endObject() { bytes.append(0x7d); needsComma = true }
    public mutating func beginArray() { separate(); bytes.append(0x5b); needsComma = false }
    public mutating func endArray() { bytes.append(0x5d); needsComma = true }

    public mutating func key(_ key: String) {
        separate()
        bytes.append(0x22)
        appendEscaped(key)
        bytes.append(0x22)
        bytes.append(0x3a)
        needsComma = false
    }

    // MARK: Values

    public mutating func string(_ value: String) {
        separate()
        bytes.append(0x22)
        appendEscaped(value)
        bytes.append(0x22)
        needsComma = true
    }

    public mutating func int(_ value: Int) {
        separate()
        appendDecimal(value)
        needsComma = true
    }

    /// An integer as a JSON string of its decimal digits: FCM data and the BW keys are string maps.
    public mutating func intString(_ value: Int) {
        separate()
        bytes.append(0x22)
        appendDecimal(value)
        bytes.append(0x22)
        needsComma = true
    }

    public mutating func bool(_ value: Bool) {
        separate()
        bytes.append(contentsOf: value ? Self.trueBytes : Self.falseBytes)
        needsComma = true
    }

    public mutating func null() {
        separate()
        bytes.append(contentsOf: Self.nullBytes)
        needsComma = true
    }

    /// A UUID as a lower-case JSON string, written straight from its bytes.
    public mutating func uuid(_ value: UUID) {
        separate()
        bytes.append(0x22)
        UUIDHex.append(value, to: &bytes)
        bytes.append(0x22)
        needsComma = true
    }

    /// A date as the RFC 3339 string `WireJSON` writes (`RFC3339.string(from:)`).
    public mutating func date(_ value: Date) {
        separate()
        bytes.append(0x22)
        RFC3339.append(value, to: &bytes)
        bytes.append(0x22)
        needsComma = true
    }

    /// An array of strings.
    public mutating func strings(_ values: [String]) {
        beginArray()
        for value in values { string(value) }
        endArray()
    }

    /// A string-to-string object, its keys in the order `JSONEncoder`'s `.sortedKeys` gives.
    public mutating func object(_ value: [String: String]) {
        beginObject()
        for key in value.keys.sorted() {
            self.key(key)
            string(value[key]!)
        }
        endObject()
    }

    /// One complete JSON value that is already encoded (not checked).
    public mutating func raw<Bytes: Collection>(_ value: Bytes) where Bytes.Element == UInt8 {
        separate()
        bytes.append(contentsOf: value)
        needsComma = true
    }

    // MARK: Fields (key and value; nothing at all when the value is nil)

    public mutating func field(_ key: String, _ value: String?) {
        guard let value else { return }
        self.key(key)
        string(value)
    }

    public mutating func field(_ key: String, _ value: Int?) {
        guard let value else { return }
        self.key(key)
        int(value)
    }

    public mutating func field(_ key: String, _ value: Bool?) {
        guard let value else { return }
        self.key(key)
        bool(value)
    }

    public mutating func field(_ key: String, intString value: Int?) {
        guard let value else { return }
        self.key(key)
        intString(value)
    }

    // MARK: Splicing (for `OutboundTemplate`: bytes inside a value already opened)

    /// Appends bytes as they are, with no separator.
    mutating func appendVerbatim<Bytes: Collection>(_ value: Bytes) where Bytes.Element == UInt8 {
        bytes.append(contentsOf: value)
    }

    /// Appends the escaped content of a string, without quotes or separator.
    mutating func appendEscapedContent(_ value: String) {
        appendEscaped(value)
    }

    /// Appends the message id `index` of `series`, without quotes or separator.
    mutating func appendMessageId(_ series: MessageId.Series, index: Int) {
        series.append(index: index, to: &bytes)
    }

    /// Marks the written value as complete (the template's bytes end with one).
    mutating func endValue() {
        needsComma = true
    }

    // MARK: Internals

    private static let trueBytes: [UInt8] = Array("true".utf8)
    private static let falseBytes: [UInt8] = Array("false".utf8)
    private static let nullBytes: [UInt8] = Array("null".utf8)

    @inline(__always)
    private mutating func separate() {
        if needsComma { bytes.append(0x2c) }
    }

    private mutating func appendDecimal(_ value: Int) {
        if value < 0 { bytes.append(0x2d) }
        var magnitude = value.magnitude
        let start = bytes.count
        repeat {
            bytes.append(UInt8(truncatingIfNeeded: 0x30 &+ magnitude % 10))
            magnitude /= 10
        } while magnitude > 0
        bytes[start...].reverse()
    }

    /// RFC 8259 escaping of `"`, `\` and the control characters; `/` and non-ASCII pass as is.
    private mutating func appendEscaped(_ string: String) {
        // `withUTF8` gives the native string's own buffer (no copy): scanning it is several
        // times faster than iterating `utf8` generically.
        var string = string
        string.withUTF8 { appendEscaped(utf8: $0) }
    }

    private mutating func appendEscaped(utf8: UnsafeBufferPointer<UInt8>) {
        // Nearly every string needs no escape: one scan, then one bulk copy.
        guard let first = utf8.firstIndex(where: { $0 < 0x20 || $0 == 0x22 || $0 == 0x5c }) else {
            bytes.append(contentsOf: utf8)
            return
        }
        bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[..<first]))
        for byte in utf8[first...] {
            switch byte {
            case 0x22: bytes.append(0x5c); bytes.append(0x22)
            case 0x5c: bytes.append(0x5c); bytes.append(0x5c)
            case 0x0a: bytes.append(0x5c); bytes.append(0x6e)  // \n
            case 0x0d: bytes.append(0x5c); bytes.append(0x72)  // \r
            case 0x09: bytes.append(0x5c); bytes.append(0x74)  // \t
            case 0x08: bytes.append(0x5c); bytes.append(0x62)  // \b
            case 0x0c: bytes.append(0x5c); bytes.append(0x66)  // \f
            case ..<0x20:
                bytes.append(contentsOf: [0x5c, 0x75, 0x30, 0x30])  // \u00
                bytes.append(UUIDHex.digit(byte >> 4))
                bytes.append(UUIDHex.digit(byte & 0x0f))
            default: bytes.append(byte)
            }
        }
    }
}

/// Hex formatting (lower case) and parsing of UUIDs without Foundation's intermediate strings
/// (and, for parsing, its `sscanf`).
public enum UUIDHex {
    /// The lower-case hex digit of a nibble.
    @inline(__always)
    public static func digit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? 0x30 &+ nibble : 0x57 &+ nibble
    }

    /// Writes the 36 bytes of `uuid.uuidString.lowercased()` to `out` (at least 36 bytes long).
    @inline(__always)
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
    static func append(_ uuid: UUID, to out: inout [UInt8]) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 36) { text in
            write(uuid, to: text)
            out.append(contentsOf: text)
        }
    }

    /// The UUID written in `text` as 36 bytes `8-4-4-4-12` of hex digits of either case, as
    /// `UUID(uuidString:)` reads it. Nil for anything else, including the few other strings that
    /// reads (its `sscanf` skips blanks and takes signs).
    static func parse(_ text: UnsafeBufferPointer<UInt8>) -> UUID? {
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
    private static let digitValues: [UInt8] = (0...255).map { byte in
        switch UInt8(byte) {
        case 0x30...0x39: UInt8(byte - 0x30)
        case 0x41...0x46: UInt8(byte - 0x37)
        case 0x61...0x66: UInt8(byte - 0x57)
        default: 0xff
        }
    }

    /// Appends the lower-case hex of `bytes`.
    static func append<Bytes: Sequence>(hex bytes: Bytes, to out: inout [UInt8]) where Bytes.Element == UInt8 {
        for byte in bytes {
            out.append(digit(byte >> 4))
            out.append(digit(byte & 0x0f))
        }
    }
}

extension UUID {
    /// `UUID(uuidString:)` for less: the 36-byte hex form is read by table, anything else by
    /// Foundation, which decides.
    public init?(parsing text: String) {
        var text = text
        guard let id = text.withUTF8(UUIDHex.parse) ?? UUID(uuidString: text) else { return nil }
        self = id
    }

    /// `uuidString.lowercased()`, the form of every UUID in Pushline's wire formats, for less.
    public var lowercasedString: String {
        var out = [UInt8]()
        out.reserveCapacity(36)
        UUIDHex.append(self, to: &out)
        return String(decoding: out, as: UTF8.self)
    }
}
