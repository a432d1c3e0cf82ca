import Contracts
import Foundation
import OutboundRendering
import Projections
import WireCodec
import XCTest
@testable import Processor
@testable import Handlers

/// The notification rules (docs/API.md#sending-notifications), decided in memory (no store, no
/// broker).
final class NotificationHandlerTests: XCTestCase {
    let org = UUID(), appId = UUID()
    let at = Date(timeIntervalSince1970: 1_800_000_000.123)
    let iosA = String(repeating: "a1", count: 32), iosB = String(repeating: "b2", count: 32)
    let android = "fcm-" + String(repeating: "x", count: 120)

    private func state(devices: [DeviceRow] = [], pending: [PendingNotificationRow] = [], callbackUrl: String? = nil) -> BatchState {
        var snapshot = StateSnapshot()
        snapshot.apps[AppPart(appId)] = AppRow(appId: appId, orgId: org, name: "a", callbackUrl: callbackUrl,
                                      callbackHeaders: ["X-App-Key": "k1"], webhookRetries: 2, createdAt: at)
        snapshot.tokens[AppPart(appId)] = [ApiTokenRow(tokenId: UUID(), appId: appId, tokenHash: "h", createdAt: at)]
        for d in devices { snapshot.devices[d.key] = d }
        for p in pending {
            snapshot.pending[p.key] = p
            snapshot.pendingCounts[p.key.device, default: 0] += 1
        }
        return BatchState(snapshot)
    }

    private func device(_ token: String, user: String = "u1", platform: Platform = .ios) -> DeviceRow {
        DeviceRow(appId: appId, deviceToken: token, userId: user, platform: platform, version: 1, updatedAt: at)
    }

    private func send(users: [String] = ["u1"], tokens: [String] = [], managed: Bool = false, kind: NotificationKind = .alert,
                      ticketId: String? = nil, message: String? = nil) -> NotificationRequested {
        NotificationRequested(deliveryId: UUID(), mobileAppId: appId, target: NotificationTarget(userIds: users, deviceTokens: tokens),
                              content: NotificationContent(title: "T", body: "B", badge: 7), managed: managed, businessId: "BID",
                              kind: kind, ticketId: ticketId, message: message)
    }

    private func records(_ s: BatchState) throws -> [OutboundRecordView] {
        try s.outbound.map { try JSONDecoder().decode(OutboundRecordView.self, from: $0.value) }
    }

    private func pendingRows(_ s: BatchState) -> [PendingNotificationRow] {
        s.mutations.compactMap { if case .putPending(let row) = $0 { row } else { nil } }
    }

    func testUserWithThreeDevicesOnBothPlatformsGetsOneRecordEach() throws {
        var s = state(devices: [device(iosB), device(android, platform: .android), device(iosA), device(iosA + "00", user: "other")])
        let c = send()
        XCTAssertEqual(NotificationHandler().apply(c, CommandContext(at: at), to: &s), .applied)
        let out = try records(s)
        XCTAssertEqual(out.map(\.deviceToken), [iosA, iosB, android].sorted())
        XCTAssertEqual(s.outbound.map(\.deviceToken), out.map(\.deviceToken), "records are keyed by device token")
        XCTAssertEqual(Set(out.map(\.messageId)).count, 3)
        for (index, r) in out.enumerated() {
            XCTAssertEqual(r.deliveryId, c.deliveryId)
            XCTAssertEqual(r.messageId, MessageId.make(deliveryId: c.deliveryId, index: index))
            XCTAssertEqual(r.mobileAppId, appId)
        }
        let byToken = Dictionary(uniqueKeysWithValues: out.map { ($0.deviceToken, $0) })
        XCTAssertEqual(byToken[iosA]?.platform, .ios)
        XCTAssertEqual(byToken[android]?.platform, .android)
        guard case .object(let ios)? = byToken[iosA]?.payload, case .object(let aps)? = ios["aps"] else { return XCTFail("no aps") }
        XCTAssertEqual(aps["badge"], .number(7))
        guard case .object(let fcm)? = byToken[android]?.payload, case .object(let data)? = fcm["data"] else { return XCTFail("no data") }
        XCTAssertEqual(data["badge"], .string("7"))
        XCTAssertEqual(data["_dId"], .string(c.deliveryId.uuidString.lowercased()))
        XCTAssertTrue(pendingRows(s).isEmpty, "an unmanaged notification is never pending")
        guard case .putDelivery(let delivery)? = s.mutations.last else { return XCTFail("no delivery row") }
        XCTAssertEqual(delivery.sent, 3)
    }

    func testSameCommandOnSameStateRendersIdenticalBytes() {
        let c = send(managed: true)
        var first = state(devices: [device(iosA), device(android, platform: .android)])
        var second = first
        _ = NotificationHandler().apply(c, CommandContext(at: at), to: &first)
        _ = NotificationHandler().apply(c, CommandContext(at: at), to: &second)
        XCTAssertEqual(first.outbound, second.outbound)
    }

    /// A send's one device gets its record rendered as it is, not through a template made for
    /// one record: byte for byte what the template of the same send renders, managed (a badge)
    /// and localized alike.
    func testASendsOnlyDeviceGetsTheBytesItsTemplateWouldRender() throws {
        for (managed, localized) in [(false, false), (true, false), (false, true), (true, true)] {
            var c = send(managed: managed)
            if localized { c.content.localized = ["pt": LocalizedText(title: "Olá")] }
            var s = state(devices: [DeviceRow(appId: appId, deviceToken: iosA, userId: "u1", platform: .ios, version: 1, updatedAt: at,
                                              locale: localized ? "pt-BR" : nil)])
            XCTAssertEqual(NotificationHandler().apply(c, CommandContext(at: at), to: &s), .applied)
            let record = try XCTUnwrap(s.outbound.first)
            guard case .rendered = record.body else { return XCTFail("managed \(managed), localized \(localized): a template for one record") }
            var rendered = c
            if localized { rendered.content = c.content.localized("pt") }
            let template = OutboundTemplate(rendered, platform: .ios, sentAt: at, managedBadge: managed ? 1 : nil,
                                            series: MessageId.Series(deliveryId: c.deliveryId), locale: localized ? "pt" : nil)
            XCTAssertEqual(record.value, template.record(deviceToken: iosA, index: 0), "managed \(managed), localized \(localized)")
        }
    }

    func testDeviceTokenTargetSkipsUnknownTokensAndRepeats() throws {
        var s = state(devices: [device(iosA), device(iosB, user: "u2")])
        let c = send(users: [], tokens: [iosB, "unknown", iosA, iosB])
        XCTAssertEqual(NotificationHandler().apply(c, CommandContext(at: at), to: &s), .applied)
        XCTAssertEqual(try records(s).map(\.deviceToken), [iosB, iosA], "as listed, each once")
    }

    func testNoDeviceWritesNothingButTheDelivery() {
        var s = state()
        XCTAssertEqual(NotificationHandler().apply(send(users: ["nobody"]), CommandContext(at: at), to: &s), .rejected("no-devices"))
        XCTAssertTrue(s.outbound.isEmpty)
        guard case .putDelivery(let delivery)? = s.mutations.last else { return XCTFail("no delivery row") }
        XCTAssertEqual(delivery.sent, 0)
    }

    /// Ingest gives every send a new delivery id: a second command of the app with a known one is
    /// a copied record, refused whole. Another app's delivery of the same id is not looked at (it
    /// is another shard's): the send is this app's own delivery.
    func testASendWhoseDeliveryIdIsKnownIsRefusedAndWritesNothing() {
        let c = send(managed: true)
        var other = state(devices: [device(iosA)])
        other.record(DeliveryRow(appId: UUID(), deliveryId: c.deliveryId, kind: .alert, managed: false, tracking: true, sent: 1, createdAt: at))
        XCTAssertEqual(NotificationHandler().apply(c, CommandContext(at: at), to: &other), .applied)
        XCTAssertEqual(other.outbound.count, 1)
        for owner in [appId] {
            var s = state(devices: [device(iosA)])
            s.record(DeliveryRow(appId: owner, deliveryId: c.deliveryId, kind: .alert, managed: false, tracking: true, sent: 1, createdAt: at))
            let before = s.mutations
            XCTAssertEqual(NotificationHandler().apply(c, CommandContext(at: at), to: &s), .rejected("duplicate-delivery"))
            XCTAssertEqual(s.mutations, before)
            XCTAssertTrue(s.outbound.isEmpty)
        }
    }

    func testManagedNotificationIsPendingAndBadgeCountsPending() throws {
        let earlier = PendingNotificationRow(appId: appId, deviceToken: iosA, notificationId: UUID().uuidString.lowercased(),
                                             deliveryId: UUID(), sentAt: at, text: "old", businessId: nil)
        var s = state(devices: [device(iosA), device(android, platform: .android)], pending: [earlier])
        let c = send(managed: true)
        _ = NotificationHandler().apply(c, CommandContext(at: at), to: &s)
        let rows = pendingRows(s)
        XCTAssertEqual(rows.map(\.deviceToken).sorted(), [iosA, android].sorted())
        XCTAssertTrue(rows.allSatisfy { $0.notificationId == c.notificationId && $0.text == "B" && $0.businessId == "BID" && $0.sentAt == at })
        XCTAssertEqual(s.pendingCount(DeviceKey(appId: appId, deviceToken: iosA)), 2)
        let byToken = Dictionary(uniqueKeysWithValues: try records(s).map { ($0.deviceToken, $0) })
        guard case .object(let ios)? = byToken[iosA]?.payload, case .object(let aps)? = ios["aps"] else { return XCTFail("no aps") }
        XCTAssertEqual(aps["badge"], .number(2), "managed badge = pending count, not the request's badge")
        XCTAssertEqual(ios["badge"], .string("2"))
        XCTAssertEqual(ios["nid"], .string(c.notificationId))
        XCTAssertEqual(ios["faf"], .string("false"))
        XCTAssertEqual(ios["timestamp"], .string("1800000000123"))
        guard case .object(let fcm)? = byToken[android]?.payload, case .object(let data)? = fcm["data"] else { return XCTFail("no data") }
        XCTAssertEqual(data["badge"], .string("1"))
        XCTAssertEqual(data["bid"], .string("BID"))
    }

    func testAckRemovesPendingAndSendsBadgeUpdate() throws {
        let nid = UUID().uuidString.lowercased()
        let pending = [nid, "other"].map {
            PendingNotificationRow(appId: appId, deviceToken: iosA, notificationId: $0, deliveryId: UUID(), sentAt: at, text: "t", businessId: nil)
        }
        var s = state(devices: [device(iosA)], pending: pending)
        let ackId = UUID()
        XCTAssertEqual(AckHandler().apply(NotificationAcknowledged(mobileAppId: appId, notificationId: nid, deviceToken: iosA),
                                        CommandContext(id: ackId, at: at), to: &s), .applied)
        XCTAssertEqual(s.pendingCount(DeviceKey(appId: appId, deviceToken: iosA)), 1)
        XCTAssertTrue(s.mutations.contains(.deletePending(PendingKey(appId: appId, deviceToken: iosA, notificationId: nid))))
        let update = try XCTUnwrap(try records(s).first)
        XCTAssertNil(update.deliveryId)
        XCTAssertEqual(update.messageId, MessageId.badgeUpdate(ackId: ackId))
        XCTAssertEqual(update.payload, try JSONValue.parse(Data(#"{"aps":{"badge":1},"badge":"1"}"#.utf8)))

        _ = AckHandler().apply(NotificationAcknowledged(mobileAppId: appId, notificationId: "other", deviceToken: iosA), CommandContext(id: UUID(), at: at), to: &s)
        XCTAssertEqual(try records(s).last?.payload, try JSONValue.parse(Data(#"{"aps":{"badge":0},"badge":"0"}"#.utf8)))
    }

    func testAndroidBadgeUpdateIsADataMessage() throws {
        let pending = PendingNotificationRow(appId: appId, deviceToken: android, notificationId: "n", deliveryId: UUID(), sentAt: at,
                                             text: "t", businessId: nil)
        var s = state(devices: [device(android, platform: .android)], pending: [pending])
        _ = AckHandler().apply(NotificationAcknowledged(mobileAppId: appId, notificationId: "n", deviceToken: android), CommandContext(id: UUID(), at: at), to: &s)
        XCTAssertEqual(try records(s).first?.payload, try JSONValue.parse(Data(#"{"data":{"badge":"0"}}"#.utf8)))
    }

    /// A device learns a notification's id from its push, so an ack applied before its
    /// notification was made up: it is refused and leaves nothing, and the notification is then
    /// pending as any other.
    func testAnAckOfANotificationNotPendingIsRefusedAndLeavesNothing() throws {
        let c = send(managed: true)
        var s = state(devices: [device(iosA), device(iosB)])
        let ack = NotificationAcknowledged(mobileAppId: appId, notificationId: c.notificationId, deviceToken: iosA)
        XCTAssertEqual(AckHandler().apply(ack, CommandContext(id: UUID(), at: at), to: &s), .rejected("not-pending"))
        XCTAssertEqual(s.mutations, [], "no ack is stored")
        XCTAssertTrue(s.outbound.isEmpty, "no badge update is sent")
        _ = NotificationHandler().apply(c, CommandContext(at: at), to: &s)
        XCTAssertEqual(pendingRows(s).map(\.deviceToken), [iosA, iosB], "every device has the notification pending")
    }

    /// The first ack of a (device, notification) counts; a repeat (the SDK retries) finds nothing
    /// pending: nothing more is stored and no second badge update is sent.
    func testARepeatedAckIsRefusedWithoutASecondBadge() throws {
        let pending = PendingNotificationRow(appId: appId, deviceToken: iosA, notificationId: "n", deliveryId: UUID(), sentAt: at,
                                             text: "t", businessId: nil)
        var s = state(devices: [device(iosA)], pending: [pending])
        let ack = NotificationAcknowledged(mobileAppId: appId, notificationId: "n", deviceToken: iosA)
        XCTAssertEqual(AckHandler().apply(ack, CommandContext(id: UUID(), at: at), to: &s), .applied)
        let written = s.mutations
        XCTAssertEqual(written.filter { if case .putAck = $0 { true } else { false } }.count, 1)
        XCTAssertEqual(AckHandler().apply(ack, CommandContext(id: UUID(), at: at), to: &s), .rejected("not-pending"))
        XCTAssertEqual(s.mutations, written)
        XCTAssertEqual(try records(s).count, 1)
    }

    /// A device is sent at most `maxBadgeUpdatesPerMinute` badge updates per minute of log time:
    /// the acks past them still count (nothing stays pending) and send none, and the first ack
    /// after the window sends the device's badge again.
    func testBadgeUpdatesPerDeviceAreLimitedPerMinuteOfLogTime() throws {
        let pending = (0..<6).map {
            PendingNotificationRow(appId: appId, deviceToken: iosA, notificationId: "n\($0)", deliveryId: UUID(), sentAt: at, text: "t",
                                   businessId: nil)
        }
        var s = state(devices: [device(iosA)], pending: pending)
        let handler = AckHandler(maxBadgeUpdatesPerMinute: 2)
        func ack(_ n: Int, after seconds: TimeInterval) -> HandlerResult {
            handler.apply(NotificationAcknowledged(mobileAppId: appId, notificationId: "n\(n)", deviceToken: iosA),
                          CommandContext(id: UUID(), at: at.addingTimeInterval(seconds)), to: &s)
        }
        for n in 0..<4 { XCTAssertEqual(ack(n, after: Double(n)), .applied) }
        XCTAssertEqual(s.pendingCount(DeviceKey(appId: appId, deviceToken: iosA)), 2, "every ack counts")
        XCTAssertEqual(try records(s).map(\.payload), try [5, 4].map { try JSONValue.parse(Data(#"{"aps":{"badge":\#($0)},"badge":"\#($0)"}"#.utf8)) },
                       "two badge updates in the minute")
        XCTAssertEqual(ack(4, after: 59.9), .applied)
        XCTAssertEqual(s.outbound.count, 2, "still the same window")
        XCTAssertEqual(ack(5, after: 60), .applied)
        XCTAssertEqual(try records(s).last?.payload, try JSONValue.parse(Data(#"{"aps":{"badge":0},"badge":"0"}"#.utf8)),
                       "a new window: the device's badge is right again")
        XCTAssertEqual(s.devices[DeviceKey(appId: appId, deviceToken: iosA)]?.badges, 1)
        XCTAssertEqual(s.devices[DeviceKey(appId: appId, deviceToken: iosA)]?.badgesSince, at.addingTimeInterval(60))
    }

    func testAnAckOfAnUnknownDeviceLeavesNothingBehind() {
        var s = state()
        let result = AckHandler().apply(NotificationAcknowledged(mobileAppId: appId, notificationId: "n", deviceToken: iosA), CommandContext(id: UUID(), at: at), to: &s)
        XCTAssertEqual(result, .rejected("unknown-device"))
        XCTAssertTrue(s.outbound.isEmpty)
        XCTAssertEqual(s.mutations, [], "nothing one client sends about devices the app does not have is stored")
    }

    func testTicketCallsBackOncePerUserWithSeedShape() throws {
        var s = state(devices: [device(iosA, user: "123"), device(android, user: "123", platform: .android), device(iosB, user: "alice")],
                      callbackUrl: "http://127.0.0.1:9/cb")
        let c = send(users: ["123", "alice"], kind: .ticket, ticketId: "77")
        _ = NotificationHandler().apply(c, CommandContext(at: at), to: &s)
        let jobs = s.mutations.compactMap { if case .enqueueOutbox(let job) = $0 { job } else { nil } }
        XCTAssertEqual(jobs.count, 2)
        let first = try XCTUnwrap(jobs.first { $0.id.hasSuffix(":123") })
        XCTAssertEqual(first.id, "callback:\(c.deliveryId.uuidString.lowercased()):123")
        XCTAssertEqual(first.url, "http://127.0.0.1:9/cb")
        XCTAssertEqual(first.maxAttempts, 3)
        XCTAssertEqual(first.headers["X-App-Key"], "k1")
        XCTAssertEqual(first.headers["Content-Type"], "application/json")
        XCTAssertEqual(first.headers["Accept"], "application/json")
        let body = try JSONValue.parse(first.body)
        let expected = try JSONValue.parse(Data("""
            {"user":{"user_id":123},"device":[{"device_token":"\(iosA)","type":"IOS"},{"device_token":"\(android)","type":"ANDROID"}],
             "notification":{"ticket_id":"77","type":"ticket"}}
            """.utf8))
        XCTAssertEqual(body, expected)
    }

    func testImCallbackCarriesTheMessage() throws {
        var s = state(devices: [device(iosA, user: "bob")], callbackUrl: "http://127.0.0.1:9/cb")
        _ = NotificationHandler().apply(send(users: ["bob"], kind: .im, message: "hello"), CommandContext(at: at), to: &s)
        let job = try XCTUnwrap(s.mutations.compactMap { if case .enqueueOutbox(let job) = $0 { job } else { nil } }.first)
        XCTAssertEqual(try JSONValue.parse(job.body), try JSONValue.parse(Data("""
            {"user":{"user_id":"bob"},"device":[{"device_token":"\(iosA)","type":"IOS"}],"notification":{"message":"hello","type":"im"}}
            """.utf8)))
    }

    func testAlertsAndAppsWithoutCallbackUrlCallNothingBack() {
        var withUrl = state(devices: [device(iosA)], callbackUrl: "http://127.0.0.1:9/cb")
        _ = NotificationHandler().apply(send(), CommandContext(at: at), to: &withUrl)
        var withoutUrl = state(devices: [device(iosA)])
        _ = NotificationHandler().apply(send(kind: .ticket, ticketId: "1"), CommandContext(at: at), to: &withoutUrl)
        for s in [withUrl, withoutUrl] {
            XCTAssertFalse(s.mutations.contains { if case .enqueueOutbox = $0 { true } else { false } })
        }
    }

    func testDeletedDeviceLosesItsPendingAndGetsNothingMore() throws {
        let p = PendingNotificationRow(appId: appId, deviceToken: iosA, notificationId: "n1", deliveryId: UUID(), sentAt: at, text: "t", businessId: nil)
        var s = state(devices: [device(iosA), device(iosB)], pending: [p])
        let cleanup = DeviceCleanupRequested(orgId: org, mobileAppId: appId, userId: "u1", deviceToken: iosA, apiTokenHash: "h")
        XCTAssertEqual(CleanupHandler().apply(cleanup, CommandContext(at: at), to: &s), .applied)
        XCTAssertTrue(s.mutations.contains(.clearPending(DeviceKey(appId: appId, deviceToken: iosA))))
        XCTAssertEqual(s.pendingCount(DeviceKey(appId: appId, deviceToken: iosA)), 0)
        _ = NotificationHandler().apply(send(), CommandContext(at: at), to: &s)
        XCTAssertEqual(try records(s).map(\.deviceToken), [iosB])
    }

    func testDeviceMovingToAnotherUserLosesItsPending() {
        let p = PendingNotificationRow(appId: appId, deviceToken: iosA, notificationId: "n1", deliveryId: UUID(), sentAt: at, text: "t", businessId: nil)
        var s = state(devices: [device(iosA)], pending: [p])
        s.upsert(device(iosA, user: "u2"))
        XCTAssertTrue(s.mutations.contains(.clearPending(DeviceKey(appId: appId, deviceToken: iosA))))
        XCTAssertEqual(s.devices(of: UserKey(appId: appId, userId: "u1"), part: 0), [])
        XCTAssertEqual(s.devices(of: UserKey(appId: appId, userId: "u2"), part: 0).map(\.deviceToken), [iosA])
    }
    // MARK: - Idempotency keys (docs/API.md#idempotency-keys)

    private func keyed(_ key: String, hash: String, users: [String] = ["u1"]) -> NotificationRequested {
        var c = send(users: users)
        c.deliveryId = IdempotencyKeys.deliveryId(app: appId, key: key)
        c.idempotencyKey = key
        c.requestHash = hash
        return c
    }

    private func deliveryRow(_ s: BatchState) -> DeliveryRow? {
        s.mutations.reversed().lazy.compactMap { if case .putDelivery(let row) = $0 { row } else { nil } }.first
    }

    /// The first send of a key is sent and remembers its key and body; every later one within the
    /// window is counted on the delivery (a duplicate or, with another body, a conflict) and sends
    /// nothing, whichever target it names.
    func testAKeyReachesEachDeviceOnceAndCountsItsRepeats() throws {
        var s = state(devices: [device(iosA), device(iosB, user: "u2")])
        let first = keyed("order-1", hash: "h1")
        XCTAssertEqual(NotificationHandler().apply(first, CommandContext(at: at), to: &s), .applied)
        XCTAssertEqual(try records(s).map(\.deviceToken), [iosA])
        let applied = try XCTUnwrap(deliveryRow(s))
        XCTAssertEqual(applied.idempotencyKey, "order-1")
        XCTAssertEqual(applied.requestHash, "h1")

        let later = at.addingTimeInterval(3600)
        XCTAssertEqual(NotificationHandler().apply(first, CommandContext(at: later), to: &s), .rejected("idempotent-repeat"))
        XCTAssertEqual(NotificationHandler().apply(keyed("order-1", hash: "h2", users: ["u2"]), CommandContext(at: later), to: &s),
                       .rejected("idempotency-key-conflict"))
        XCTAssertEqual(NotificationHandler().apply(first, CommandContext(at: later), to: &s), .rejected("idempotent-repeat"))
        XCTAssertEqual(try records(s).map(\.deviceToken), [iosA], "nothing more was sent")
        let counted = try XCTUnwrap(deliveryRow(s))
        XCTAssertEqual([counted.duplicates, counted.conflicts, counted.sent], [2, 1, 1])
        XCTAssertEqual(counted.createdAt, at, "the first send's time stays")
    }

    /// The window is counted in command times from the first send: at its end the key's id is
    /// refused (ingest derives the next id for a reuse), and the next id is a new send.
    func testAfterTheWindowTheKeysNextDeliveryIsANewSend() throws {
        let handler = NotificationHandler(idempotencyWindow: .seconds(3600))
        var s = state(devices: [device(iosA)])
        let first = keyed("k", hash: "h1")
        XCTAssertEqual(handler.apply(first, CommandContext(at: at), to: &s), .applied)
        XCTAssertEqual(handler.apply(first, CommandContext(at: at.addingTimeInterval(3599.999)), to: &s), .rejected("idempotent-repeat"))
        XCTAssertEqual(handler.apply(first, CommandContext(at: at.addingTimeInterval(3600)), to: &s), .rejected("idempotency-key-expired"))
        var reuse = keyed("k", hash: "h2")
        reuse.deliveryId = IdempotencyKeys.nextId(after: first.deliveryId, key: "k")
        XCTAssertEqual(handler.apply(reuse, CommandContext(at: at.addingTimeInterval(3600)), to: &s), .applied)
        XCTAssertEqual(try records(s).map(\.deliveryId), [first.deliveryId, reuse.deliveryId])
    }

    /// A command whose id is known but whose key is not the delivery's (a copied record of an
    /// unkeyed send given a key, say) is refused and counts nothing.
    func testAKeyedSendWithTheIdOfAnotherKeysDeliveryIsRefused() {
        var s = state(devices: [device(iosA)])
        var c = keyed("a", hash: "h")
        s.record(DeliveryRow(appId: appId, deliveryId: c.deliveryId, kind: .alert, managed: false, tracking: true, sent: 1, createdAt: at,
                             idempotencyKey: "b", requestHash: "h"))
        let before = s.mutations
        XCTAssertEqual(NotificationHandler().apply(c, CommandContext(at: at), to: &s), .rejected("duplicate-delivery"))
        c.idempotencyKey = nil
        XCTAssertEqual(NotificationHandler().apply(c, CommandContext(at: at), to: &s), .rejected("duplicate-delivery"))
        XCTAssertEqual(s.mutations, before)
        XCTAssertTrue(s.outbound.isEmpty)
    }
}
