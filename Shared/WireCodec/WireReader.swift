import Foundation

/// A JSON reader over the bytes of a record, for the hand-written decoding of the hottest
/// commands (`FastEnvelope`), request bodies (`FastRequestBody`) and outbound records (`OutboundPush`).
///
/// It reads only what it can read exactly as `JSONDecoder` does, and gives up (nil or false) on
/// anything else: escapes, numbers other than plain integers, unknown or repeated keys. Giving
/// up is not an error: the caller then decodes with `JSONDecoder`, which decides.
///
/// The readers of each shape are written in other modules, beside the shape, and run on the
/// hottest paths: everything here is `@inlinable`, so they compile it as if it were their own
/// (the closures and generic reads specialised).
public struct WireReader {
    @usableFromInline let bytes: UnsafeBufferPointer<UInt8>
    @usableFromInline var at = 0

    /// `bytes` must stay valid while the reader is used.
    @inlinable
    public init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    /// Whether nothing but whitespace is left.
    @inlinable
    public mutating func atEnd() -> Bool {
        skipWhitespace()
        return at == bytes.count
    }

    /// Skips whitespace, then consumes `character` if it comes next.
    @inlinable
    public mutating func consume(_ character: Unicode.Scalar) -> Bool {
        skipWhitespace()
        guard at < bytes.count, bytes[at] == UInt8(ascii: character) else { return false }
        at += 1
        return true
    }

    /// Skips whitespace, then consumes `word` (`true`, `null`…) if it comes next.
    @inlinable
    public mutating func consume(word: StaticString) -> Bool {
        skipWhitespace()
        let count = word.utf8CodeUnitCount
        guard bytes.count - at >= count,
              same(UnsafeBufferPointer(start: word.utf8Start, count: count), UnsafeBufferPointer(rebasing: bytes[at..<at + count]))
        else { return false }
        at += count
        return true
    }

    /// The bytes between the quotes of a string without escapes or control characters, not
    /// checked for UTF-8; nil for any other value (unescaping is left to `JSONDecoder`).
    @inlinable
    public mutating func rawString() -> UnsafeBufferPointer<UInt8>? {
        guard consume("\"") else { return nil }
        let start = at
        while at < bytes.count {
            let byte = bytes[at]
            at += 1
            if byte == 0x22 { return UnsafeBufferPointer(rebasing: bytes[start..<at - 1]) }
            if byte == 0x5c || byte < 0x20 { return nil }
        }
        return nil
    }

    /// A string read by `rawString()` that is valid UTF-8.
    @inlinable
    public mutating func string() -> String? {
        rawString().flatMap(Self.string(utf8:))
    }

    /// `utf8` as a `String` if it is valid UTF-8 (which `JSONDecoder` requires).
    @inlinable
    public static func string(utf8: UnsafeBufferPointer<UInt8>) -> String? {
        var string = String(decoding: utf8, as: UTF8.self)
        // Decoding repairs invalid UTF-8: it is valid when nothing was repaired.
        return string.withUTF8 { same($0, utf8) } ? string : nil
    }

    /// A non-negative integer of at most 18 digits (surely an `Int`), with no sign, fraction or
    /// exponent; nil for any other value.
    @inlinable
    public mutating func int() -> Int? {
        skipWhitespace()
        let start = at
        var value = 0
        while at < bytes.count, bytes[at] &- 0x30 < 10, at - start < 18 {
            value = value * 10 + Int(bytes[at] &- 0x30)
            at += 1
        }
        let digits = at - start
        guard digits > 0, digits == 1 || bytes[start] != 0x30 else { return nil }
        // A further digit, a fraction or an exponent: a number this reader does not read.
        if at < bytes.count, bytes[at] &- 0x30 < 10 || bytes[at] == 0x2e || bytes[at] | 0x20 == 0x65 { return nil }
        return value
    }

    /// Reads an object, calling `member` with each key's bytes (not checked for UTF-8) to read
    /// its value; false when the object is malformed or `member` gives up.
    @inlinable
    public mutating func members(_ member: (inout WireReader, UnsafeBufferPointer<UInt8>) -> Bool) -> Bool {
        guard consume("{") else { return false }
        if consume("}") { return true }
        repeat {
            guard let key = rawString(), consume(":"), member(&self, key) else { return false }
        } while consume(",")
        return consume("}")
    }

    /// Reads an object whose keys are all among `keys`, none twice, calling `value` to read
    /// each value. Which keys are required is the caller's to check.
    @inlinable
    public mutating func object<Key>(_ keys: WireKeys<Key>, _ value: (inout WireReader, Key) -> Bool) -> Bool {
        var seen: UInt64 = 0
        return members { reader, name in
            guard let index = keys.index(of: name), seen & (1 << index) == 0 else { return false }
            seen |= 1 << index
            return value(&reader, keys[index])
        }
    }

    /// Reads an array, calling `element` to read each element.
    @inlinable
    public mutating func elements(_ element: (inout WireReader) -> Bool) -> Bool {
        guard consume("[") else { return false }
        if consume("]") { return true }
        repeat {
            guard element(&self) else { return false }
        } while consume(",")
        return consume("]")
    }

    /// Reads a `T` into `value`.
    @inlinable
    public mutating func read<T: WireDecodable>(_ value: inout T?) -> Bool {
        value = T(wire: &self)
        return value != nil
    }

    /// Reads `null` (which leaves `value` nil, as if the key were absent) or a `T` into `value`.
    @inlinable
    public mutating func readOptional<T: WireDecodable>(_ value: inout T?) -> Bool {
        consume(word: "null") || read(&value)
    }

    /// Skips one value of any kind (strings with escapes, nested objects and arrays, numbers),
    /// and gives the bytes it spans, for passing a part of a record on as it was written. Its
    /// structure is checked, not what JSON requires of its contents (escapes, UTF-8, number
    /// syntax): nil when it is not a value; an object's keys must be without escapes.
    @inlinable
    public mutating func skipValue() -> Range<Int>? {
        skipWhitespace()
        let start = at
        guard at < bytes.count else { return nil }
        switch bytes[at] {
        case 0x22:
            at += 1
            while at < bytes.count, bytes[at] != 0x22 {
                if bytes[at] < 0x20 { return nil }
                at += bytes[at] == 0x5c ? 2 : 1
            }
            guard at < bytes.count else { return nil }
            at += 1
        case 0x7b:
            guard members({ reader, _ in reader.skipValue() != nil }) else { return nil }
        case 0x5b:
            guard elements({ reader in reader.skipValue() != nil }) else { return nil }
        case 0x74: guard consume(word: "true") else { return nil }
        case 0x66: guard consume(word: "false") else { return nil }
        case 0x6e: guard consume(word: "null") else { return nil }
        default:
            // A number: its characters, at least one digit.
            while at < bytes.count, bytes[at] &- 0x30 < 10 || bytes[at] == 0x2d || bytes[at] == 0x2b || bytes[at] == 0x2e
                || bytes[at] | 0x20 == 0x65 {
                at += 1
            }
            guard at > start else { return nil }
        }
        return start..<at
    }

    /// Skips one value (`skipValue`) into `range`.
    @inlinable
    public mutating func span(_ range: inout Range<Int>?) -> Bool {
        range = skipValue()
        return range != nil
    }

    @inlinable
    mutating func skipWhitespace() {
        while at < bytes.count, bytes[at] == 0x20 || bytes[at] == 0x0a || bytes[at] == 0x0d || bytes[at] == 0x09 {
            at += 1
        }
    }
}

/// The keys of one object shape, as bytes to compare a record's keys with.
public struct WireKeys<Key: RawRepresentable & CaseIterable & Sendable>: Sendable where Key.RawValue == String {
    @usableFromInline let keys: [(key: Key, utf8: [UInt8])]

    @inlinable
    public init() {
        keys = Key.allCases.map { ($0, Array($0.rawValue.utf8)) }
        precondition(keys.count <= 64, "WireReader.object tracks keys in 64 bits")
    }

    @inlinable
    public func index(of name: UnsafeBufferPointer<UInt8>) -> Int? {
        keys.firstIndex { key in key.utf8.withUnsafeBufferPointer { same($0, name) } }
    }

    @inlinable
    public subscript(index: Int) -> Key { keys[index].key }
}

/// A value `WireReader` reads by hand: `init?(wire:)` yields exactly what `JSONDecoder` would
/// decode, or nil when the reader gives up.
public protocol WireDecodable {
    init?(wire reader: inout WireReader)
}

extension WireDecodable {
    /// `bytes` read as one whole value: nil when the reader gives up or anything but whitespace
    /// follows the value.
    @inlinable
    public init?(whole bytes: UnsafeBufferPointer<UInt8>) {
        var reader = WireReader(bytes)
        guard let value = Self(wire: &reader), reader.atEnd() else { return nil }
        self = value
    }
}

extension String: WireDecodable {
    @inlinable
    public init?(wire reader: inout WireReader) {
        guard let string = reader.string() else { return nil }
        self = string
    }
}

extension Int: WireDecodable {
    @inlinable
    public init?(wire reader: inout WireReader) {
        guard let int = reader.int() else { return nil }
        self = int
    }
}

extension Bool: WireDecodable {
    @inlinable
    public init?(wire reader: inout WireReader) {
        if reader.consume(word: "true") {
            self = true
        } else if reader.consume(word: "false") {
            self = false
        } else {
            return nil
        }
    }
}

extension UUID: WireDecodable {
    @inlinable
    public init?(wire reader: inout WireReader) {
        guard let text = reader.rawString(), let uuid = UUIDHex.parse(text) else { return nil }
        self = uuid
    }
}

extension Date: WireDecodable {
    /// The dates of `WireJSON`: what `RFC3339.date(from:)` reads without Foundation.
    public init?(wire reader: inout WireReader) {
        guard let text = reader.rawString(), case .date(let date) = RFC3339.utcDate(text) else { return nil }
        self = date
    }
}

extension Array: WireDecodable where Element: WireDecodable {
    @inlinable
    public init?(wire reader: inout WireReader) {
        var array: [Element] = []
        guard reader.elements({ reader in
            guard let element = Element(wire: &reader) else { return false }
            array.append(element)
            return true
        }) else { return nil }
        self = array
    }
}

extension Dictionary: WireDecodable where Key == String, Value: WireDecodable {
    @inlinable
    public init?(wire reader: inout WireReader) {
        var dictionary: [String: Value] = [:]
        guard reader.members({ reader, name in
            // A repeated key (also one only canonically equal as a `String`) is left to JSONDecoder.
            guard let key = WireReader.string(utf8: name), let value = Value(wire: &reader),
                  dictionary.updateValue(value, forKey: key) == nil else { return false }
            return true
        }) else { return nil }
        self = dictionary
    }
}

/// Enums with raw values are read as their raw value, like their `Codable` default.
extension WireDecodable where Self: RawRepresentable, RawValue: WireDecodable {
    @inlinable
    public init?(wire reader: inout WireReader) {
        guard let raw = RawValue(wire: &reader) else { return nil }
        self.init(rawValue: raw)
    }
}

/// Whether two byte buffers hold the same bytes.
@inlinable
func same(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
    guard a.count == b.count else { return false }
    return a.isEmpty || memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0
}
