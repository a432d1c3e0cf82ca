/// Which devices of an app a send reaches, chosen by their properties: written once as text by the
/// sender of a notification, parsed at ingest (so a mistake is refused with its position before
/// anything is queued) and matched by the processor against each device's `AudienceFacts`.
///
/// The text's grammar (keywords and predicate prefixes in any case, names in exact case):
///
/// ```
/// expression := or
/// or         := and { ("or" | "||") and }
/// and        := unary { ("and" | "&&") unary }
/// unary      := ("not" | "!") unary | primary
/// primary    := "(" expression ")" | predicate
/// predicate  := "all"                     -- every device
///             | "tag:" NAME               -- the device has the tag
///             | "topic:" NAME             -- the device is subscribed to the topic
///             | "platform:" ("ios" | "android")
///             | "locale:" LOCALE          -- "pt" matches pt, pt-BR, pt-PT…; "zh-Hant" matches
///                                         -- zh-Hant and zh-Hant-TW; "pt-BR" matches only pt-BR
///             | "timezone:" ZONE          -- an IANA name, compared exactly (Europe/Lisbon, UTC)
///             | "version" OP VERSION      -- the app version, e.g. version >= 5.2
/// OP         := "=" | "!=" | "<" | "<=" | ">" | ">="
/// NAME       := 1 to 64 bytes of [A-Za-z0-9_.:-], a tag's grammar (DeviceTag)
/// LOCALE     := [A-Za-z0-9_-]+, a language, an optional script and an optional region
/// ZONE       := 1 to 64 bytes of [A-Za-z0-9_+/-], starting with a letter
/// VERSION    := 1 to 4 numbers joined by dots (AppVersion)
/// ```
///
/// A value follows its prefix with no space between (`tag:news`), and is read greedily as the
/// longest run of the characters its grammar allows. Whitespace (space, tab, line breaks)
/// separates tokens and is otherwise ignored, also around a version's `OP`. The words `and`, `or`,
/// `not` and `all` end where a letter, digit or `_` does not follow, so `notx` is not `not x`.
/// `not` binds tighter than `and`, and `and` tighter than `or`.
///
/// A device that lacks a version, locale or time zone matches no predicate on it, not even
/// `version != 5`; `not` still negates the predicate's result, so `not version >= 5` matches it.
///
/// A chain of one operator is one node (`a and b and c` is `.and` of three operands); a chain in
/// parentheses stays a node of its own, so `description` can write every parsed expression back.
public indirect enum AudienceExpression: Equatable, Sendable, CustomStringConvertible {
    case all
    case tag(String)
    case topic(String)
    case platform(Platform)
    /// A locale in its canonical form (`DeviceLocale.canonical`).
    case locale(String)
    case timeZone(String)
    case version(Comparison, AppVersion)
    case not(AudienceExpression)
    case and([AudienceExpression])
    case or([AudienceExpression])

    /// The longest text, in UTF-8 bytes: an audience travels in every send that names one.
    public static let maxBytes = 1024
    /// How deep parentheses and `not` may nest, each one level: it bounds the parser's recursion.
    public static let maxDepth = 16
    /// How many predicates one expression may hold: it bounds the work of matching each device.
    public static let maxPredicates = 64

    /// How a `version` predicate compares the device's app version with its own.
    public enum Comparison: String, Sendable, CaseIterable {
        case eq = "="
        case ne = "!="
        case lt = "<"
        case le = "<="
        case gt = ">"
        case ge = ">="

        /// Whether `version` (the device's) stands in this relation to `bound` (the expression's).
        public func holds(_ version: AppVersion, _ bound: AppVersion) -> Bool {
            switch self {
            case .eq: version == bound
            case .ne: version != bound
            case .lt: version < bound
            case .le: version <= bound
            case .gt: version > bound
            case .ge: version >= bound
            }
        }
    }

    /// Why a text is not an audience expression, and where: `position` is the UTF-8 byte offset of
    /// the offending token, or the text's length when the text ends too early.
    public struct SyntaxError: Error, Equatable, Sendable, CustomStringConvertible {
        public let position: Int
        public let message: String

        public init(position: Int, message: String) {
            self.position = position
            self.message = message
        }

        public var description: String { "\(message) (at byte \(position))" }
    }

    /// The expression `text` writes, or where and why it is not one.
    public static func parse(_ text: String) throws(SyntaxError) -> AudienceExpression {
        var parser = Parser(bytes: Array(text.utf8))
        return try parser.parseText()
    }

    /// Whether the device these facts describe is in the audience.
    public func matches(_ device: AudienceFacts) -> Bool {
        switch self {
        case .all: true
        case .tag(let name): device.tags.contains(name)
        case .topic(let name): device.topics.contains(name)
        case .platform(let platform): device.platform == platform
        case .locale(let pattern): device.locale.map { Self.localePattern(pattern, matches: $0) } ?? false
        case .timeZone(let zone): device.timeZone == zone
        case .version(let comparison, let bound): device.appVersion.map { comparison.holds($0, bound) } ?? false
        case .not(let operand): !operand.matches(device)
        case .and(let operands): operands.allSatisfy { $0.matches(device) }
        case .or(let operands): operands.contains { $0.matches(device) }
        }
    }

    /// Whether a `locale:` pattern covers a device's locale, both canonical: when they are equal, or
    /// the pattern is the device's locale cut at a `-`. So `pt` covers `pt-BR` and `zh-Hant` covers
    /// `zh-Hant-TW`, while `pt-BR` does not cover `pt` and `pt` does not cover `ptx`.
    public static func localePattern(_ pattern: String, matches locale: String) -> Bool {
        let (pattern, locale) = (pattern.utf8, locale.utf8)
        guard locale.starts(with: pattern) else { return false }
        return locale.count == pattern.count || locale.dropFirst(pattern.count).first == UInt8(ascii: "-")
    }

    /// Every tag name the expression mentions, negated or not: the devices to look up by tag.
    public var tags: Set<String> {
        var names = Set<String>()
        visit { if case .tag(let name) = $0 { names.insert(name) } }
        return names
    }

    /// Every topic name the expression mentions, negated or not: the devices to look up by topic.
    public var topics: Set<String> {
        var names = Set<String>()
        visit { if case .topic(let name) = $0 { names.insert(name) } }
        return names
    }

    /// The tags and topics every device the expression selects carries: those of its `and`s at
    /// the top (a store may skip the devices without them before reading them whole).
    public var required: (tags: Set<String>, topics: Set<String>) {
        switch self {
        case .tag(let name): return ([name], [])
        case .topic(let name): return ([], [name])
        case .and(let operands):
            return operands.reduce(into: (tags: Set<String>(), topics: Set<String>())) { required, operand in
                let more = operand.required
                required.tags.formUnion(more.tags)
                required.topics.formUnion(more.topics)
            }
        default: return ([], [])
        }
    }

    private func visit(_ body: (AudienceExpression) -> Void) {
        body(self)
        switch self {
        case .not(let operand): operand.visit(body)
        case .and(let operands), .or(let operands): for operand in operands { operand.visit(body) }
        default: break
        }
    }

    /// The canonical text: keywords in lower case, `and`, `or` and `not` spelled as words, single
    /// spaces, and parentheses only where the structure needs them. `parse` gives back the same
    /// expression for anything it returned, as long as the words still fit `maxBytes` (`!all&&x`
    /// is written `not all and x`). An `and` of no operands is written `all` and an `or` of none
    /// `not all` (their meaning); a chain of one operand is written as that operand.
    public var description: String {
        switch self {
        case .all: "all"
        case .tag(let name): "tag:" + name
        case .topic(let name): "topic:" + name
        case .platform(let platform): "platform:" + platform.rawValue
        case .locale(let locale): "locale:" + locale
        case .timeZone(let zone): "timezone:" + zone
        case .version(let comparison, let version): "version \(comparison.rawValue) \(version)"
        case .not(let operand): "not " + operand.written(grouped: operand.shape == .and || operand.shape == .or)
        case .and(let operands): Self.chain(operands, word: "and", empty: "all") { $0 == .and || $0 == .or }
        case .or(let operands): Self.chain(operands, word: "or", empty: "not all") { $0 == .or }
        }
    }

    /// The form of the text `description` writes at its top level, which decides whether an
    /// enclosing operator needs parentheses around it.
    private enum Shape { case predicate, not, and, or }

    private var shape: Shape {
        switch self {
        case .not: .not
        case .and(let operands): operands.count == 1 ? operands[0].shape : operands.isEmpty ? .predicate : .and
        case .or(let operands): operands.count == 1 ? operands[0].shape : operands.isEmpty ? .not : .or
        default: .predicate
        }
    }

    private func written(grouped: Bool) -> String { grouped ? "(\(description))" : description }

    private static func chain(_ operands: [AudienceExpression], word: String, empty: String,
                              grouped: (Shape) -> Bool) -> String {
        if operands.isEmpty { return empty }
        if operands.count == 1 { return operands[0].description }
        return operands.map { $0.written(grouped: grouped($0.shape)) }.joined(separator: " \(word) ")
    }
}

/// What a device offers to an audience expression: its properties as ingest accepted them.
public struct AudienceFacts: Sendable {
    public var platform: Platform
    /// The canonical locale (`DeviceLocale.canonical`), or nil when the device has none.
    public var locale: String?
    /// The IANA time zone name, or nil when the device has none.
    public var timeZone: String?
    public var appVersion: AppVersion?
    public var tags: Set<String>
    public var topics: Set<String>

    public init(platform: Platform, locale: String? = nil, timeZone: String? = nil, appVersion: AppVersion? = nil,
                tags: Set<String> = [], topics: Set<String> = []) {
        self.platform = platform
        self.locale = locale
        self.timeZone = timeZone
        self.appVersion = appVersion
        self.tags = tags
        self.topics = topics
    }
}

/// A recursive-descent parser over the text's UTF-8 bytes, one method a grammar rule. Its
/// recursion is bounded by `maxDepth`, and every loop moves forward, so any text costs at most
/// linear time.
private struct Parser {
    typealias SyntaxError = AudienceExpression.SyntaxError

    let bytes: [UInt8]
    var index = 0
    var depth = 0
    var predicates = 0

    init(bytes: [UInt8]) { self.bytes = bytes }

    mutating func parseText() throws(SyntaxError) -> AudienceExpression {
        guard bytes.count <= AudienceExpression.maxBytes else {
            throw SyntaxError(position: AudienceExpression.maxBytes,
                              message: "the expression is \(bytes.count) bytes; at most \(AudienceExpression.maxBytes)")
        }
        skipSpace()
        guard index < bytes.count else { throw SyntaxError(position: 0, message: "the expression is empty") }
        let expression = try parseOr()
        skipSpace()
        guard index == bytes.count else {
            if bytes[index] == UInt8(ascii: ")") { throw SyntaxError(position: index, message: #"")" without "(""#) }
            throw SyntaxError(position: index, message: "unexpected \(quoted(token(at: index))) after the expression")
        }
        return expression
    }

    mutating func parseOr() throws(SyntaxError) -> AudienceExpression {
        var operands = [try parseAnd()]
        while takeOperator(word: "or", symbol: "||") { operands.append(try parseAnd()) }
        return operands.count == 1 ? operands[0] : .or(operands)
    }

    mutating func parseAnd() throws(SyntaxError) -> AudienceExpression {
        var operands = [try parseUnary()]
        while takeOperator(word: "and", symbol: "&&") { operands.append(try parseUnary()) }
        return operands.count == 1 ? operands[0] : .and(operands)
    }

    mutating func parseUnary() throws(SyntaxError) -> AudienceExpression {
        skipSpace()
        let start = index
        if index < bytes.count, bytes[index] == UInt8(ascii: "!") {
            index += 1
        } else if case ("not", let end)? = word(at: index) {
            index = end
        } else {
            return try parsePrimary()
        }
        try enterLevel(at: start)
        let operand = try parseUnary()
        depth -= 1
        return .not(operand)
    }

    mutating func parsePrimary() throws(SyntaxError) -> AudienceExpression {
        guard index < bytes.count, bytes[index] == UInt8(ascii: "(") else { return try parsePredicate() }
        try enterLevel(at: index)
        index += 1
        let inner = try parseOr()
        skipSpace()
        guard index < bytes.count, bytes[index] == UInt8(ascii: ")") else {
            throw SyntaxError(position: index, message: #"expected ")""#)
        }
        index += 1
        depth -= 1
        return inner
    }

    mutating func parsePredicate() throws(SyntaxError) -> AudienceExpression {
        let start = index
        guard case (let word, let end)? = word(at: start) else { throw expectedPredicate(at: start) }
        let hasColon = end < bytes.count && bytes[end] == UInt8(ascii: ":")
        switch word {
        case "all":
            try countPredicate(at: start)
            index = end
            return .all
        case "version":
            try countPredicate(at: start)
            index = end
            return try parseVersion()
        case "tag" where hasColon, "topic" where hasColon:
            try countPredicate(at: start)
            index = end + 1
            let kind = "\(word) name"
            let name = try value(after: "\(word):", kind: kind, allowed: "letters, digits and _ - . : only", while: Self.isNameByte)
            guard name.utf8.count <= DeviceTag.maxBytes else {
                throw SyntaxError(position: end + 1, message: "the \(kind) is \(name.utf8.count) bytes; at most \(DeviceTag.maxBytes)")
            }
            return word == "tag" ? .tag(name) : .topic(name)
        case "platform" where hasColon:
            try countPredicate(at: start)
            index = end + 1
            let valueStart = index
            let text = try value(after: "platform:", kind: "platform", allowed: "ios or android", while: Self.isNameByte)
            guard let platform = Platform(rawValue: String(decoding: text.utf8.map(Self.lowercased), as: UTF8.self)) else {
                throw SyntaxError(position: valueStart, message: "unknown platform \(quoted(text)): ios or android")
            }
            return .platform(platform)
        case "locale" where hasColon:
            try countPredicate(at: start)
            index = end + 1
            let valueStart = index
            let allowed = "a language, an optional script and an optional region (pt, pt-BR, zh-Hant-TW)"
            let text = try value(after: "locale:", kind: "locale", allowed: allowed, while: Self.isLocaleByte)
            guard let locale = DeviceLocale.canonical(text) else {
                throw SyntaxError(position: valueStart, message: "\(quoted(text)) is not a locale: \(allowed)")
            }
            return .locale(locale)
        case "timezone" where hasColon:
            try countPredicate(at: start)
            index = end + 1
            let valueStart = index
            let allowed = "an IANA name of 1 to 64 bytes starting with a letter (Europe/Lisbon, UTC)"
            let zone = try value(after: "timezone:", kind: "time zone", allowed: allowed, while: Self.isZoneByte)
            guard zone.utf8.count <= 64, let first = zone.utf8.first, Self.isLetter(first) else {
                throw SyntaxError(position: valueStart, message: "\(quoted(zone)) is not a time zone: \(allowed)")
            }
            return .timeZone(zone)
        default:
            throw expectedPredicate(at: start)
        }
    }

    /// The rest of a `version` predicate, from its comparison on.
    mutating func parseVersion() throws(SyntaxError) -> AudienceExpression {
        skipSpace()
        let comparisons: [AudienceExpression.Comparison] = [.ne, .le, .ge, .lt, .gt, .eq]  // two-byte ones first
        guard let comparison = comparisons.first(where: { bytes[index...].starts(with: $0.rawValue.utf8) }) else {
            throw SyntaxError(position: index, message: #"expected a comparison (=, !=, <, <=, >, >=) after "version""#)
        }
        index += comparison.rawValue.utf8.count
        skipSpace()
        let valueStart = index
        let allowed = "1 to 4 numbers joined by dots"
        let text = try value(after: comparison.rawValue, kind: "version", allowed: allowed, while: Self.isNameByte)
        guard let version = AppVersion(text) else {
            throw SyntaxError(position: valueStart, message: "\(quoted(text)) is not a version: \(allowed)")
        }
        return .version(comparison, version)
    }

    /// The run of bytes from `index` that `belongs` accepts, which must not be empty and must end
    /// where a token can: at the end, a space, `)`, `&` or `|`. A character glued to a value is
    /// reported as not allowed in it, which points at the mistake (`tag:bad!name`) rather than at
    /// the following text.
    mutating func value(after prefix: String, kind: String, allowed: String,
                        while belongs: (UInt8) -> Bool) throws(SyntaxError) -> String {
        let start = index
        while index < bytes.count, belongs(bytes[index]) { index += 1 }
        guard index > start else {
            throw SyntaxError(position: start, message: "expected a \(kind) after \(quoted(prefix))")
        }
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        if index < bytes.count, !Self.isSpace(bytes[index]),
           ![UInt8(ascii: ")"), UInt8(ascii: "&"), UInt8(ascii: "|")].contains(bytes[index]) {
            throw SyntaxError(position: index, message: "\(quoted(character(at: index))) is not allowed in a \(kind): \(allowed)")
        }
        return text
    }

    /// Takes `symbol` or `word` (not followed by a word character) after any spaces.
    mutating func takeOperator(word expected: String, symbol: String) -> Bool {
        skipSpace()
        if bytes[index...].starts(with: symbol.utf8) {
            index += symbol.utf8.count
            return true
        }
        if case (expected, let end)? = word(at: index) {
            index = end
            return true
        }
        return false
    }

    mutating func enterLevel(at position: Int) throws(SyntaxError) {
        depth += 1
        guard depth <= AudienceExpression.maxDepth else {
            throw SyntaxError(position: position, message: "nested deeper than \(AudienceExpression.maxDepth) levels")
        }
    }

    mutating func countPredicate(at position: Int) throws(SyntaxError) {
        predicates += 1
        guard predicates <= AudienceExpression.maxPredicates else {
            throw SyntaxError(position: position, message: "more than \(AudienceExpression.maxPredicates) predicates")
        }
    }

    mutating func skipSpace() {
        while index < bytes.count, Self.isSpace(bytes[index]) { index += 1 }
    }

    /// The word of letters, digits and `_` at `position`, in lower case, and where it ends; nil
    /// when none starts there.
    func word(at position: Int) -> (String, Int)? {
        var end = position
        while end < bytes.count, Self.isWordByte(bytes[end]) { end += 1 }
        guard end > position else { return nil }
        return (String(decoding: bytes[position..<end].map(Self.lowercased), as: UTF8.self), end)
    }

    func expectedPredicate(at position: Int) -> SyntaxError {
        SyntaxError(position: position,
                    message: #"expected a predicate (tag:, topic:, platform:, locale:, timezone:, version, all) or "(""#)
    }

    /// The token at `position` for a message: a run of name characters, a run of operator
    /// characters, or else one character.
    func token(at position: Int) -> String {
        let operators = Array("&|!<>=".utf8)
        let belongs: (UInt8) -> Bool
        if Self.isZoneByte(bytes[position]) || Self.isNameByte(bytes[position]) {
            belongs = { Self.isZoneByte($0) || Self.isNameByte($0) }
        } else if operators.contains(bytes[position]) {
            belongs = { operators.contains($0) }
        } else {
            return character(at: position)
        }
        var end = position
        while end < bytes.count, belongs(bytes[end]) { end += 1 }
        return String(decoding: bytes[position..<end], as: UTF8.self)
    }

    /// The whole character (Unicode scalar) starting at `position`.
    func character(at position: Int) -> String {
        var end = position + 1
        while end < bytes.count, bytes[end] & 0xC0 == 0x80 { end += 1 }
        return String(decoding: bytes[position..<end], as: UTF8.self)
    }

    /// `text` in double quotes for a message, control characters escaped and a long text cut, so a
    /// message stays one short line whatever it quotes.
    func quoted(_ text: String) -> String {
        let limit = 40
        var shown = ""
        for (offset, scalar) in text.unicodeScalars.enumerated() {
            if offset == limit { shown += "…"; break }
            let control = scalar.value < 0x20 || scalar.value == 0x7F
            shown += control ? "\\u{\(String(scalar.value, radix: 16, uppercase: true))}" : String(scalar)
        }
        return "\"\(shown)\""
    }

    static func isSpace(_ c: UInt8) -> Bool {
        c == UInt8(ascii: " ") || c == UInt8(ascii: "\t") || c == UInt8(ascii: "\n") || c == UInt8(ascii: "\r")
    }

    static func isLetter(_ c: UInt8) -> Bool { (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(c | 0x20) }
    static func isDigit(_ c: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(c) }
    static func isWordByte(_ c: UInt8) -> Bool { isLetter(c) || isDigit(c) || c == UInt8(ascii: "_") }
    /// A tag's characters (`DeviceTag`), which are also those a platform or version is read as.
    static func isNameByte(_ c: UInt8) -> Bool {
        isWordByte(c) || c == UInt8(ascii: "-") || c == UInt8(ascii: ".") || c == UInt8(ascii: ":")
    }
    static func isLocaleByte(_ c: UInt8) -> Bool { isWordByte(c) || c == UInt8(ascii: "-") }
    static func isZoneByte(_ c: UInt8) -> Bool {
        isWordByte(c) || c == UInt8(ascii: "-") || c == UInt8(ascii: "+") || c == UInt8(ascii: "/")
    }
    static func lowercased(_ c: UInt8) -> UInt8 { isLetter(c) ? c | 0x20 : c }
}
