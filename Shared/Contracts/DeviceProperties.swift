/// The grammar of the properties a device carries besides its token and user: its locale, its
/// app version and its tags. Ingest refuses what does not fit; the processor and the audiences
/// read only what fits.

/// A device's locale: a language, an optional script and an optional region, the first subtags of
/// a BCP 47 tag (`pt`, `pt-BR`, `zh-Hant-TW`, `es-419`). Android's `pt_BR` is taken for `pt-BR`.
public enum DeviceLocale {
    /// The longest canonical form: a 3-letter language, a script and a 3-digit region.
    public static let maxBytes = 12

    /// `text` in its canonical form (language lower case, script title case, region upper case,
    /// joined by `-`), or nil when it is not a language, an optional script and an optional region.
    public static func canonical(_ text: String) -> String? {
        let subtags = text.utf8.split(separator: UInt8(ascii: "-"), omittingEmptySubsequences: false)
            .flatMap { $0.split(separator: UInt8(ascii: "_"), omittingEmptySubsequences: false) }
        guard (1...3).contains(subtags.count), let language = subtags.first,
              (2...3).contains(language.count), language.allSatisfy(isLetter) else { return nil }
        var result = String(decoding: language.map(lower), as: UTF8.self)
        var rest = subtags.dropFirst()
        if let script = rest.first, script.count == 4, script.allSatisfy(isLetter) {
            result += "-" + String(decoding: [upper(script.first!)] + script.dropFirst().map(lower), as: UTF8.self)
            rest = rest.dropFirst()
        }
        if let region = rest.first {
            let isRegion = (region.count == 2 && region.allSatisfy(isLetter)) || (region.count == 3 && region.allSatisfy(isDigit))
            guard isRegion else { return nil }
            result += "-" + String(decoding: region.map { isLetter($0) ? upper($0) : $0 }, as: UTF8.self)
            rest = rest.dropFirst()
        }
        return rest.isEmpty ? result : nil
    }

    private static func isLetter(_ c: UInt8) -> Bool { (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(c | 0x20) }
    private static func isDigit(_ c: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(c) }
    private static func lower(_ c: UInt8) -> UInt8 { c | 0x20 }
    private static func upper(_ c: UInt8) -> UInt8 { c & ~0x20 }
}

/// An app version as its numbers: 1 to 4 of them, joined by dots (`5`, `5.2`, `10.0.1`), each at
/// most 9 digits. Versions compare as numbers, part by part, a missing part counting as 0: `5.10`
/// is above `5.9`, and `5` equals `5.0.0`.
public struct AppVersion: Comparable, Sendable, CustomStringConvertible {
    /// The longest text: four parts of 9 digits and three dots.
    public static let maxBytes = 39

    public let parts: [UInt32]

    public init?(_ text: String) {
        let pieces = text.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard (1...4).contains(pieces.count) else { return nil }
        var parts: [UInt32] = []
        for piece in pieces {
            guard (1...9).contains(piece.count), piece.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
                  let value = UInt32(String(decoding: piece, as: UTF8.self)) else { return nil }
            parts.append(value)
        }
        self.parts = parts
    }

    /// The numbers joined by dots, without leading zeros.
    public var description: String { parts.map(String.init).joined(separator: ".") }

    public static func < (a: AppVersion, b: AppVersion) -> Bool {
        for index in 0..<4 {
            let (x, y) = (a.part(index), b.part(index))
            if x != y { return x < y }
        }
        return false
    }

    public static func == (a: AppVersion, b: AppVersion) -> Bool {
        (0..<4).allSatisfy { a.part($0) == b.part($0) }
    }

    private func part(_ index: Int) -> UInt32 { index < parts.count ? parts[index] : 0 }
}

/// A device's tags: names of 1 to 64 bytes of ASCII letters, digits and `_ - . :` (`team:benfica`,
/// `plan.premium`), compared exactly (case counts), at most `maxPerDevice` on a device.
public enum DeviceTag {
    public static let maxBytes = 64
    public static let maxPerDevice = 100

    public static func isValid(_ name: String) -> Bool {
        (1...maxBytes).contains(name.utf8.count) && name.utf8.allSatisfy { c in
            let letter = (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(c | 0x20)
            let digit = (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(c)
            return letter || digit || c == UInt8(ascii: "_") || c == UInt8(ascii: "-") || c == UInt8(ascii: ".") || c == UInt8(ascii: ":")
        }
    }
}

/// A device's topics: named as tags are (`DeviceTag`), at most `maxPerDevice` on a device. A
/// device subscribes to a topic of its app; a send to the topic reaches its subscribers.
public enum DeviceTopic {
    public static let maxBytes = DeviceTag.maxBytes
    public static let maxPerDevice = 100

    public static func isValid(_ name: String) -> Bool { DeviceTag.isValid(name) }
}

/// A set of tag or topic names as a device keeps it: sorted by their bytes, each once. Stored as
/// the names joined by one space (a name has none), nil for the empty set.
public struct DeviceLabels: Equatable, Hashable, Sendable, Codable, ExpressibleByArrayLiteral {
    public private(set) var names: [String]

    public init(_ names: some Sequence<String>) {
        var unique = Array(names)
        // One name (a change's usual tag) is its own set: no hashing, no sort.
        guard unique.count > 1 else {
            self.names = unique
            return
        }
        unique = Array(Set(unique))
        unique.sort { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        self.names = unique
    }

    public init(arrayLiteral names: String...) { self.init(names) }

    /// The set a stored column holds (nil or empty: none): `stored` wrote it sorted, each name once.
    public init(stored: String?) {
        self.names = (stored ?? "").split(separator: " ").map(String.init)
    }

    /// The column's value: nil for the empty set.
    public var stored: String? { names.isEmpty ? nil : names.joined(separator: " ") }

    public var count: Int { names.count }
    public var isEmpty: Bool { names.isEmpty }
    public func contains(_ name: String) -> Bool { names.contains(name) }

    /// The set with `removing` taken out, then `adding` put in.
    public func changed(adding: [String], removing: [String]) -> DeviceLabels {
        guard !adding.isEmpty || !removing.isEmpty else { return self }
        let removed = Set(removing)
        return DeviceLabels(names.filter { !removed.contains($0) } + adding)
    }
}
