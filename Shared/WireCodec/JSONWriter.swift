import Foundation

/// A minimal JSON writer appending UTF-8 to a byte buffer.
///
/// Push payloads are rendered once per device (100,000+ a second), where `JSONEncoder`'s
/// reflection and dictionaries cost more than the payload is worth. Commas are inserted by
/// the writer; nesting and key/value alternation are the caller's job (not checked).
///
/// Its callers render in other modules, on their hottest paths: everything is `@inlinable`, so
/// they compile it as if it were their own (generic collections specialised, calls inlined).
public struct JSONWriter: Sendable {
    @inlinable public var bytes: [UInt8] { buffer }
    @usableFromInline var buffer: [UInt8]
    /// One flag is enough: a value (or a closed container) needs a comma before the next item
    /// of its container; an opened container or a written key does not.
    @usableFromInline var needsComma = false

    @inlinable
    public init(capacity: Int = 1024) {
        buffer = []
        buffer.reserveCapacity(capacity)
    }

    /// A writer that appends to `storage`, taking it over (`storage` is left empty): hand the
    /// bytes back with `storage = writer.bytes` once written.
    @inlinable
    public init(appendingTo storage: inout [UInt8]) {
        buffer = []
        swap(&buffer, &storage)
    }

    /// Empties the buffer but keeps its storage, to render the next record without allocating.
    @inlinable
    public mutating func reset() {
        buffer.removeAll(keepingCapacity: true)
        needsComma = false
    }

    @inlinable
    public var data: Data { Data(buffer) }

    // MARK: Structure

    @inlinable
    public mutating func beginObject() { separate(); buffer.append(0x7b); needsComma = false }
    @inlinable
    public mutating func endObject() { buffer.append(0x7d); needsComma = true }
    @inlinable
    public mutating func beginArray() { separate(); buffer.append(0x5b); needsComma = false }
    @inlinable
    public mutating func endArray() { buffer.append(0x5d); needsComma = true }

    @inlinable
    public mutating func key(_ key: String) {
        separate()
        buffer.append(0x22)
        appendEscaped(key)
        buffer.append(0x22)
        buffer.append(0x3a)
        needsComma = false
    }

    // MARK: Values

    @inlinable
    public mutating func string(_ value: String) {
        separate()
        buffer.append(0x22)
        appendEscaped(value)
        buffer.append(0x22)
        needsComma = true
    }

    @inlinable
    public mutating func int(_ value: Int) {
        separate()
        appendDecimal(value)
        needsComma = true
    }

    /// An integer as a JSON string of its decimal digits: FCM data and the BW keys are string maps.
    @inlinable
    public mutating func intString(_ value: Int) {
        separate()
        buffer.append(0x22)
        appendDecimal(value)
        buffer.append(0x22)
        needsComma = true
    }

    @inlinable
    public mutating func bool(_ value: Bool) {
        separate()
        buffer.append(contentsOf: value ? Self.trueBytes : Self.falseBytes)
        needsComma = true
    }

    @inlinable
    public mutating func null() {
        separate()
        buffer.append(contentsOf: Self.nullBytes)
        needsComma = true
    }

    /// A UUID as a lower-case JSON string, written straight from its bytes.
    @inlinable
    public mutating func uuid(_ value: UUID) {
        separate()
        buffer.append(0x22)
        UUIDHex.append(value, to: &buffer)
        buffer.append(0x22)
        needsComma = true
    }

    /// A date as the RFC 3339 string `WireJSON` writes (`RFC3339.string(from:)`).
    @inlinable
    public mutating func date(_ value: Date) {
        separate()
        buffer.append(0x22)
        RFC3339.append(value, to: &buffer)
        buffer.append(0x22)
        needsComma = true
    }

    /// An array of strings.
    @inlinable
    public mutating func strings(_ values: [String]) {
        beginArray()
        for value in values { string(value) }
        endArray()
    }

    /// A string-to-string object, its keys in the order `JSONEncoder`'s `.sortedKeys` gives.
    @inlinable
    public mutating func object(_ value: [String: String]) {
        beginObject()
        for key in value.keys.sorted() {
            self.key(key)
            string(value[key]!)
        }
        endObject()
    }

    /// One complete JSON value that is already encoded (not checked).
    @inlinable
    public mutating func raw<Bytes: Collection>(_ value: Bytes) where Bytes.Element == UInt8 {
        separate()
        buffer.append(contentsOf: value)
        needsComma = true
    }

    // MARK: Fields (key and value; nothing at all when the value is nil)

    @inlinable
    public mutating func field(_ key: String, _ value: String?) {
        guard let value else { return }
        self.key(key)
        string(value)
    }

    @inlinable
    public mutating func field(_ key: String, _ value: Int?) {
        guard let value else { return }
        self.key(key)
        int(value)
    }

    @inlinable
    public mutating func field(_ key: String, _ value: Bool?) {
        guard let value else { return }
        self.key(key)
        bool(value)
    }

    @inlinable
    public mutating func field(_ key: String, _ values: [String]?) {
        guard let values else { return }
        self.key(key)
        strings(values)
    }

    @inlinable
    public mutating func field(_ key: String, intString value: Int?) {
        guard let value else { return }
        self.key(key)
        intString(value)
    }

    // MARK: Splicing (for templates: bytes inside a value already opened)

    /// Appends bytes as they are, with no separator.
    @inlinable
    public mutating func appendVerbatim<Bytes: Collection>(_ value: Bytes) where Bytes.Element == UInt8 {
        buffer.append(contentsOf: value)
    }

    /// Appends the escaped content of a string, without quotes or separator.
    @inlinable
    public mutating func appendEscapedContent(_ value: String) {
        appendEscaped(value)
    }

    /// Appends what `write` appends to the buffer, as it is, with no separator.
    @inlinable
    public mutating func appendVerbatim(_ write: (inout [UInt8]) -> Void) {
        write(&buffer)
    }

    /// Marks the written value as complete (the template's bytes end with one).
    @inlinable
    public mutating func endValue() {
        needsComma = true
    }

    // MARK: Internals

    @usableFromInline static let trueBytes: [UInt8] = Array("true".utf8)
    @usableFromInline static let falseBytes: [UInt8] = Array("false".utf8)
    @usableFromInline static let nullBytes: [UInt8] = Array("null".utf8)

    @inlinable @inline(__always)
    mutating func separate() {
        if needsComma { buffer.append(0x2c) }
    }

    @inlinable
    mutating func appendDecimal(_ value: Int) {
        if value < 0 { buffer.append(0x2d) }
        var magnitude = value.magnitude
        let start = buffer.count
        repeat {
            buffer.append(UInt8(truncatingIfNeeded: 0x30 &+ magnitude % 10))
            magnitude /= 10
        } while magnitude > 0
        buffer[start...].reverse()
    }

    /// RFC 8259 escaping of `"`, `\` and the control characters; `/` and non-ASCII pass as is.
    @inlinable
    mutating func appendEscaped(_ string: String) {
        // `withUTF8` gives the native string's own buffer (no copy): scanning it is several
        // times faster than iterating `utf8` generically.
        var string = string
        string.withUTF8 { appendEscaped(utf8: $0) }
    }

    @inlinable
    mutating func appendEscaped(utf8: UnsafeBufferPointer<UInt8>) {
        // Nearly every string needs no escape: one scan, then one bulk copy.
        guard let first = utf8.firstIndex(where: { $0 < 0x20 || $0 == 0x22 || $0 == 0x5c }) else {
            buffer.append(contentsOf: utf8)
            return
        }
        buffer.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[..<first]))
        for byte in utf8[first...] {
            switch byte {
            case 0x22: buffer.append(0x5c); buffer.append(0x22)
            case 0x5c: buffer.append(0x5c); buffer.append(0x5c)
            case 0x0a: buffer.append(0x5c); buffer.append(0x6e)  // \n
            case 0x0d: buffer.append(0x5c); buffer.append(0x72)  // \r
            case 0x09: buffer.append(0x5c); buffer.append(0x74)  // \t
            case 0x08: buffer.append(0x5c); buffer.append(0x62)  // \b
            case 0x0c: buffer.append(0x5c); buffer.append(0x66)  // \f
            case ..<0x20:
                buffer.append(contentsOf: [0x5c, 0x75, 0x30, 0x30])  // \u00
                buffer.append(UUIDHex.digit(byte >> 4))
                buffer.append(UUIDHex.digit(byte & 0x0f))
            default: buffer.append(byte)
            }
        }
    }
}
