import Contracts
import Foundation
import WireCodec
import XCTest

/// The commands ingest writes by hand (`HandWrittenCommand`) are byte for byte what
/// `WireJSON.encoder()` writes for the same envelope, for any field values, escapes included.
final class HandWrittenCommandsTests: XCTestCase {
    func testHandWrittenCommandsAreWhatTheEncoderWrites() throws {
        var random = SplitMix64(seed: 0x4a5d)
        let encoder = WireJSON.encoder()
        var checked: [CommandType: Int] = [:]
        func check<C: Command & Equatable>(_ command: C) throws {
            XCTAssertTrue(command is any HandWrittenCommand, "\(C.self) should be written by hand")
            let id = UUID.random()
            let at = Date(timeIntervalSince1970: Double(Int64.random(in: 0...4_102_444_800_000, using: &random)) / 1000)
            // Mostly part 0, which the envelope leaves out; else a part of an app in parts.
            let part = Int.random(in: 0...3, using: &random) == 0 ? Int.random(in: 1...63, using: &random) : 0
            let written = try EncodedCommand(command, topics: Topics(), id: id, at: at, part: part, encoder: encoder)
            let encoded = try encoder.encode(Envelope(v: C.version, type: C.type.rawValue, id: id, at: at, part: part, payload: command))
            XCTAssertEqual(String(decoding: written.value, as: UTF8.self), String(decoding: encoded, as: UTF8.self))
            XCTAssertEqual(String(decoding: written.value, as: UTF8.self).contains("\"part\":"), part != 0)
            let read = try WireJSON.decoder().decode(Envelope<C>.self, from: written.value)
            XCTAssertEqual(read.payload, command)
            XCTAssertEqual(read.id, id)
            XCTAssertEqual(read.appPart, part)
            if let fast = FastEnvelope.decode(C.self, from: written.value) {
                XCTAssertEqual(fast.appPart, part)
                XCTAssertEqual(fast.payload, command)
                XCTAssertEqual(fast.at, read.at)
            }
            checked[C.type, default: 0] += 1
        }
        func maybe(_ value: String) -> String? { Bool.random(using: &random) ? nil : value }
        for _ in 0..<300 {
            let callback = Bool.random(using: &random) ? nil : StatusCallback(
                url: "https://" + text(&random) + ".example/hook?q=" + text(&random),
                headers: Dictionary((0..<Int.random(in: 0...4, using: &random)).map { (key(&random) + "\($0)", text(&random)) },
                                    uniquingKeysWith: { a, _ in a }),
                signature: text(&random))
            try check(DeviceRegistrationRequested(
                registrationRequestId: .random(), orgId: .random(), mobileAppId: .random(), userId: text(&random),
                platform: Bool.random(using: &random) ? .ios : .android, deviceToken: text(&random), apiTokenHash: text(&random),
                trackStatus: Bool.random(using: &random), callback: callback, timeZone: maybe(text(&random)),
                identityVerified: Bool.random(using: &random) ? nil : true, locale: maybe(text(&random)), appVersion: maybe(text(&random)),
                tags: Bool.random(using: &random) ? nil : (0..<Int.random(in: 0...3, using: &random)).map { _ in text(&random) },
                topics: Bool.random(using: &random) ? nil : (0..<Int.random(in: 0...3, using: &random)).map { _ in text(&random) }))
            try check(DeviceCleanupRequested(orgId: .random(), mobileAppId: .random(), userId: text(&random),
                                             deviceToken: maybe(text(&random)), apiTokenHash: text(&random),
                                             identityVerified: Bool.random(using: &random) ? nil : true))
            try check(NotificationAcknowledged(mobileAppId: .random(), notificationId: text(&random), deviceToken: text(&random),
                                               businessId: maybe(text(&random))))
            let count = [0, 1, Int.random(in: 2...40, using: &random)][Int.random(in: 0..<3, using: &random)]
            try check(TrackingReported(mobileAppId: .random(), deliveryId: .random(), events: (0..<count).map { _ in
                TrackingEvent(broadlogId: text(&random), action: TrackingAction.allCases.randomElement(using: &random)!)
            }))
            let content = NotificationContent(
                title: maybe(text(&random)), body: maybe(text(&random)), text: maybe(text(&random)), sound: maybe(text(&random)),
                badge: Bool.random(using: &random) ? nil : Int.random(in: -5...Int.max, using: &random), category: maybe(text(&random)),
                uri: maybe(text(&random)), mediaAttachmentUrl: maybe(text(&random)),
                contentAvailable: Bool.random(using: &random) ? nil : Bool.random(using: &random),
                mutableContent: Bool.random(using: &random) ? nil : Bool.random(using: &random), collapseKey: maybe(text(&random)),
                priority: Bool.random(using: &random) ? nil : NotificationPriority.allCases.randomElement(using: &random),
                custom: Bool.random(using: &random) ? nil
                    : Dictionary((0..<Int.random(in: 0...4, using: &random)).map { (key(&random) + "\($0)", text(&random)) },
                                 uniquingKeysWith: { a, _ in a }),
                timeToLive: Bool.random(using: &random) ? nil : Int.random(in: 1...2_419_200, using: &random),
                localized: Bool.random(using: &random) ? nil
                    // Keys as ingest writes them, canonical locales (`DeviceLocale`): the encoder
                    // orders other texts by rules of its own (ignoring case, control characters).
                    : Dictionary([(Self.locales.randomElement(using: &random)!, LocalizedText(title: maybe(text(&random)))),
                                  (Self.locales.randomElement(using: &random)!,
                                   LocalizedText(body: maybe(text(&random)), text: maybe(text(&random))))],
                                 uniquingKeysWith: { a, _ in a }))
            let users = (0..<Int.random(in: 0...5, using: &random)).map { _ in text(&random) }
            try check(NotificationRequested(
                deliveryId: .random(), mobileAppId: .random(),
                target: Bool.random(using: &random) ? NotificationTarget(audience: text(&random))
                    : users.isEmpty ? NotificationTarget(deviceTokens: (0...3).map { _ in text(&random) }) : NotificationTarget(userIds: users),
                content: content, managed: Bool.random(using: &random), businessId: maybe(text(&random)),
                tracking: Bool.random(using: &random), kind: NotificationKind.allCases.randomElement(using: &random)!,
                ticketId: maybe(text(&random)), message: maybe(text(&random)),
                sendAt: Bool.random(using: &random) ? nil : Date(timeIntervalSince1970: Double(Int64.random(in: 0...4_102_444_800_000, using: &random)) / 1000),
                firing: [nil, true, false].randomElement(using: &random)!,
                sendAtLocal: maybe(text(&random)), quietHours: Bool.random(using: &random) ? nil : QuietHoursMode.allCases.randomElement(using: &random)!,
                wave: Bool.random(using: &random) ? nil : Date(timeIntervalSince1970: Double(Int64.random(in: 0...4_102_444_800_000, using: &random)) / 1000)))
            func names() -> [String]? {
                Bool.random(using: &random) ? nil : (0..<Int.random(in: 0...3, using: &random)).map { _ in text(&random) }
            }
            let token = maybe(text(&random))
            try check(DeviceChangeRequested(
                mobileAppId: .random(), deviceToken: token, userId: token == nil ? text(&random) : maybe(text(&random)),
                locale: maybe(text(&random)), timeZone: maybe(text(&random)), appVersion: maybe(text(&random)), addTags: names(),
                removeTags: names(), subscribe: names(), unsubscribe: names(), fromClient: Bool.random(using: &random) ? nil : true,
                identityVerified: Bool.random(using: &random) ? nil : Bool.random(using: &random)))
            let outcome = DeliveryOutcome.allCases.randomElement(using: &random)!
            try check(DeliveryResultReported(
                mobileAppId: .random(), deviceToken: text(&random), platform: Bool.random(using: &random) ? .ios : .android,
                deliveryId: Bool.random(using: &random) ? nil : .random(), messageId: text(&random), outcome: outcome,
                reason: maybe(text(&random)), status: Bool.random(using: &random) ? nil : Int.random(in: 0...599, using: &random),
                attempts: Int.random(in: 0...50, using: &random),
                invalidSince: Bool.random(using: &random) ? nil
                    : Date(timeIntervalSince1970: Double(Int64.random(in: 0...4_102_444_800_000, using: &random)) / 1000)))
        }
        XCTAssertEqual(checked.count, 7)
        XCTAssertEqual(checked.values.reduce(0, +), 2100)
    }

    /// The other commands still go through the encoder, unchanged.
    func testOtherCommandsAreStillEncoded() throws {
        let command = AppCreated(orgId: .random(), mobileAppId: .random(), name: "a \"b\"", tokenId: .random(), tokenHash: "h")
        XCTAssertFalse(command is any HandWrittenCommand)
        let at = Date(timeIntervalSince1970: 1_700_000_000.123)
        let id = UUID.random()
        let written = try EncodedCommand(command, topics: Topics(), id: id, at: at, encoder: WireJSON.encoder())
        let read = try WireJSON.decoder().decode(Envelope<AppCreated>.self, from: written.value)
        XCTAssertEqual(read.payload.name, "a \"b\"")
        XCTAssertEqual(read.at, at)
    }

    /// Up to 12 characters, any of which may need escaping: quotes, backslashes, every control
    /// character, DEL, the slash (written unescaped), line separators, combining marks and emoji.
    static let locales = ["pt", "pt-BR", "es", "es-419", "en-US", "zh-Hant-TW", "de"]

    private func text(_ random: inout SplitMix64) -> String {
        let pool: [Character] = ["a", "Z", "0", "9", "-", "_", ".", "/", " ", "é", "東", "😀", "👍🏽", "e\u{301}", "\"", "\\",
                                 "\u{7f}", "\u{2028}", "\u{2029}", "\u{feff}", "\n", "\r", "\t", "\u{8}", "\u{c}"]
        return String((0..<Int.random(in: 0...12, using: &random)).map { _ in
            Int.random(in: 0..<8, using: &random) == 0
                ? Character(Unicode.Scalar(UInt8.random(in: 0...0x1f, using: &random)))
                : pool.randomElement(using: &random)!
        })
    }

    /// A header or custom-field name: letters of both cases, digits and punctuation, so that the
    /// sorted order of keys is exercised.
    private func key(_ random: inout SplitMix64) -> String {
        let pool: [Character] = ["a", "b", "A", "B", "z", "Z", "0", "1", "-", "_", ".", "é"]
        return String((0..<Int.random(in: 1...6, using: &random)).map { _ in pool.randomElement(using: &random)! })
    }
}
