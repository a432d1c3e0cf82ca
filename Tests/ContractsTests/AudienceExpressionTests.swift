import Contracts
import XCTest

/// Audience expressions: their grammar, their canonical text, which devices they match and every
/// way a text can fail to be one.
final class AudienceExpressionTests: XCTestCase {
    typealias Expression = AudienceExpression

    func parse(_ text: String) throws -> Expression { try Expression.parse(text) }

    func version(_ text: String) throws -> AppVersion { try XCTUnwrap(AppVersion(text), text) }

    // MARK: Grammar

    func testNotBindsTighterThanAndAndAndTighterThanOr() throws {
        XCTAssertEqual(try parse("tag:a or tag:b and not tag:c"),
                       .or([.tag("a"), .and([.tag("b"), .not(.tag("c"))])]))
        XCTAssertEqual(try parse("tag:a and tag:b or tag:c"), .or([.and([.tag("a"), .tag("b")]), .tag("c")]))
        XCTAssertEqual(try parse("(tag:a or tag:b) and tag:c"), .and([.or([.tag("a"), .tag("b")]), .tag("c")]))
        XCTAssertEqual(try parse("not tag:a and tag:b"), .and([.not(.tag("a")), .tag("b")]))
        XCTAssertEqual(try parse("not (tag:a and tag:b)"), .not(.and([.tag("a"), .tag("b")])))
        XCTAssertEqual(try parse("not not tag:a"), .not(.not(.tag("a"))))
        XCTAssertEqual(try parse("tag:a and (tag:b or not (tag:c and all))"),
                       .and([.tag("a"), .or([.tag("b"), .not(.and([.tag("c"), .all]))])]))
    }

    func testAChainOfOneOperatorIsOneNodeAndParenthesesKeepTheirGroup() throws {
        XCTAssertEqual(try parse("tag:a and tag:b and tag:c"), .and([.tag("a"), .tag("b"), .tag("c")]))
        XCTAssertEqual(try parse("tag:a or tag:b or tag:c or tag:d"), .or([.tag("a"), .tag("b"), .tag("c"), .tag("d")]))
        XCTAssertEqual(try parse("(tag:a and tag:b) and tag:c"), .and([.and([.tag("a"), .tag("b")]), .tag("c")]))
        XCTAssertEqual(try parse("tag:a or (tag:b or tag:c)"), .or([.tag("a"), .or([.tag("b"), .tag("c")])]))
        XCTAssertEqual(try parse("((tag:a))"), .tag("a"))
    }

    func testSymbolsAreSynonymsOfTheWords() throws {
        XCTAssertEqual(try parse("tag:a && tag:b || !tag:c"), try parse("tag:a and tag:b or not tag:c"))
        XCTAssertEqual(try parse("tag:a&&tag:b||!tag:c"), .or([.and([.tag("a"), .tag("b")]), .not(.tag("c"))]))
        XCTAssertEqual(try parse("!(tag:a||tag:b)"), .not(.or([.tag("a"), .tag("b")])))
        XCTAssertEqual(try parse("!!all"), .not(.not(.all)))
        XCTAssertEqual(try parse("not(tag:a)and(tag:b)"), .and([.not(.tag("a")), .tag("b")]))
        XCTAssertEqual(try parse("version>=5.2"), .version(.ge, try version("5.2")))
        XCTAssertEqual(try parse(" \t version \n != 5 "), .version(.ne, try version("5")))
        XCTAssertEqual(try parse("\ttag:a\n and\n\ttag:b "), .and([.tag("a"), .tag("b")]))
        XCTAssertEqual(try parse("tag:a\r\nor\r\ntag:b"), .or([.tag("a"), .tag("b")]))
    }

    func testKeywordsIgnoreCaseAndNamesKeepIt() throws {
        XCTAssertEqual(try parse("TAG:News AND Not Topic:Sport OR ALL"),
                       .or([.and([.tag("News"), .not(.topic("Sport"))]), .all]))
        XCTAssertNotEqual(try parse("tag:News"), try parse("tag:news"))
        XCTAssertEqual(try parse("PLATFORM:IOS"), .platform(.ios))
        XCTAssertEqual(try parse("Platform:Android"), .platform(.android))
        XCTAssertEqual(try parse("LOCALE:PT_br"), .locale("pt-BR"))
        XCTAssertEqual(try parse("locale:zh_hant_tw"), .locale("zh-Hant-TW"))
        XCTAssertEqual(try parse("VERSION < 10.0.1"), .version(.lt, try version("10.0.1")))
        XCTAssertEqual(try parse("TimeZone:Europe/Lisbon"), .timeZone("Europe/Lisbon"))
        XCTAssertNotEqual(try parse("timezone:europe/lisbon"), try parse("timezone:Europe/Lisbon"))
    }

    func testNamesAreReadGreedilyAndKeywordsEndAtAWordBoundary() throws {
        XCTAssertEqual(try parse("tag:android"), .tag("android"))
        XCTAssertEqual(try parse("tag:and or tag:not"), .or([.tag("and"), .tag("not")]))
        XCTAssertEqual(try parse("tag:team:benfica"), .tag("team:benfica"))
        XCTAssertEqual(try parse("topic:plan.premium-A_9"), .topic("plan.premium-A_9"))
        XCTAssertEqual(try parse("timezone:America/Argentina/Buenos_Aires"), .timeZone("America/Argentina/Buenos_Aires"))
        XCTAssertEqual(try parse("timezone:Etc/GMT+3 or timezone:UTC"), .or([.timeZone("Etc/GMT+3"), .timeZone("UTC")]))
        let longest = String(repeating: "t", count: DeviceTag.maxBytes)
        XCTAssertEqual(try parse("tag:\(longest)"), .tag(longest))
    }

    // MARK: Canonical text

    func testTheDescriptionIsCanonicalAndParsesBack() throws {
        let canonical: [(String, String)] = [
            ("TAG:a && (tag:b || tag:c)", "tag:a and (tag:b or tag:c)"),
            ("tag:a || (tag:b && tag:c)", "tag:a or tag:b and tag:c"),
            ("!(tag:a || tag:b)", "not (tag:a or tag:b)"),
            ("!(tag:a && tag:b)", "not (tag:a and tag:b)"),
            ("!(!tag:a)", "not not tag:a"),
            ("not (version < 5)", "not version < 5"),
            ("(tag:a and tag:b) and tag:c", "(tag:a and tag:b) and tag:c"),
            ("tag:a or (tag:b or tag:c)", "tag:a or (tag:b or tag:c)"),
            ("(((all)))", "all"),
            ("version>=05.10", "version >= 5.10"),
            ("VERSION=1.0", "version = 1.0"),
            ("locale:zh_hant_tw", "locale:zh-Hant-TW"),
            ("PLATFORM:Android", "platform:android"),
            ("TimeZone:UTC", "timezone:UTC"),
            ("Topic:Sport\n&&\ntag:x", "topic:Sport and tag:x"),
        ]
        for (text, form) in canonical {
            let expression = try parse(text)
            XCTAssertEqual(expression.description, form, text)
            XCTAssertEqual(try parse(form), expression, text)
        }
        // Built rather than parsed: an empty chain is written as its meaning, a chain of one as its operand.
        XCTAssertEqual(Expression.and([]).description, "all")
        XCTAssertEqual(Expression.or([]).description, "not all")
        XCTAssertEqual(Expression.and([.tag("a")]).description, "tag:a")
        XCTAssertEqual(Expression.not(.or([.tag("a")])).description, "not tag:a")
        XCTAssertEqual(Expression.and([.or([.or([.tag("a"), .tag("b")])]), .tag("c")]).description, "(tag:a or tag:b) and tag:c")
    }

    func testRandomExpressionsParseBackFromTheirDescriptionAndFromAnyEquivalentSpelling() throws {
        var random = SplitMix64(seed: 0x5EED_A0D1_E4CE)
        var checked = 0
        for _ in 0..<500 {
            let expression = Self.randomExpression(&random, depth: 4)
            let text = expression.description
            guard text.utf8.count <= Expression.maxBytes, Self.predicateCount(expression) <= Expression.maxPredicates else {
                continue
            }
            XCTAssertEqual(try parse(text), expression, text)
            let spelling = Self.otherSpelling(expression, &random)
            if spelling.utf8.count <= Expression.maxBytes {
                XCTAssertEqual(try parse(spelling), expression, spelling)
                XCTAssertEqual(try parse(spelling).description, text, spelling)
            }
            checked += 1
        }
        XCTAssertGreaterThan(checked, 450)
    }

    // MARK: Matching

    func testMatchingAgainstDevices() throws {
        let devices = [
            AudienceFacts(platform: .ios, locale: "pt-BR", timeZone: "Europe/Lisbon", appVersion: try version("5.10"),
                          tags: ["news", "team:benfica"], topics: ["sport"]),
            AudienceFacts(platform: .android, locale: "zh-Hant-TW", timeZone: "America/Argentina/Buenos_Aires",
                          appVersion: try version("5.9"), topics: ["weather"]),
            AudienceFacts(platform: .android),
            AudienceFacts(platform: .ios, locale: "pt", appVersion: try version("5"), tags: ["News"]),
        ]
        let table: [(String, [Bool])] = [
            ("all", [true, true, true, true]),
            ("not all", [false, false, false, false]),
            ("tag:news", [true, false, false, false]),
            ("tag:News", [false, false, false, true]),
            ("tag:team:benfica", [true, false, false, false]),
            ("topic:sport or topic:weather", [true, true, false, false]),
            ("platform:ios", [true, false, false, true]),
            ("platform:android", [false, true, true, false]),
            ("locale:pt", [true, false, false, true]),
            ("locale:pt-BR", [true, false, false, false]),
            ("locale:pt-PT", [false, false, false, false]),
            ("locale:zh", [false, true, false, false]),
            ("locale:zh-Hant", [false, true, false, false]),
            ("locale:zh-Hant-TW", [false, true, false, false]),
            ("locale:zh-Hans", [false, false, false, false]),
            ("locale:zh-TW", [false, false, false, false]),
            ("not locale:pt", [false, true, true, false]),
            ("timezone:Europe/Lisbon", [true, false, false, false]),
            ("timezone:europe/lisbon", [false, false, false, false]),
            ("timezone:America/Argentina/Buenos_Aires", [false, true, false, false]),
            ("not timezone:Europe/Lisbon", [false, true, true, true]),
            ("version > 5.9", [true, false, false, false]),
            ("version >= 5.10.0", [true, false, false, false]),
            ("version = 5.9", [false, true, false, false]),
            ("version = 5.0.0", [false, false, false, true]),
            ("version != 5.9", [true, false, false, true]),
            ("version < 5.10", [false, true, false, true]),
            ("version <= 5.9", [false, true, false, true]),
            ("version < 6", [true, true, false, true]),
            ("not version >= 5", [false, false, true, false]),
            ("not version != 5.9", [false, true, true, false]),
            ("platform:android and (topic:weather or version >= 5.10)", [false, true, false, false]),
            ("platform:android and not tag:news or locale:pt", [true, true, true, true]),
            ("!(locale:pt || timezone:Europe/Lisbon) && !version < 5.9", [false, true, true, false]),
        ]
        for (text, expected) in table {
            let expression = try parse(text)
            XCTAssertEqual(devices.map(expression.matches), expected, text)
        }
    }

    func testALocalePatternCoversWholeSubtagsOnly() {
        let cases: [(String, String, Bool)] = [
            ("pt", "pt", true), ("pt", "pt-BR", true), ("pt", "pt-PT", true), ("zh-Hant", "zh-Hant-TW", true),
            ("zh", "zh-Hant-TW", true), ("es", "es-419", true), ("pt-BR", "pt-BR", true),
            ("pt-BR", "pt", false), ("pt", "ptx", false), ("zh-TW", "zh-Hant-TW", false), ("zh-Hant-T", "zh-Hant-TW", false),
            ("en", "pt-BR", false),
        ]
        for (pattern, locale, expected) in cases {
            XCTAssertEqual(Expression.localePattern(pattern, matches: locale), expected, "\(pattern) over \(locale)")
        }
    }

    func testTheTagsAndTopicsItMentions() throws {
        let expression = try parse("tag:a and (topic:x or not tag:b) or tag:a and topic:y or platform:ios")
        XCTAssertEqual(expression.tags, ["a", "b"])
        XCTAssertEqual(expression.topics, ["x", "y"])
        XCTAssertEqual(try parse("version >= 5 or all").tags, [])
    }

    func testTheTagsAndTopicsEverySelectedDeviceCarries() throws {
        let required = { (text: String) in try self.parse(text).required }
        XCTAssertEqual(try required("tag:vip and tag:fan and locale:pt").tags, ["vip", "fan"])
        XCTAssertEqual(try required("tag:a and (topic:x and (tag:b and platform:ios))").tags, ["a", "b"])
        XCTAssertEqual(try required("tag:a and (topic:x and (tag:b and platform:ios))").topics, ["x"])
        XCTAssertEqual(try required("topic:news").topics, ["news"])
        for text in ["tag:a or tag:b", "not tag:a", "all", "locale:pt and (tag:a or topic:x)", "platform:ios"] {
            let none = try required(text)
            XCTAssertTrue(none.tags.isEmpty && none.topics.isEmpty, text)
        }
        XCTAssertEqual(try required("tag:a and (tag:b or tag:c)").tags, ["a"], "an `or` requires none of its own")
    }

    // MARK: Errors

    func testEveryErrorHasItsPositionAndMessage() {
        let predicate = #"expected a predicate (tag:, topic:, platform:, locale:, timezone:, version, all) or "(""#
        let locale = "a language, an optional script and an optional region (pt, pt-BR, zh-Hant-TW)"
        let zone = "an IANA name of 1 to 64 bytes starting with a letter (Europe/Lisbon, UTC)"
        let cases: [(String, Int, String)] = [
            ("", 0, "the expression is empty"),
            (" \t\n ", 0, "the expression is empty"),
            ("tag:", 4, #"expected a tag name after "tag:""#),
            ("tag: a", 4, #"expected a tag name after "tag:""#),
            ("topic:", 6, #"expected a topic name after "topic:""#),
            ("tag:bad!name", 7, #""!" is not allowed in a tag name: letters, digits and _ - . : only"#),
            ("tag:a\u{1}", 5, #""\u{1}" is not allowed in a tag name: letters, digits and _ - . : only"#),
            ("tag:café", 7, #""é" is not allowed in a tag name: letters, digits and _ - . : only"#),
            ("((tag:a)", 8, #"expected ")""#),
            ("(tag:a tag:b)", 7, #"expected ")""#),
            ("tag:a)", 5, #"")" without "(""#),
            ("(tag:a)) or tag:b", 7, #"")" without "(""#),
            ("platform:bb", 9, #"unknown platform "bb": ios or android"#),
            ("platform:blackberry", 9, #"unknown platform "blackberry": ios or android"#),
            ("platform:", 9, #"expected a platform after "platform:""#),
            ("version >= x", 11, #""x" is not a version: 1 to 4 numbers joined by dots"#),
            ("version >= 5.x", 11, #""5.x" is not a version: 1 to 4 numbers joined by dots"#),
            ("version>=1.2.3.4.5", 9, #""1.2.3.4.5" is not a version: 1 to 4 numbers joined by dots"#),
            ("version >= 5,2", 12, #""," is not allowed in a version: 1 to 4 numbers joined by dots"#),
            ("version 5", 8, #"expected a comparison (=, !=, <, <=, >, >=) after "version""#),
            ("version", 7, #"expected a comparison (=, !=, <, <=, >, >=) after "version""#),
            ("version >=", 10, #"expected a version after ">=""#),
            ("version == 5", 9, #"expected a version after "=""#),
            ("locale:p", 7, #""p" is not a locale: \#(locale)"#),
            ("locale:pt-BR-x", 7, #""pt-BR-x" is not a locale: \#(locale)"#),
            ("locale:", 7, #"expected a locale after "locale:""#),
            ("locale:pt.BR", 9, #""." is not allowed in a locale: \#(locale)"#),
            ("timezone:5am", 9, #""5am" is not a time zone: \#(zone)"#),
            ("timezone:Europe/Lisbon,", 22, #""," is not allowed in a time zone: \#(zone)"#),
            ("tag:a tag:b", 6, #"unexpected "tag:b" after the expression"#),
            ("tag:a & tag:b", 6, #"unexpected "&" after the expression"#),
            ("tag:a andx tag:b", 6, #"unexpected "andx" after the expression"#),
            ("tag:a ∧ tag:b", 6, #"unexpected "∧" after the expression"#),
            ("and tag:a", 0, predicate),
            ("notx tag:a", 0, predicate),
            ("tags:a", 0, predicate),
            ("tag :a", 0, predicate),
            ("tag:a and", 9, predicate),
            ("tag:a or not", 12, predicate),
            ("()", 1, predicate),
            ("tag:a and or tag:b", 10, predicate),
            ("tag:" + String(repeating: "t", count: 65), 4, "the tag name is 65 bytes; at most 64"),
            ("topic:" + String(repeating: "t", count: 65), 6, "the topic name is 65 bytes; at most 64"),
            ("tag:" + String(repeating: "a", count: 1496), 1024, "the expression is 1500 bytes; at most 1024"),
            ("tag:a" + String(repeating: " ", count: 1020), 1024, "the expression is 1025 bytes; at most 1024"),
            (String(repeating: "(", count: 17) + "tag:a" + String(repeating: ")", count: 17), 16, "nested deeper than 16 levels"),
            (String(repeating: "not ", count: 17) + "tag:a", 64, "nested deeper than 16 levels"),
            (String(repeating: "!(", count: 8) + "!tag:a" + String(repeating: ")", count: 8), 16, "nested deeper than 16 levels"),
        ]
        for (text, position, message) in cases {
            XCTAssertEqual(error(text), Expression.SyntaxError(position: position, message: message), text)
        }
        let predicates = (0..<65).map { "tag:t\($0)" }
        let tooMany = predicates.joined(separator: " or ")
        let last = tooMany.utf8.count - "tag:t64".utf8.count
        XCTAssertEqual(error(tooMany), Expression.SyntaxError(position: last, message: "more than 64 predicates"))
        // `all` counts too: with it, the 65th predicate is `tag:t63`.
        let withAll = "all and " + predicates.dropLast().joined(separator: " or ")
        XCTAssertEqual(error(withAll)?.position, withAll.utf8.count - "tag:t63".utf8.count)
        XCTAssertEqual(error("tag:bad!name")?.description,
                       #""!" is not allowed in a tag name: letters, digits and _ - . : only (at byte 7)"#)
    }

    func testTheLimitsThemselvesAreAllowed() throws {
        XCTAssertEqual(try parse("tag:a" + String(repeating: " ", count: Expression.maxBytes - 5)), .tag("a"))
        var nested = Expression.tag("a")
        for _ in 0..<Expression.maxDepth { nested = .not(nested) }
        XCTAssertEqual(try parse(String(repeating: "!", count: 16) + "tag:a"), nested)
        XCTAssertEqual(try parse(String(repeating: "(", count: 16) + "tag:a" + String(repeating: ")", count: 16)), .tag("a"))
        XCTAssertEqual(try parse(String(repeating: "!(", count: 8) + "tag:a" + String(repeating: ")", count: 8)).description,
                       String(repeating: "not ", count: 8) + "tag:a")
        let names = (0..<Expression.maxPredicates).map { "t\($0)" }
        XCTAssertEqual(try parse(names.map { "tag:\($0)" }.joined(separator: " or ")), .or(names.map { .tag($0) }))
    }

    func error(_ text: String) -> Expression.SyntaxError? {
        do {
            let expression = try Expression.parse(text)
            XCTFail("\(text) parsed as \(expression)")
            return nil
        } catch {
            return error
        }
    }

    // MARK: Random expressions

    static let names = ["news", "team:benfica", "plan.premium", "A_b-9", "and", "or", "not", "all", "android", "x",
                        String(repeating: "n", count: 64)]
    static let locales = ["pt", "pt-BR", "zh-Hant", "zh-Hant-TW", "es-419", "fil"]
    static let zones = ["UTC", "Europe/Lisbon", "America/Argentina/Buenos_Aires", "Etc/GMT+3", "America/Port-au-Prince"]
    static let versions = ["5", "5.2", "5.10.0", "10.0.1.7", "0", "999999999"].compactMap { AppVersion($0) }

    /// A random expression of the shapes `parse` returns: chains of two or more operands.
    static func randomExpression(_ random: inout SplitMix64, depth: Int) -> Expression {
        if depth == 0 || random.chance(3) {
            switch random.below(7) {
            case 0: return .all
            case 1: return .tag(random.pick(names))
            case 2: return .topic(random.pick(names))
            case 3: return .platform(random.pick(Platform.allCases))
            case 4: return .locale(random.pick(locales))
            case 5: return .timeZone(random.pick(zones))
            default: return .version(random.pick(Expression.Comparison.allCases), random.pick(versions))
            }
        }
        switch random.below(3) {
        case 0: return .not(randomExpression(&random, depth: depth - 1))
        case 1: return .and((0..<2 + random.below(2)).map { _ in randomExpression(&random, depth: depth - 1) })
        default: return .or((0..<2 + random.below(2)).map { _ in randomExpression(&random, depth: depth - 1) })
        }
    }

    static func predicateCount(_ expression: Expression) -> Int {
        switch expression {
        case .not(let operand): predicateCount(operand)
        case .and(let operands), .or(let operands): operands.map(predicateCount).reduce(0, +)
        default: 1
        }
    }

    /// Another text of the same expression: keywords in random case, symbols for words, other
    /// spaces, parentheses around every chain under an operator and now and then around others.
    static func otherSpelling(_ expression: Expression, _ random: inout SplitMix64) -> String {
        func anyCase(_ word: String, _ random: inout SplitMix64) -> String {
            String(word.map { random.chance(2) ? Character($0.uppercased()) : $0 })
        }
        func space(_ random: inout SplitMix64, optional: Bool) -> String {
            random.pick(optional ? ["", " ", "\t", "\n  "] : [" ", "  ", "\t", "\n"])
        }
        func operand(_ expression: Expression, _ random: inout SplitMix64) -> String {
            let text = otherSpelling(expression, &random)
            switch expression {
            case .and, .or: return "(" + space(&random, optional: true) + text + space(&random, optional: true) + ")"
            default: return random.chance(5) ? "(" + text + ")" : text
            }
        }
        func chain(_ operands: [Expression], _ word: String, _ symbol: String, _ random: inout SplitMix64) -> String {
            var text = operand(operands[0], &random)
            for next in operands.dropFirst() {
                text += random.chance(2)
                    ? space(&random, optional: true) + symbol + space(&random, optional: true)
                    : space(&random, optional: false) + anyCase(word, &random) + space(&random, optional: false)
                text += operand(next, &random)
            }
            return text
        }
        switch expression {
        case .all: return anyCase("all", &random)
        case .tag(let name): return anyCase("tag:", &random) + name
        case .topic(let name): return anyCase("topic:", &random) + name
        case .platform(let platform): return anyCase("platform:", &random) + anyCase(platform.rawValue, &random)
        case .locale(let locale):
            let separator: Character = random.pick(["-", "_"])
            return anyCase("locale:", &random) + String(anyCase(locale, &random).map { $0 == "-" ? separator : $0 })
        case .timeZone(let zone): return anyCase("timezone:", &random) + zone
        case .version(let comparison, let version):
            return anyCase("version", &random) + space(&random, optional: true) + comparison.rawValue
                + space(&random, optional: true) + "\(version)"
        case .not(let inner):
            let word = random.chance(2)
                ? "!" + space(&random, optional: true)
                : anyCase("not", &random) + space(&random, optional: false)
            return word + operand(inner, &random)
        case .and(let operands): return chain(operands, "and", "&&", &random)
        case .or(let operands): return chain(operands, "or", "||", &random)
        }
    }
}

/// Draws for the random expressions, from the target's seeded generator so a failing case is the
/// same on every run.
private extension SplitMix64 {
    mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
    mutating func pick<T>(_ choices: [T]) -> T { choices[below(choices.count)] }
    mutating func chance(_ oneIn: Int) -> Bool { below(oneIn) == 0 }
}
