import Contracts
import Foundation
import WireCodec
import XCTest

/// `FastEnvelope` against `WireJSON.decoder()`: whatever the fast path returns is what
/// JSONDecoder returns, and what JSONDecoder rejects the fast path never returns.
final class FastEnvelopeTests: XCTestCase {
    /// Decodes `json` both ways and checks the contract. Returns whether the fast path decoded it.
    @discardableResult
    func agree<C: Command & Equatable>(_: C.Type, _ json: Data, _ name: String,
                                        file: StaticString = #filePath, line: UInt = #line) -> Bool {
        let fast = FastEnvelope.decode(C.self, from: json)
        let slow = try? WireJSON.decoder().decode(Envelope<C>.self, from: json)
        guard let fast else { return false }
        guard let slow else {
            XCTFail("\(name): the fast path decoded what JSONDecoder rejects", file: file, line: line)
            return true
        }
        XCTAssertEqual(fast.v, slow.v, name, file: file, line: line)
        XCTAssertEqual(fast.type, slow.type, name, file: file, line: line)
        XCTAssertEqual(fast.id, slow.id, name, file: file, line: line)
        XCTAssertEqual(fast.at, slow.at, name, file: file, line: line)
        XCTAssertEqual(fast.part, slow.part, name, file: file, line: line)
        XCTAssertEqual(fast.payload, slow.payload, name, file: file, line: line)
        return true
    }

    func assertFast<C: Command & Equatable>(_ type: C.Type, _ cases: [(String, String)], file: StaticString = #filePath, line: UInt = #line) {
        for (name, json) in cases {
            XCTAssertTrue(agree(type, Data(json.utf8), name, file: file, line: line), "\(name): should take the fast path", file: file, line: line)
        }
    }

    func assertFallback<C: Command & Equatable>(_ type: C.Type, _ cases: [(String, Data)], file: StaticString = #filePath, line: UInt = #line) {
        for (name, json) in cases {
            XCTAssertFalse(agree(type, json, name, file: file, line: line), "\(name): should be left to JSONDecoder", file: file, line: line)
        }
    }

    func assertFallback<C: Command & Equatable>(_ type: C.Type, _ cases: [(String, String)], file: StaticString = #filePath, line: UInt = #line) {
        assertFallback(type, cases.map { ($0.0, Data($0.1.utf8)) }, file: file, line: line)
    }

    /// `text` with `old` replaced by `new`; a case that changed nothing would prove nothing.
    func edit(_ text: String, _ old: String, _ new: String, file: StaticString = #filePath, line: UInt = #line) -> String {
        XCTAssertTrue(text.contains(old), "\(old) is not in the base", file: file, line: line)
        return text.replacingOccurrences(of: old, with: new)
    }

    /// `text` with `old` replaced by raw bytes (for invalid UTF-8).
    func edit(_ text: String, _ old: String, bytes: [UInt8], file: StaticString = #filePath, line: UInt = #line) -> Data {
        let parts = edit(text, old, "\u{1}", file: file, line: line).split(separator: "\u{1}", omittingEmptySubsequences: false)
        return Data(parts.map { Array($0.utf8) }.joined(separator: bytes))
    }

    // MARK: Hand-written records, as the encoder writes them

    let id = "0A1868E6-04C9-4D3B-8125-2F9597F68E78"
    let app = "6B1F0C2E-9A3D-4E5F-8A7B-1C2D3E4F5A6B"
    let org = "00000000-0000-0000-0000-0000000000A1"
    let at = "2026-11-22T10:00:00.123Z"

    func envelope(_ type: CommandType, _ payload: String) -> String {
        #"{"at":"\#(at)","id":"\#(id)","payload":\#(payload),"type":"\#(type.rawValue)","v":1}"#
    }

    var registration: String {
        envelope(.deviceRegistrationRequested, #"{"apiTokenHash":"hash","callback":{"headers":{"X-Key":"v1","X-Other":"v2"},"signature":"sig","url":"https://app.example/hook?x=1"},"deviceToken":"token-1","mobileAppId":"\#(app)","orgId":"\#(org)","platform":"android","registrationRequestId":"\#(id)","trackStatus":true,"userId":"user-1"}"#)
    }

    var cleanup: String {
        envelope(.deviceCleanupRequested, #"{"apiTokenHash":"hash","deviceToken":"token-1","mobileAppId":"\#(app)","orgId":"\#(org)","userId":"user-1"}"#)
    }

    var acknowledgement: String {
        envelope(.notificationAcknowledged, #"{"businessId":"b-1","deviceToken":"token-1","mobileAppId":"\#(app)","notificationId":"n-1"}"#)
    }

    var tracking: String {
        envelope(.trackingReported, #"{"deliveryId":"\#(id)","events":[["0-a",7],["0-b",1],["0-c",2]],"mobileAppId":"\#(app)"}"#)
    }

    var outcome: String {
        envelope(.deliveryResultReported, #"{"attempts":2,"deliveryId":"\#(id)","deviceToken":"token-1","invalidSince":"\#(at)","locale":"pt-BR","messageId":"0-abc","mobileAppId":"\#(app)","outcome":"unregistered","platform":"ios","reason":"Unregistered","status":410}"#)
    }

    /// `json` with whitespace of every kind around every token (the bases have no escapes).
    func spaced(_ json: String) -> String {
        var out = "\r\n "
        var inString = false
        for c in json {
            if c == "\"" { inString.toggle() }
            let structural = !inString && "{}[],:".contains(c)
            if structural { out += " \t" }
            out.append(c)
            if structural { out += "\n  " }
        }
        return out + " \n"
    }

    // MARK: The corpus

    func testEncodedCommandsDecodeFastAndExactlyAsJSONDecoder() throws {
        var random = SplitMix64(seed: 0x5eed)
        let encoder = WireJSON.encoder()
        var records: [(CommandType, [UUID], Data)] = []
        func add<C: Command>(_ command: C, _ uuids: [UUID]) throws {
            let id = UUID.random()
            let at = Date(timeIntervalSince1970: Double(Int64.random(in: 0...4_102_444_800_000, using: &random)) / 1000)
            let v = [1, 1, 1, 0, 2, 123_456][Int.random(in: 0..<6, using: &random)]
            records.append((C.type, uuids + [id], try encoder.encode(Envelope(v: v, type: C.type.rawValue, id: id, at: at, payload: command))))
        }
        for _ in 0..<250 {
            let callback = Bool.random(using: &random) ? nil : StatusCallback(
                url: "https://" + text(&random) + ".example/hook?q=" + text(&random),
                headers: Dictionary((0..<Int.random(in: 0...3, using: &random)).map { ("X-" + text(&random) + "\($0)", text(&random)) },
                                    uniquingKeysWith: { a, _ in a }),
                signature: text(&random))
            let registration = DeviceRegistrationRequested(
                registrationRequestId: .random(), orgId: .random(), mobileAppId: .random(), userId: text(&random),
                platform: Bool.random(using: &random) ? .ios : .android, deviceToken: text(&random), apiTokenHash: text(&random),
                trackStatus: Bool.random(using: &random), callback: callback,
                locale: Bool.random(using: &random) ? nil : text(&random), appVersion: Bool.random(using: &random) ? nil : text(&random),
                tags: Bool.random(using: &random) ? nil : (0..<Int.random(in: 0...3, using: &random)).map { _ in text(&random) },
                topics: Bool.random(using: &random) ? nil : (0..<Int.random(in: 0...3, using: &random)).map { _ in text(&random) })
            try add(registration, [registration.registrationRequestId, registration.orgId, registration.mobileAppId])
            let cleanup = DeviceCleanupRequested(orgId: .random(), mobileAppId: .random(), userId: text(&random),
                                                 deviceToken: Bool.random(using: &random) ? nil : text(&random), apiTokenHash: text(&random))
            try add(cleanup, [cleanup.orgId, cleanup.mobileAppId])
            let ack = NotificationAcknowledged(mobileAppId: .random(), notificationId: text(&random), deviceToken: text(&random),
                                               businessId: Bool.random(using: &random) ? nil : text(&random))
            try add(ack, [ack.mobileAppId])
            let count = [0, 1, 1000, Int.random(in: 2...20, using: &random)][Int.random(in: 0..<4, using: &random)]
            let tracking = TrackingReported(mobileAppId: .random(), deliveryId: .random(), events: (0..<count).map { _ in
                TrackingEvent(broadlogId: text(&random), action: TrackingAction.allCases.randomElement(using: &random)!)
            })
            try add(tracking, [tracking.mobileAppId, tracking.deliveryId])
            let deliveryId: UUID? = Bool.random(using: &random) ? nil : .random()
            let outcome = DeliveryResultReported(
                mobileAppId: .random(), deviceToken: text(&random), platform: Bool.random(using: &random) ? .ios : .android,
                deliveryId: deliveryId, messageId: text(&random), outcome: DeliveryOutcome.allCases.randomElement(using: &random)!,
                reason: Bool.random(using: &random) ? nil : text(&random), status: Bool.random(using: &random) ? nil : Int.random(in: 0...599, using: &random),
                attempts: Int.random(in: 1...20, using: &random),
                invalidSince: Bool.random(using: &random) ? nil : Date(timeIntervalSince1970: Double(Int64.random(in: 0...4_102_444_800_000, using: &random)) / 1000),
                locale: Bool.random(using: &random) ? nil : text(&random))
            try add(outcome, [outcome.mobileAppId] + (deliveryId.map { [$0] } ?? []))
            let send = notification(&random)
            try add(send, [send.deliveryId, send.mobileAppId])
        }

        var fastCount = 0
        for (index, (type, uuids, encoded)) in records.enumerated() {
            // The encoder writes lower-case UUIDs; other writers may not.
            var json = String(decoding: encoded, as: UTF8.self)
            for uuid in uuids {
                switch index % 3 {
                case 0: break
                case 1: json = edit(json, uuid.lowercasedString, uuid.uuidString)
                default: json = edit(json, uuid.lowercasedString, String(uuid.uuidString.map { Bool.random(using: &random) ? Character($0.lowercased()) : $0 }))
                }
            }
            let data = Data(json.utf8)
            let name = "record \(index): \(json.prefix(300))"
            let fast = switch type {
            case .deviceRegistrationRequested: agree(DeviceRegistrationRequested.self, data, name)
            case .deviceCleanupRequested: agree(DeviceCleanupRequested.self, data, name)
            case .notificationAcknowledged: agree(NotificationAcknowledged.self, data, name)
            case .trackingReported: agree(TrackingReported.self, data, name)
            case .deliveryResultReported: agree(DeliveryResultReported.self, data, name)
            case .notificationRequested: agree(NotificationRequested.self, data, name)
            default: false
            }
            XCTAssertTrue(fast, "\(name): should take the fast path")
            if fast { fastCount += 1 }
        }
        XCTAssertEqual(fastCount, 1500)
    }

    /// A send with each optional field there or not, its target one of the three kinds.
    func notification(_ random: inout SplitMix64) -> NotificationRequested {
        func maybe<T>(_ value: @autoclosure () -> T) -> T? { Bool.random(using: &random) ? nil : value() }
        func date() -> Date { Date(timeIntervalSince1970: Double(Int64.random(in: 0...4_102_444_800_000, using: &random)) / 1000) }
        let content = NotificationContent(
            title: maybe(text(&random)), body: maybe(text(&random)), text: maybe(text(&random)), sound: maybe(text(&random)),
            badge: maybe(Int.random(in: 0...999_999, using: &random)), category: maybe(text(&random)), uri: maybe(text(&random)),
            mediaAttachmentUrl: maybe(text(&random)), contentAvailable: maybe(Bool.random(using: &random)),
            mutableContent: maybe(Bool.random(using: &random)), collapseKey: maybe(text(&random)),
            priority: maybe(NotificationPriority.allCases.randomElement(using: &random)!),
            custom: maybe(Dictionary((0..<Int.random(in: 0...3, using: &random)).map { ("k" + text(&random) + "\($0)", text(&random)) },
                                     uniquingKeysWith: { a, _ in a })),
            timeToLive: maybe(Int.random(in: 1...2_419_200, using: &random)),
            localized: maybe(["pt-BR": LocalizedText(title: maybe(text(&random))),
                              "zh-Hant-TW": LocalizedText(body: maybe(text(&random)), text: maybe(text(&random)))]))
        let users = (0..<Int.random(in: 0...4, using: &random)).map { _ in text(&random) }
        let target = Bool.random(using: &random) ? NotificationTarget(audience: text(&random))
            : users.isEmpty ? NotificationTarget(deviceTokens: (0...2).map { _ in text(&random) }) : NotificationTarget(userIds: users)
        return NotificationRequested(
            deliveryId: .random(), mobileAppId: .random(), target: target, content: content, managed: Bool.random(using: &random),
            businessId: maybe(text(&random)), tracking: Bool.random(using: &random), kind: NotificationKind.allCases.randomElement(using: &random)!,
            ticketId: maybe(text(&random)), message: maybe(text(&random)), idempotencyKey: maybe(text(&random)),
            requestHash: maybe(text(&random)), messageKeyId: maybe(text(&random)), sendAt: maybe(date()),
            firing: maybe(Bool.random(using: &random)), sendAtLocal: maybe(text(&random)),
            quietHours: maybe(QuietHoursMode.allCases.randomElement(using: &random)!), wave: maybe(date()),
            capCategory: maybe(text(&random)), capExempt: maybe(Bool.random(using: &random)))
    }

    /// A scheduled send's kept command (its payload alone) reads back by hand as `JSONDecoder`
    /// reads it, and what only `JSONDecoder` reads (an escape) still reads.
    func testAKeptSendReadsBackAsJSONDecoderReadsIt() throws {
        var random = SplitMix64(seed: 0x5e4d)
        for _ in 0..<200 {
            let send = notification(&random)
            var writer = JSONWriter(capacity: 1024)
            send.writePayload(to: &writer)
            let text = String(decoding: writer.data, as: UTF8.self)
            XCTAssertEqual(NotificationRequested(payload: text), send)
            XCTAssertEqual(NotificationRequested(payload: text), try WireJSON.decoder().decode(NotificationRequested.self, from: Data(text.utf8)))
        }
        let escaped = NotificationRequested(deliveryId: .random(), mobileAppId: .random(), target: NotificationTarget(userIds: ["a\"b\n"]),
                                            content: NotificationContent(title: "t\u{1}"))
        var writer = JSONWriter(capacity: 256)
        escaped.writePayload(to: &writer)
        XCTAssertEqual(NotificationRequested(payload: String(decoding: writer.data, as: UTF8.self)), escaped)
        XCTAssertNil(NotificationRequested(payload: "{}"))
        XCTAssertNil(NotificationRequested(payload: "not json"))
    }

    /// A firing written around its kept send (`NotificationRequested.firingEnvelope`) reads, fast
    /// and by `JSONDecoder` alike, as the kept send with `firing` and `wave` set, in every part;
    /// a kept text that names either key itself, or is no object, is left to be read whole.
    func testAFiringWrittenAroundItsKeptSendReadsAsTheSendFiring() throws {
        var random = SplitMix64(seed: 0xf14e)
        for n in 0..<300 {
            var send = notification(&random)
            (send.firing, send.wave) = (nil, nil)
            var writer = JSONWriter(capacity: 1024)
            send.writePayload(to: &writer)
            let kept = String(decoding: writer.data, as: UTF8.self)
            let (id, at, part) = (UUID.random(), Date(timeIntervalSince1970: 1_790_000_000 + Double(n)), n % 3)
            let wave = n % 2 == 0 ? Date(timeIntervalSince1970: 1_790_003_600.25) : nil
            let value = try XCTUnwrap(NotificationRequested.firingEnvelope(kept: kept, wave: wave, id: id, at: at, part: part))
            XCTAssertTrue(agree(NotificationRequested.self, value, "firing \(n)"), "firing \(n) reads fast")
            let read = try WireJSON.decoder().decode(Envelope<NotificationRequested>.self, from: value)
            var firing = send
            (firing.firing, firing.wave) = (true, wave)
            XCTAssertEqual(read.payload, firing, "firing \(n)")
            XCTAssertEqual([read.id, read.at, read.appPart, read.type, read.v] as [AnyHashable],
                           [id, at, part, NotificationRequested.type.rawValue, NotificationRequested.version] as [AnyHashable], "firing \(n)")
        }
        // The keys in a string's content are escaped: still written around.
        let quoted = NotificationRequested(deliveryId: .random(), mobileAppId: .random(), target: NotificationTarget(userIds: ["u"]),
                                           content: NotificationContent(title: #"x"firing":false,"wave":1"#))
        var writer = JSONWriter(capacity: 256)
        quoted.writePayload(to: &writer)
        let value = try XCTUnwrap(NotificationRequested.firingEnvelope(kept: String(decoding: writer.data, as: UTF8.self), wave: nil,
                                                                       id: .random(), at: Date(), part: 0))
        XCTAssertEqual(try WireJSON.decoder().decode(Envelope<NotificationRequested>.self, from: value).payload.content.title,
                       #"x"firing":false,"wave":1"#)
        for kept in [#"{"deliveryId":"x","firing":false}"#, #"{"deliveryId":"x","wave":"2026-01-01T00:00:00Z"}"#, "{}", "", "[1]", "not json"] {
            XCTAssertNil(NotificationRequested.firingEnvelope(kept: kept, wave: nil, id: .random(), at: Date(), part: 0), kept)
        }
    }

    var send: String {
        envelope(.notificationRequested, #"{"content":{"badge":3,"custom":{"k":"v"},"localized":{"pt-BR":{"title":"Olá"}},"title":"Hi"},"deliveryId":"\#(id)","kind":"alert","managed":false,"mobileAppId":"\#(app)","sendAt":"\#(at)","target":{"deviceTokens":[],"userIds":["u-1"]},"tracking":true}"#)
    }

    /// A send's required fields, its nested shapes and its enums: what the hand-written reader
    /// cannot be sure of is left to `JSONDecoder`, which decides.
    func testASendTakesTheFastPathOnlyWhereItIsSure() {
        assertFast(NotificationRequested.self, [
            ("base", send),
            ("whitespace everywhere", spaced(send)),
            ("null optionals", edit(send, #""kind""#, #""businessId":null,"wave":null,"firing":null,"kind""#)),
            ("an audience", edit(send, #""target":{"#, #""target":{"audience":"all","#)),
            ("a firing of a wave", edit(send, #""kind""#, #""firing":true,"wave":"\#(at)","kind""#)),
        ])
        assertFallback(NotificationRequested.self, [
            ("an unknown key", edit(send, #""kind""#, #""colour":"red","kind""#)),
            ("an unknown key in content", edit(send, #""badge":3"#, #""badge":3,"colour":"red""#)),
            ("a repeated key", edit(send, #""kind":"alert""#, #""kind":"alert","kind":"im""#)),
            ("no managed", edit(send, #""managed":false,"#, "")),
            ("no tracking", edit(send, #","tracking":true"#, "")),
            ("no userIds", edit(send, #","userIds":["u-1"]"#, "")),
            ("null target", edit(send, #"{"deviceTokens":[],"userIds":["u-1"]}"#, "null")),
            ("an unknown kind", edit(send, #""kind":"alert""#, #""kind":"page""#)),
            ("an unknown priority", edit(send, #""badge":3"#, #""badge":3,"priority":"low""#)),
            ("a negative badge", edit(send, #""badge":3"#, #""badge":-3"#)),
            ("a fractional badge", edit(send, #""badge":3"#, #""badge":3.5"#)),
            ("an escaped title", edit(send, #""title":"Hi""#, #""title":"H\u0069""#)),
            ("a number as a custom value", edit(send, #""k":"v""#, #""k":1"#)),
            ("a date with an offset", edit(send, #""sendAt":"\#(at)""#, #""sendAt":"2026-11-22T11:00:00.123+01:00""#)),
            ("a string as managed", edit(send, #""managed":false"#, #""managed":"false""#)),
        ])
    }

    /// Up to 12 characters from a mix of scripts, emoji, combining marks and URL punctuation;
    /// nothing the encoder escapes.
    func text(_ random: inout SplitMix64) -> String {
        let pool: [Character] = ["a", "Z", "0", "9", "-", "_", ".", "/", "~", " ", "é", "ß", "Ł", "東", "京", "😀", "👍🏽", "e\u{301}", "\u{7f}", "%", "+", "="]
        return String((0..<Int.random(in: 0...12, using: &random)).map { _ in pool.randomElement(using: &random)! })
    }

    // MARK: Edge cases

    func testWhitespaceReorderedKeysAndNullOptionalsTakeTheFastPath() {
        assertFast(DeviceRegistrationRequested.self, [
            ("base", registration),
            ("whitespace everywhere", spaced(registration)),
            ("reordered keys", #"{"v":1,"payload":{"userId":"user-1","callback":{"url":"https://x.example/","signature":"s","headers":{"B":"2","A":"1"}},"trackStatus":false,"registrationRequestId":"\#(id)","platform":"ios","orgId":"\#(org)","mobileAppId":"\#(app)","deviceToken":"t","apiTokenHash":"h"},"type":"x","id":"\#(id)","at":"\#(at)"}"#),
            ("null callback", edit(registration, #"{"headers":{"X-Key":"v1","X-Other":"v2"},"signature":"sig","url":"https://app.example/hook?x=1"}"#, "null")),
            ("spaced null callback", spaced(edit(registration, #"{"headers":{"X-Key":"v1","X-Other":"v2"},"signature":"sig","url":"https://app.example/hook?x=1"}"#, "null"))),
            ("no callback", edit(registration, #""callback":{"headers":{"X-Key":"v1","X-Other":"v2"},"signature":"sig","url":"https://app.example/hook?x=1"},"#, "")),
            ("no headers", edit(registration, #"{"X-Key":"v1","X-Other":"v2"}"#, "{}")),
            ("lower-case uuid", edit(registration, app, app.lowercased())),
            ("unicode", edit(registration, #""user-1""#, #""zoë 東京 😀 e\#u{301}""#)),
            ("unescaped slash", edit(registration, #""user-1""#, #""a/b""#)),
            ("version 0", edit(registration, #""v":1"#, #""v":0"#)),
            ("version 2", edit(registration, #""v":1"#, #""v":2"#)),
            ("version of 18 digits", edit(registration, #""v":1"#, #""v":999999999999999999"#)),
            ("date without fraction", edit(registration, at, "2026-11-22T10:00:00Z")),
            ("date with one fraction digit", edit(registration, at, "2026-11-22T10:00:00.1Z")),
            ("date with nine fraction digits", edit(registration, at, "2026-11-22T10:00:00.123456789Z")),
            ("date with lower-case t", edit(registration, at, "2026-11-22t10:00:00.123Z")),
            ("a leap second", edit(registration, at, "2016-12-31T23:59:60Z")),
            ("part 1", edit(registration, #""payload""#, #""part":1,"payload""#)),
            ("part 63, spaced", spaced(edit(registration, #""payload""#, #""part":63,"payload""#))),
        ])
        assertFast(DeviceCleanupRequested.self, [
            ("base", cleanup), ("whitespace", spaced(cleanup)),
            ("null token", edit(cleanup, #""token-1""#, "null")), ("no token", edit(cleanup, #""deviceToken":"token-1","#, "")),
        ])
        assertFast(NotificationAcknowledged.self, [
            ("base", acknowledgement), ("whitespace", spaced(acknowledgement)),
            ("null business id", edit(acknowledgement, #""b-1""#, "null")),
            ("no business id", edit(acknowledgement, #""businessId":"b-1","#, "")),
        ])
        assertFast(TrackingReported.self, [
            ("base", tracking), ("whitespace", spaced(tracking)),
            ("no events", edit(tracking, #"[["0-a",7],["0-b",1],["0-c",2]]"#, "[]")),
            ("no events, spaced", edit(tracking, #"[["0-a",7],["0-b",1],["0-c",2]]"#, "[ \n ]")),
        ])
        assertFast(DeliveryResultReported.self, [
            ("base", outcome), ("whitespace", spaced(outcome)),
            ("a badge update's, without a delivery", edit(outcome, #""deliveryId":"\#(id)","#, "")),
            ("null delivery", edit(outcome, #""\#(id)","deviceToken""#, #"null,"deviceToken""#)),
            ("without the optionals", edit(edit(edit(edit(outcome, #""invalidSince":"\#(at)","#, ""), #""locale":"pt-BR","#, ""),
                                                #","reason":"Unregistered""#, ""), #","status":410"#, "")),
            ("null optionals", edit(edit(edit(edit(outcome, #""\#(at)","locale""#, #"null,"locale""#), #""pt-BR""#, "null"),
                                         #""Unregistered""#, "null"), "410", "null")),
        ])
    }

    func testEscapesAreLeftToJSONDecoder() {
        var cases: [(String, String)] = []
        for escape in [#"\""#, #"\\"#, #"\u00e9"#, #"\/"#, #"\n"#, #"\t"#, #"\ud83d\ude00"#] {
            cases.append(("\(escape) in a value", edit(registration, #""user-1""#, #""user\#(escape)1""#)))
            cases.append(("\(escape) in a header", edit(registration, #""v2""#, #""v\#(escape)2""#)))
        }
        cases += [
            ("escaped key", edit(registration, #""userId""#, #""user\u0049d""#)),
            ("escaped header name", edit(registration, #""X-Key""#, #""X-K\u0065y""#)),
            ("escaped uuid", edit(registration, #""\#(app)""#, #""\u0036\#(app.dropFirst())""#)),
            ("escaped date", edit(registration, #""\#(at)""#, #""2026-11-22T10\u003a00:00.123Z""#)),
        ]
        assertFallback(DeviceRegistrationRequested.self, cases)
        assertFallback(TrackingReported.self, [("escaped broadlog id", edit(tracking, #""0-b""#, #""0-\"b""#))])
    }

    func testUnknownRepeatedAndMissingKeysAreLeftToJSONDecoder() {
        assertFallback(DeviceRegistrationRequested.self, [
            ("unknown envelope key", edit(registration, #""v":1"#, #""v":1,"extra":{"a":[1,2]}"#)),
            ("unknown payload key", edit(registration, #""userId":"user-1""#, #""userId":"user-1","nickname":"x""#)),
            ("unknown callback key", edit(registration, #""signature":"sig""#, #""signature":"sig","retries":3"#)),
            ("repeated version", edit(registration, #""v":1"#, #""v":1,"v":2"#)),
            ("repeated part", edit(registration, #""payload""#, #""part":1,"part":2,"payload""#)),
            // Part 0 is written without the key; a 0 written out is JSONDecoder's to keep.
            ("part 0 written out", edit(registration, #""payload""#, #""part":0,"payload""#)),
            ("repeated user id", edit(registration, #""userId":"user-1""#, #""userId":"user-1","userId":"user-2""#)),
            ("repeated callback", edit(registration, #""deviceToken""#, #""callback":null,"deviceToken""#)),
            ("repeated header", edit(registration, #""X-Other""#, #""X-Key""#)),
            ("headers equal only as strings", edit(edit(registration, #""X-Key""#, "\"\u{e9}\""), #""X-Other""#, "\"e\u{301}\"")),
            ("no at", edit(registration, #""at":"\#(at)","#, "")),
            ("no id", edit(registration, #""id":"\#(id)","#, "")),
            ("no type", edit(registration, #","type":"registration.device-registration-requested""#, "")),
            ("no version", edit(registration, #","v":1"#, "")),
            ("no payload", #"{"at":"\#(at)","id":"\#(id)","type":"t","v":1}"#),
            ("no user id", edit(registration, #","userId":"user-1""#, "")),
            ("no track status", edit(registration, #""trackStatus":true,"#, "")),
            ("no signature", edit(registration, #","signature":"sig""#, "")),
            ("no headers", edit(registration, #""headers":{"X-Key":"v1","X-Other":"v2"},"#, "")),
        ])
        assertFallback(TrackingReported.self, [
            ("no events", edit(tracking, #""events":[["0-a",7],["0-b",1],["0-c",2]],"#, "")),
            ("event as an object", edit(tracking, #"["0-a",7]"#, #"{"broadlogId":"0-a","action":7}"#)),
        ])
        assertFallback(DeliveryResultReported.self, [
            ("no attempts", edit(outcome, #""attempts":2,"#, "")),
            ("no outcome", edit(outcome, #""outcome":"unregistered","#, "")),
            ("no message id", edit(outcome, #""messageId":"0-abc","#, "")),
            ("unknown outcome", edit(outcome, #""unregistered""#, #""bounced""#)),
            ("unknown key", edit(outcome, #""attempts":2"#, #""attempts":2,"retryAfter":5"#)),
            ("repeated outcome", edit(outcome, #""outcome":"unregistered""#, #""outcome":"unregistered","outcome":"delivered""#)),
            ("status as a string", edit(outcome, "410", #""410""#)),
            ("status 410.0", edit(outcome, "410", "410.0")),
            ("null attempts", edit(outcome, #""attempts":2"#, #""attempts":null"#)),
            ("invalid since with an offset", edit(outcome, #""invalidSince":"\#(at)""#, #""invalidSince":"2026-11-22T12:00:00+02:00""#)),
        ])
    }

    func testWrongTypesAreLeftToJSONDecoder() {
        assertFallback(DeviceRegistrationRequested.self, [
            ("version as a string", edit(registration, #""v":1"#, #""v":"1""#)),
            ("null version", edit(registration, #""v":1"#, #""v":null"#)),
            ("part as a string", edit(registration, #""payload""#, #""part":"1","payload""#)),
            ("type as a number", edit(registration, #""registration.device-registration-requested""#, "3")),
            ("track status as a number", edit(registration, #""trackStatus":true"#, #""trackStatus":1"#)),
            ("track status as a string", edit(registration, #""trackStatus":true"#, #""trackStatus":"true""#)),
            ("track status misspelt", edit(registration, #""trackStatus":true"#, #""trackStatus":truth"#)),
            ("user id as a number", edit(registration, #""user-1""#, "5")),
            ("null user id", edit(registration, #""user-1""#, "null")),
            ("unknown platform", edit(registration, #""android""#, #""windows""#)),
            ("platform in capitals", edit(registration, #""android""#, #""ANDROID""#)),
            ("callback as an array", edit(registration, #""callback":{"headers":{"X-Key":"v1","X-Other":"v2"},"signature":"sig","url":"https://app.example/hook?x=1"}"#, #""callback":[]"#)),
            ("null headers", edit(registration, #"{"X-Key":"v1","X-Other":"v2"}"#, "null")),
            ("header as a number", edit(registration, #""v2""#, "2")),
            ("null header", edit(registration, #""v2""#, "null")),
            ("payload as an array", #"{"at":"\#(at)","id":"\#(id)","payload":[],"type":"t","v":1}"#),
            ("top level array", "[\(registration)]"),
            ("null", "null"),
        ])
        assertFallback(TrackingReported.self, [
            ("event of three", edit(tracking, #"["0-a",7]"#, #"["0-a",7,1]"#)),
            ("event of one", edit(tracking, #"["0-a",7]"#, #"["0-a"]"#)),
            ("event reversed", edit(tracking, #"["0-a",7]"#, #"[7,"0-a"]"#)),
            ("action as a string", edit(tracking, #"["0-a",7]"#, #"["0-a","7"]"#)),
            ("events as an object", edit(tracking, #"[["0-a",7],["0-b",1],["0-c",2]]"#, #"{"0-a":7}"#)),
            ("trailing comma", edit(tracking, #"["0-c",2]]"#, #"["0-c",2],]"#)),
        ])
    }

    func testNumbersOtherThanPlainIntegersAreLeftToJSONDecoder() {
        var registrations: [(String, String)] = []
        var trackings: [(String, String)] = []
        for number in ["1.0", "1e0", "1E0", "1.5", "-0", "-1", "01", "+1", "1234567890123456789", "99999999999999999999", "1e400", "0x1", "- 1"] {
            registrations.append(("version \(number)", edit(registration, #""v":1"#, #""v":\#(number)"#)))
        }
        for number in ["7.0", "7e0", "70e-1", "-0", "07", "3", "0", "-7", "8", "10000000000000000000000"] {
            trackings.append(("action \(number)", edit(tracking, #"["0-a",7]"#, #"["0-a",\#(number)]"#)))
        }
        assertFallback(DeviceRegistrationRequested.self, registrations)
        assertFallback(TrackingReported.self, trackings)
        assertFast(DeviceRegistrationRequested.self, [("version 10", edit(registration, #""v":1"#, #""v":10"#))])
    }

    func testUUIDsAreReadOnlyInTheirStrictFormAndAsUUIDStringReadsThem() {
        var random = SplitMix64(seed: 42)
        let hexAndNeighbours = Array("0123456789abcdefABCDEF/:@`Gg -+{}x")
        var strict = 0
        for round in 0..<2000 {
            var chars = Array(UUID.random().uuidString)
            switch round % 5 {
            case 0: break
            case 1: chars = chars.map { Bool.random(using: &random) ? Character($0.lowercased()) : $0 }
            case 2: chars[Int.random(in: 0..<36, using: &random)] = hexAndNeighbours.randomElement(using: &random)!
            case 3: chars.remove(at: Int.random(in: 0..<36, using: &random))
            default: chars.insert(hexAndNeighbours.randomElement(using: &random)!, at: Int.random(in: 0...36, using: &random))
            }
            let text = String(chars)
            let isStrict = text.count == 36 && text.enumerated().allSatisfy { i, c in
                [8, 13, 18, 23].contains(i) ? c == "-" : c.isHexDigit
            }
            let json = edit(registration, "\"\(app)\"", "\"\(text)\"")
            let fast = agree(DeviceRegistrationRequested.self, Data(json.utf8), "uuid \(text)")
            XCTAssertEqual(fast, isStrict, "uuid \(text)")
            if let envelope = FastEnvelope.decode(DeviceRegistrationRequested.self, from: Data(json.utf8)) {
                XCTAssertEqual(envelope.payload.mobileAppId, UUID(uuidString: text), text)
            }
            if isStrict { strict += 1 }
            XCTAssertEqual(UUID(parsing: text), UUID(uuidString: text), "UUID(parsing:) reads as UUID(uuidString:): \(text)")
        }
        XCTAssertGreaterThan(strict, 800, "the strict form was exercised")
        XCTAssertLessThan(strict, 1900, "other forms were exercised")

        assertFallback(DeviceRegistrationRequested.self, [
            "0A1868E604C94D3B81252F9597F68E78", "0A1868E6-04C9-4D3B-8125-2F9597F68E7", "0A1868E6-04C9-4D3B-8125-2F9597F68E788",
            "0A1868E-604C9-4D3B-8125-2F9597F68E78", "0A1868E6-04C94-D3B-8125-2F9597F68E78", "{0A1868E6-04C9-4D3B-8125-2F9597F68E78}",
            " A1868E6-04C9-4D3B-8125-2F9597F68E78", "+A1868E6-04C9-4D3B-8125-2F9597F68E78", "0G1868E6-04C9-4D3B-8125-2F9597F68E78", "",
        ].map { ("uuid \($0)", edit(registration, "\"\(app)\"", "\"\($0)\"")) })
    }

    func testDatesOtherThanUTCAreLeftToJSONDecoder() {
        assertFallback(DeviceRegistrationRequested.self, [
            "2026-11-22T12:00:00+02:00", "2026-11-22T12:00:00.5+02:00", "2026-13-22T10:00:00Z", "2026-11-32T10:00:00Z",
            "2026-11-22T24:00:00Z", "2026-11-22 10:00:00Z", "2026-11-22T10:00:00.Z", "2026-11-22T10:00:00.1234567890Z",
            "2026-11-22T10:00:00,5Z", "2026-11-22T10:00:00.12aZ", "2026-11-22", "yesterday", "",
        ].map { ("date \($0)", edit(registration, at, $0)) })
    }

    func testInvalidUTF8AndControlCharactersAreLeftToJSONDecoder() {
        var cases: [(String, Data)] = []
        for (name, bytes) in [("0xff", [0xff]), ("truncated é", [0xc3]), ("lone continuation", [0x80]), ("surrogate", [0xed, 0xa0, 0x80]),
                              ("overlong slash", [0xc0, 0xaf]), ("truncated emoji", [0xf0, 0x9f, 0x98]), ("above U+10FFFF", [0xf4, 0x90, 0x80, 0x80]),
                              ("NUL", [0x00]), ("tab", [0x09]), ("newline", [0x0a]), ("escape", [0x1b])] as [(String, [UInt8])] {
            cases.append(("\(name) in a value", edit(registration, "user-1", bytes: Array("user".utf8) + bytes)))
            cases.append(("\(name) in a header name", edit(registration, "X-Other", bytes: Array("X-".utf8) + bytes)))
            cases.append(("\(name) in a key", edit(registration, "userId", bytes: Array("user".utf8) + bytes)))
        }
        assertFallback(DeviceRegistrationRequested.self, cases)
    }

    func testTruncatedTrailingAndEmptyInputIsRejected() {
        var cases: [(String, String)] = [
            ("empty", ""), ("whitespace", " \n"), ("trailing garbage", registration + "x"), ("trailing object", registration + "{}"),
            ("trailing brace", registration + "}"), ("trailing comma", registration + ","), ("two records", registration + registration),
            ("byte order mark", "\u{feff}" + registration), ("trailing comma in object", edit(registration, #""v":1}"#, #""v":1,}"#)),
            ("missing comma", edit(registration, #""v":1"#, #""v":1 "x":2"#)), ("missing colon", edit(registration, #""v":1"#, #""v" 1"#)),
            ("unterminated string", edit(registration, #","type":"registration.device-registration-requested","v":1}"#, #","type":"reg"#)),
        ]
        let bytes = Array(registration.utf8)
        for length in stride(from: 1, to: bytes.count, by: 3) {
            cases.append(("first \(length) bytes", String(decoding: bytes[..<length], as: UTF8.self)))
        }
        assertFallback(DeviceRegistrationRequested.self, cases)
        assertFast(DeviceRegistrationRequested.self, [("trailing whitespace", registration + " \r\n\t")])
    }

    func testOtherCommandTypesHaveNoFastPath() throws {
        let command = AppCreated(orgId: .random(), mobileAppId: .random(), name: "a", tokenId: .random(), tokenHash: "h")
        let encoded = try EncodedCommand(command, topics: Topics(), encoder: WireJSON.encoder())
        XCTAssertNotNil(try? WireJSON.decoder().decode(Envelope<AppCreated>.self, from: encoded.value))
        XCTAssertNil(FastEnvelope.decode(AppCreated.self, from: encoded.value))
    }
}

/// A seeded generator, so that a failing corpus can be reproduced.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }
}
