import Contracts
import Foundation
import Projections
import XCTest
@testable import Handlers

/// Device properties as the processor decides them (docs/API.md#device-properties), in memory:
/// what a registration gives and keeps, what a change of one device or of a user's devices does,
/// and the limits on tags and topics.
final class DeviceChangeHandlerTests: XCTestCase {
    let org = UUID(), appId = UUID(), tokenHash = ApiTokens.hash("good-token")
    let at = Date(timeIntervalSince1970: 1_800_000_000)
    let t1 = String(repeating: "a1", count: 32), t2 = String(repeating: "b2", count: 32), t3 = String(repeating: "c3", count: 32)

    private func state(devices: [DeviceRow] = [], identityRequired: Bool = false) -> BatchState {
        var snapshot = StateSnapshot()
        var app = AppRow(appId: appId, orgId: org, name: "a", webhookRetries: 0, createdAt: at)
        app.identityRequired = identityRequired
        snapshot.apps[AppPart(appId)] = app
        snapshot.tokens[AppPart(appId)] = [ApiTokenRow(tokenId: UUID(), appId: appId, tokenHash: tokenHash, createdAt: at)]
        for d in devices { snapshot.devices[d.key] = d }
        return BatchState(snapshot)
    }

    private func device(_ token: String, user: String = "u", tags: DeviceLabels = [], topics: DeviceLabels = []) -> DeviceRow {
        DeviceRow(appId: appId, deviceToken: token, userId: user, platform: .ios, version: 1, updatedAt: at, tags: tags, topics: topics)
    }

    private func registration(user: String = "u", locale: String? = nil, appVersion: String? = nil, tags: [String]? = nil,
                              topics: [String]? = nil) -> DeviceRegistrationRequested {
        DeviceRegistrationRequested(registrationRequestId: UUID(), orgId: org, mobileAppId: appId, userId: user, platform: .ios,
                                    deviceToken: t1, apiTokenHash: tokenHash, trackStatus: false, callback: nil, locale: locale,
                                    appVersion: appVersion, tags: tags, topics: topics)
    }

    private let registrations = RegistrationHandler(verifier: TokenFormatVerifier())
    private let changes = DeviceChangeHandler()
    private var key: DeviceKey { DeviceKey(appId: appId, deviceToken: t1) }

    func testARegistrationGivesPropertiesKeepsThoseItLeavesOutAndAChangeOfHandsClearsTagsAndTopics() {
        var s = state()
        let context = CommandContext(at: at)
        XCTAssertEqual(registrations.apply(registration(locale: "pt-BR", appVersion: "5.2", tags: ["vip"], topics: ["news"]), context, to: &s),
                       .applied)
        XCTAssertEqual(s.devices[key]?.locale, "pt-BR")
        XCTAssertEqual(s.devices[key]?.appVersion, "5.2")
        XCTAssertEqual(s.devices[key]?.tags, ["vip"])
        XCTAssertEqual(s.devices[key]?.topics, ["news"])
        XCTAssertEqual(registrations.apply(registration(), context, to: &s), .rejected("DuplicateExists"), "nothing given: nothing changes")
        XCTAssertEqual(registrations.apply(registration(tags: ["vip"], topics: ["news"]), context, to: &s), .rejected("DuplicateExists"),
                       "tags and topics it has already: nothing changes")
        XCTAssertEqual(registrations.apply(registration(appVersion: "5.3", tags: ["beta"]), context, to: &s), .applied)
        XCTAssertEqual(s.devices[key]?.tags, ["beta", "vip"], "a registration adds tags")
        XCTAssertEqual(s.devices[key]?.appVersion, "5.3")
        XCTAssertEqual(s.devices[key]?.version, 2)
        XCTAssertEqual(registrations.apply(registration(user: "other"), context, to: &s), .applied)
        XCTAssertEqual(s.devices[key]?.tags, [], "another user's device starts without the previous user's tags")
        XCTAssertEqual(s.devices[key]?.topics, [])
        XCTAssertEqual(s.devices[key]?.locale, "pt-BR", "the device's own properties stay")
        XCTAssertEqual(s.devices[key]?.appVersion, "5.3")
    }

    func testARegistrationsTagsThatWouldPassTheLimitAreNotAddedButTheRegistrationStands() {
        let full = DeviceLabels((0..<DeviceTag.maxPerDevice).map { "t\($0)" })
        var s = state(devices: [device(t1, tags: full)])
        XCTAssertEqual(registrations.apply(registration(appVersion: "2", tags: ["one-more"]), CommandContext(at: at), to: &s), .applied)
        XCTAssertEqual(s.devices[key]?.tags, full)
        XCTAssertEqual(s.devices[key]?.appVersion, "2")
    }

    func testAChangeOfOneDeviceRemovesThenAddsAndBumpsTheVersionOnlyWhenSomethingChanged() {
        var s = state(devices: [device(t1, tags: ["trial", "x"], topics: ["old"])])
        let change = DeviceChangeRequested(mobileAppId: appId, deviceToken: t1, userId: nil, locale: "es", timeZone: "Europe/Madrid",
                                           appVersion: "7", addTags: ["vip", "x"], removeTags: ["trial", "x"], subscribe: ["news"],
                                           unsubscribe: ["old"])
        XCTAssertEqual(changes.apply(change, CommandContext(at: at), to: &s), .applied)
        let row = s.devices[key]
        XCTAssertEqual(row?.tags, ["vip", "x"])
        XCTAssertEqual(row?.topics, ["news"])
        XCTAssertEqual(row?.locale, "es")
        XCTAssertEqual(row?.timeZone, "Europe/Madrid")
        XCTAssertEqual(row?.appVersion, "7")
        XCTAssertEqual(row?.version, 2)
        XCTAssertEqual(row?.updatedAt, at, "a change is not a registration: the device's age stays")
        let writes = s.mutations.count
        XCTAssertEqual(changes.apply(change, CommandContext(at: at), to: &s), .applied)
        XCTAssertEqual(s.mutations.count, writes, "a change that changes nothing writes nothing")
        XCTAssertEqual(s.devices[key]?.version, 2)
    }

    func testADevicesOwnChangeMustBeItsUsersAndOfADeviceRegisteredBefore() {
        var s = state(devices: [device(t1, user: "alice")])
        let ofBob = DeviceChangeRequested(mobileAppId: appId, deviceToken: t1, userId: "bob", addTags: ["x"], fromClient: true)
        XCTAssertEqual(changes.apply(ofBob, CommandContext(at: at), to: &s), .rejected("unknown-device"))
        let unknown = DeviceChangeRequested(mobileAppId: appId, deviceToken: t2, userId: "alice", addTags: ["x"], fromClient: true)
        XCTAssertEqual(changes.apply(unknown, CommandContext(at: at), to: &s), .rejected("unknown-device"))
        XCTAssertTrue(s.mutations.isEmpty)
        XCTAssertNil(s.devices[DeviceKey(appId: appId, deviceToken: t2)], "a change registers no device")
        let ofAlice = DeviceChangeRequested(mobileAppId: appId, deviceToken: t1, userId: "alice", addTags: ["x"], fromClient: true)
        XCTAssertEqual(changes.apply(ofAlice, CommandContext(at: at), to: &s), .applied)
        XCTAssertEqual(s.devices[key]?.tags, ["x"])
    }

    func testAUsersChangeChangesEachOfTheUsersDevicesAndNoOneElses() {
        var s = state(devices: [device(t1, user: "alice"), device(t2, user: "alice", tags: ["a"]), device(t3, user: "bob")])
        let change = DeviceChangeRequested(mobileAppId: appId, deviceToken: nil, userId: "alice", locale: "fr", addTags: ["b"])
        XCTAssertEqual(changes.apply(change, CommandContext(at: at), to: &s), .applied)
        XCTAssertEqual(s.devices[key]?.tags, ["b"])
        XCTAssertEqual(s.devices[DeviceKey(appId: appId, deviceToken: t2)]?.tags, ["a", "b"])
        XCTAssertEqual(s.devices[DeviceKey(appId: appId, deviceToken: t2)]?.locale, "fr")
        XCTAssertEqual(s.devices[DeviceKey(appId: appId, deviceToken: t3)], device(t3, user: "bob"))
    }

    /// Names outside the grammar reach the log only from a producer other than ingest; they would
    /// break the stores' lists of names (a space) and SQLite's index of them (a quote, a control
    /// character), so they change no device, in every store alike.
    func testNamesOutsideTheGrammarAreNeitherAddedByARegistrationNorByAChange() {
        var s = state(devices: [device(t1, tags: ["vip"])])
        for bad in ["a\"b", "a b", "a\tb", "a\\b", "", String(repeating: "x", count: DeviceTag.maxBytes + 1)] {
            _ = registrations.apply(registration(tags: ["ok", bad]), CommandContext(at: at), to: &s)
            XCTAssertEqual(s.devices[key]?.tags, ["vip"], "\(bad.debugDescription)")
            let tag = DeviceChangeRequested(mobileAppId: appId, deviceToken: t1, userId: nil, addTags: [bad])
            XCTAssertEqual(changes.apply(tag, CommandContext(at: at), to: &s), .rejected("invalid-name"))
            let topic = DeviceChangeRequested(mobileAppId: appId, deviceToken: t1, userId: nil, subscribe: ["ok", bad])
            XCTAssertEqual(changes.apply(topic, CommandContext(at: at), to: &s), .rejected("invalid-name"))
            XCTAssertEqual(s.devices[key]?.tags, ["vip"])
            XCTAssertEqual(s.devices[key]?.topics, [])
        }
    }

    func testADeviceThatWouldPassItsLimitKeepsWhatItHadWhileTheUsersOtherDevicesChange() {
        let full = DeviceLabels((0..<DeviceTopic.maxPerDevice).map { "t\($0)" })
        var s = state(devices: [device(t1, user: "alice", topics: full), device(t2, user: "alice")])
        let change = DeviceChangeRequested(mobileAppId: appId, deviceToken: nil, userId: "alice", subscribe: ["one-more"])
        XCTAssertEqual(changes.apply(change, CommandContext(at: at), to: &s), .rejected("too-many-topics"))
        XCTAssertEqual(s.devices[key]?.topics, full)
        XCTAssertEqual(s.devices[DeviceKey(appId: appId, deviceToken: t2)]?.topics, ["one-more"])
        let unsubscribeFirst = DeviceChangeRequested(mobileAppId: appId, deviceToken: t1, userId: nil, subscribe: ["one-more"],
                                                     unsubscribe: ["t0"])
        XCTAssertEqual(changes.apply(unsubscribeFirst, CommandContext(at: at), to: &s), .applied, "removals make room first")
        XCTAssertTrue(s.devices[key]?.topics.contains("one-more") == true)
        let tooManyTags = DeviceChangeRequested(mobileAppId: appId, deviceToken: t2, userId: nil,
                                                addTags: (0...DeviceTag.maxPerDevice).map { "x\($0)" })
        XCTAssertEqual(changes.apply(tooManyTags, CommandContext(at: at), to: &s), .rejected("too-many-tags"))
    }

    func testWhereTheAppRequiresVerifiedIdentityOnlyAVerifiedDeviceChangeOrTheBackendsIsApplied() {
        var s = state(devices: [device(t1, user: "alice")], identityRequired: true)
        var change = DeviceChangeRequested(mobileAppId: appId, deviceToken: t1, userId: "alice", addTags: ["x"], fromClient: true)
        XCTAssertEqual(changes.apply(change, CommandContext(at: at), to: &s), .rejected("user-identity-not-verified"))
        change.identityVerified = true
        XCTAssertEqual(changes.apply(change, CommandContext(at: at), to: &s), .applied)
        let backend = DeviceChangeRequested(mobileAppId: appId, deviceToken: t1, userId: nil, addTags: ["y"])
        XCTAssertEqual(changes.apply(backend, CommandContext(at: at), to: &s), .applied)
        XCTAssertEqual(s.devices[key]?.tags, ["x", "y"])
        let unknownApp = DeviceChangeRequested(mobileAppId: UUID(), deviceToken: t1, userId: nil, addTags: ["y"])
        XCTAssertEqual(changes.apply(unknownApp, CommandContext(at: at), to: &s), .rejected("unknown-app"))
    }

    func testLabelsAreStoredSortedOnceAndReadBackAsWritten() {
        let labels = DeviceLabels(["b", "a:1", "b", "A"])
        XCTAssertEqual(labels.names, ["A", "a:1", "b"])
        XCTAssertEqual(labels.stored, "A a:1 b")
        XCTAssertEqual(DeviceLabels(stored: labels.stored), labels)
        XCTAssertNil(DeviceLabels([]).stored)
        XCTAssertEqual(DeviceLabels(stored: nil), [])
        XCTAssertEqual(labels.changed(adding: ["c"], removing: ["A", "zz"]).names, ["a:1", "b", "c"])
    }

    // MARK: Audience sends

    private func send(_ audience: String) -> NotificationRequested {
        NotificationRequested(deliveryId: UUID(), mobileAppId: appId, target: NotificationTarget(audience: audience),
                              content: NotificationContent(title: "hi"), managed: false, businessId: nil, tracking: true, kind: .alert)
    }

    private func reached(_ s: BatchState) -> [String] { s.outbound.map(\.deviceToken) }

    func testAnAudienceSendReachesTheAppsDevicesItSelectsAsTheBatchLeftThemInTokenOrder() {
        var one = device(t1, tags: ["vip"]), two = device(t2, user: "v", tags: ["vip"]), three = device(t3, tags: ["beta"], topics: ["news"])
        one.locale = "pt-BR"
        two.appVersion = "2.10"
        three.appVersion = "2.9"
        let otherApp = DeviceRow(appId: UUID(), deviceToken: t1 + "ff", userId: "u", platform: .ios, version: 1, updatedAt: at, tags: ["vip"])
        var s = state(devices: [three, two, one, otherApp])
        let sends = NotificationHandler()
        let context = CommandContext(at: at)
        XCTAssertEqual(sends.apply(send("tag:vip"), context, to: &s), .applied)
        XCTAssertEqual(reached(s), [t1, t2], "the app's devices with the tag, by token; not another app's")
        // A change earlier in the batch counts: t3 subscribes, t1 loses its tag.
        _ = changes.apply(DeviceChangeRequested(mobileAppId: appId, deviceToken: t1, userId: nil, removeTags: ["vip"]), context, to: &s)
        var again = s
        XCTAssertEqual(sends.apply(send("tag:vip or topic:news"), context, to: &again), .applied)
        XCTAssertEqual(reached(again).suffix(2), [t2, t3])
        var versions = state(devices: [three, two, one])
        XCTAssertEqual(sends.apply(send("version > 2.9"), context, to: &versions), .applied)
        XCTAssertEqual(reached(versions), [t2], "2.10 is above 2.9; a device without a version is not")
        var locales = state(devices: [three, two, one])
        XCTAssertEqual(sends.apply(send("locale:pt"), context, to: &locales), .applied)
        XCTAssertEqual(reached(locales), [t1])
        var nobody = state(devices: [three, two, one])
        XCTAssertEqual(sends.apply(send("tag:unknown"), context, to: &nobody), .rejected("no-devices"), "an unknown tag selects no device")
        guard case .putDelivery(let delivery)? = nobody.mutations.last(where: { if case .putDelivery = $0 { true } else { false } }) else {
            return XCTFail("no delivery row")
        }
        XCTAssertEqual(delivery.sent, 0, "the delivery is recorded, with nobody reached")
        var forged = state(devices: [one])
        XCTAssertEqual(sends.apply(send("tag:"), context, to: &forged), .rejected("invalid-audience"))
    }

    func testEachPartOfAnAppSendsToTheSelectedDevicesItHolds() {
        let parts = AppParts(3)
        let tokens = (0..<12).map { String(format: "%064x", $0 * 7919) }
        var snapshot = StateSnapshot()
        for part in parts.all {
            snapshot.apps[AppPart(appId, part: part)] = AppRow(appId: appId, orgId: org, name: "a", webhookRetries: 0, createdAt: at)
        }
        for (n, token) in tokens.enumerated() {
            let row = device(token, user: "u\(n)", tags: n % 2 == 0 ? ["vip"] : [])
            snapshot.devices[row.key] = row
        }
        var reachedByPart: [[String]] = []
        for part in parts.all {
            var s = BatchState(snapshot, parts: parts)
            _ = NotificationHandler().apply(send("tag:vip"), CommandContext(at: at, part: part), to: &s)
            reachedByPart.append(reached(s))
            XCTAssertTrue(reached(s).allSatisfy { parts.part(ofToken: $0) == part })
        }
        XCTAssertEqual(reachedByPart.flatMap { $0 }.sorted(), tokens.enumerated().filter { $0.offset % 2 == 0 }.map(\.element).sorted(),
                       "the parts together reach each selected device once")
    }
}

extension DeviceChangeHandlerTests {
    func testALocalizedSendGivesEachDeviceItsLocalesTextAndCountsThem() throws {
        var brazil = device(t1), portugal = device(t2), unknown = device(t3)
        brazil.locale = "pt-BR"
        portugal.locale = "pt-PT"
        unknown.locale = "ja"
        var s = state(devices: [brazil, portugal, unknown])
        var c = NotificationRequested(deliveryId: UUID(), mobileAppId: appId, target: NotificationTarget(audience: "all"),
                                      content: NotificationContent(title: "Goal", localized: ["pt": LocalizedText(title: "Golo"),
                                                                                           "pt-BR": LocalizedText(title: "Gol")]),
                                      managed: false, businessId: nil, tracking: true, kind: .alert)
        XCTAssertEqual(NotificationHandler().apply(c, CommandContext(at: at), to: &s), .applied)
        let titles = try s.outbound.map { message -> String in
            let record = try JSONDecoder().decode(OutboundRecordView.self, from: message.value)
            guard case .object(let payload) = record.payload, case .object(let aps)? = payload["aps"], case .object(let alert)? = aps["alert"],
                  case .string(let title)? = alert["title"] else { throw NoTitle(payload: "\(record.payload)") }
            return "\(record.deviceToken.prefix(2)) \(title)"
        }
        XCTAssertEqual(titles, ["a1 Gol", "b2 Golo", "c3 Goal"])
        guard case .putDelivery(let delivery)? = s.mutations.last(where: { if case .putDelivery = $0 { true } else { false } }) else {
            return XCTFail("no delivery")
        }
        XCTAssertEqual(delivery.sentByLocale, ["pt-BR": 1, "pt": 1, "default": 1])
        c.content.localized = nil
        var plain = state(devices: [brazil])
        _ = NotificationHandler().apply(c, CommandContext(at: at), to: &plain)
        let counted = plain.mutations.compactMap { mutation -> [String: Int]? in
            guard case .putDelivery(let delivery) = mutation else { return nil }
            return delivery.sentByLocale
        }
        XCTAssertEqual(counted, [], "a send without localized text counts no locales")
    }
}

/// An outbound record without the alert title a test looks for.
private struct NoTitle: Error {
    var payload: String
}

extension DeviceChangeHandlerTests {
    func testTokensAreOrderedByTheirBytes() {
        let tokens = ["b", "a", "ab", "", "aa", "B", "é", "e", "ab\u{0}", "z"]
        XCTAssertEqual(tokens.sorted(by: NotificationHandler.bytesPrecede),
                       tokens.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) })
    }
}
