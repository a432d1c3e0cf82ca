import Contracts
import Foundation
import OutboundRendering
import Projections
import XCTest
@testable import Handlers

/// The handlers in an app split into parts (docs/ARCHITECTURE.md#one-app-in-parts): each part
/// decides from its own rows and for the devices it holds, so that what one part decides never
/// depends on another part's rows.
final class AppPartsHandlerTests: XCTestCase {
    let org = UUID(), appId = UUID(), tokenHash = ApiTokens.hash("good-token")
    let at = Date(timeIntervalSince1970: 1_800_000_000)
    let parts = AppParts(2)

    /// Hex tokens (APNs form), three of part 0 and three of part 1.
    lazy var tokens: [[String]] = {
        var byPart: [[String]] = [[], []]
        for n in 0..<256 {
            let token = String(format: "%064x", n)
            let part = parts.part(ofToken: token)
            if byPart[part].count < 3 { byPart[part].append(token) }
        }
        return byPart
    }()

    /// Both parts' views of the app, and `devices`.
    private func state(devices: [DeviceRow] = [], callbackUrl: String? = nil) -> BatchState {
        var snapshot = StateSnapshot()
        for part in parts.all {
            snapshot.apps[AppPart(appId, part: part)] = AppRow(appId: appId, orgId: org, name: "a", callbackUrl: callbackUrl, createdAt: at,
                                                               part: part)
            snapshot.tokens[AppPart(appId, part: part)] = [ApiTokenRow(tokenId: UUID(), appId: appId, tokenHash: tokenHash, createdAt: at,
                                                                       part: part)]
        }
        snapshot.add(devices: devices)
        return BatchState(snapshot, parts: parts)
    }

    private func device(_ token: String, user: String = "u") -> DeviceRow {
        DeviceRow(appId: appId, deviceToken: token, userId: user, platform: .ios, version: 1, updatedAt: at)
    }

    private func registration(_ token: String, user: String = "u") -> DeviceRegistrationRequested {
        DeviceRegistrationRequested(registrationRequestId: UUID(), orgId: org, mobileAppId: appId, userId: user, platform: .ios,
                                    deviceToken: token, apiTokenHash: tokenHash, trackStatus: true, callback: nil)
    }

    func testACommandAboutADeviceIsDecidedOnlyByItsTokensPart() {
        let handler = RegistrationHandler(verifier: TokenFormatVerifier())
        var s = state()
        let token = tokens[1][0]
        XCTAssertEqual(handler.apply(registration(token), CommandContext(at: at, part: 0), to: &s), .rejected("another-part"))
        XCTAssertTrue(s.mutations.isEmpty, "part 0 leaves part 1's device alone")
        XCTAssertEqual(handler.apply(registration(token), CommandContext(at: at, part: 1), to: &s), .applied)
        XCTAssertNotNil(s.devices[DeviceKey(appId: appId, deviceToken: token)])

        let ack = NotificationAcknowledged(mobileAppId: appId, notificationId: "n", deviceToken: token)
        XCTAssertEqual(AckHandler().apply(ack, CommandContext(at: at, part: 0), to: &s), .rejected("another-part"))
        let cleanup = DeviceCleanupRequested(orgId: org, mobileAppId: appId, userId: "u", deviceToken: token, apiTokenHash: tokenHash)
        XCTAssertEqual(CleanupHandler().apply(cleanup, CommandContext(at: at, part: 0), to: &s), .rejected("another-part"))
        XCTAssertNotNil(s.devices[DeviceKey(appId: appId, deviceToken: token)])
    }

    /// The per-user cap counts the devices of the user that the part holds.
    func testAPartKeepsItsOwnDevicesOfAUserWithinTheCap() {
        let handler = RegistrationHandler(verifier: TokenFormatVerifier(), maxDevicesPerUser: 1)
        var s = state(devices: [device(tokens[0][0]), device(tokens[1][0])])
        XCTAssertEqual(handler.apply(registration(tokens[1][1]), CommandContext(at: at.addingTimeInterval(1), part: 1), to: &s), .applied)
        XCTAssertNotNil(s.devices[DeviceKey(appId: appId, deviceToken: tokens[0][0])], "part 0's device is not part 1's to retire")
        XCTAssertNil(s.devices[DeviceKey(appId: appId, deviceToken: tokens[1][0])], "part 1's older device is retired")
        XCTAssertNotNil(s.devices[DeviceKey(appId: appId, deviceToken: tokens[1][1])])
    }

    func testACleanupOfAllOfAUsersDevicesRemovesThoseOfItsPart() {
        var s = state(devices: [device(tokens[0][0]), device(tokens[1][0]), device(tokens[1][1])])
        let cleanup = DeviceCleanupRequested(orgId: org, mobileAppId: appId, userId: "u", deviceToken: nil, apiTokenHash: tokenHash)
        XCTAssertEqual(CleanupHandler().apply(cleanup, CommandContext(at: at, part: 1), to: &s), .applied)
        XCTAssertEqual(Set(s.devices.keys.map(\.deviceToken)), [tokens[0][0]])
    }

    /// Each part sends to the devices of the target it holds, names them by indexes of its own and
    /// records its own row of the delivery; a delivery's figures are the sum of its parts' rows.
    func testASendToAUserIsRenderedByEachPartForItsDevicesWithItsOwnIndexes() throws {
        var s = state(devices: [device(tokens[0][0]), device(tokens[1][0]), device(tokens[1][1]), device(tokens[0][1], user: "other")])
        let delivery = UUID()
        let send = NotificationRequested(deliveryId: delivery, mobileAppId: appId, target: NotificationTarget(userIds: ["u"]),
                                         content: NotificationContent(title: "t"), managed: false, businessId: nil, tracking: true)
        let handler = NotificationHandler()
        for part in parts.all { XCTAssertEqual(handler.apply(send, CommandContext(at: at, part: part), to: &s), .applied) }

        let series = MessageId.Series(deliveryId: delivery)
        let sent = try s.outbound.map { message in
            (message.deviceToken, try XCTUnwrap(Self.messageId(in: message.value).flatMap { series.index(of: $0) }))
        }
        XCTAssertEqual(sent.map(\.0), [tokens[0][0]] + tokens[1][0...1].sorted())
        XCTAssertEqual(sent.map(\.1), [0, AppParts.indexStride, AppParts.indexStride + 1])
        let rows = parts.all.map { s.delivery(delivery, app: appId, part: $0) }
        XCTAssertEqual(rows.map { $0?.sent }, [1, 2])
        XCTAssertEqual(DeliveryRow.summed(rows.compactMap { $0 })?.sent, 3)
        XCTAssertTrue(rows[1]!.sentTo(messageIndex: AppParts.indexStride + 1))
        XCTAssertFalse(rows[1]!.sentTo(messageIndex: 1), "an index of part 0 is not part 1's")
        XCTAssertFalse(rows[1]!.sentTo(messageIndex: AppParts.indexStride + 2), "past part 1's sent count")
    }

    /// A ticket send's callbacks: each part stores its share (the users of its devices), also a
    /// part with none of them and whatever its view of the URL, and the merge of the shares
    /// calls back as one part holding every device would.
    func testEachPartStoresItsShareOfACallbackAndTheSharesMergeIntoOnePerUser() throws {
        let devices = [device(tokens[0][0]), device(tokens[1][1]), device(tokens[1][0]), device(tokens[1][2], user: "other")]
        var s = state(devices: devices, callbackUrl: "https://cb.example/hook")
        let delivery = UUID()
        let send = NotificationRequested(deliveryId: delivery, mobileAppId: appId, target: NotificationTarget(userIds: ["u", "other"]),
                                         content: NotificationContent(title: "t"), managed: false, businessId: nil, tracking: true,
                                         kind: .ticket, ticketId: "T-9")
        for part in parts.all { XCTAssertEqual(NotificationHandler().apply(send, CommandContext(at: at, part: part), to: &s), .applied) }

        let jobs = s.mutations.compactMap { mutation -> OutboxJob? in
            if case .enqueueOutbox(let job) = mutation { return job }
            return nil
        }
        XCTAssertEqual(jobs.map(\.id), parts.all.map { CallbackShare.jobId(delivery, part: $0) })
        XCTAssertTrue(jobs.allSatisfy { $0.kind == CallbackShare.jobKind && $0.url == "https://cb.example/hook" })
        let shares = try jobs.map(CallbackShare.init(job:))
        XCTAssertEqual(shares[0].users, [CallbackShare.User(userId: "u", devices: [CallbackShare.Device(token: tokens[0][0], platform: .ios)])])
        XCTAssertEqual(shares[1].users.map(\.userId), ["other", "u"])
        let merged = try CallbackShare.merge(jobs).compactMap { mutation -> OutboxJob? in
            if case .enqueueOutbox(let job) = mutation { return job }
            return nil
        }
        var snapshot = StateSnapshot()
        snapshot.apps[AppPart(appId)] = AppRow(appId: appId, orgId: org, name: "a", callbackUrl: "https://cb.example/hook", createdAt: at)
        snapshot.add(devices: devices)
        var one = BatchState(snapshot, parts: .one)
        XCTAssertEqual(NotificationHandler().apply(send, CommandContext(at: at), to: &one), .applied)
        let oneJobs = one.mutations.compactMap { mutation -> OutboxJob? in
            if case .enqueueOutbox(let job) = mutation { return job }
            return nil
        }
        XCTAssertEqual(oneJobs.map(\.id), ["other", "u"].map { CallbackShare.callbackId(delivery, userId: $0) })
        XCTAssertEqual(merged, oneJobs, "the same callbacks as an app in one part")

        // A part whose view of the app has no URL stores its share all the same: part 0's view decides.
        var bare = state(devices: devices)
        XCTAssertEqual(NotificationHandler().apply(send, CommandContext(at: at, part: 1), to: &bare), .applied)
        guard case .enqueueOutbox(let job)? = bare.mutations.last else { return XCTFail("part 1 stores its share") }
        XCTAssertEqual(job.url, "")
        XCTAssertEqual(try CallbackShare(job: job), shares[1])
    }

    /// The message id in an outbound record's JSON, wherever the platform's payload puts it.
    private static func messageId(in value: Data) -> String? {
        let text = String(decoding: value, as: UTF8.self)
        guard let range = text.range(of: #"[0-9]+-[0-9a-f]{16}"#, options: .regularExpression) else { return nil }
        return String(text[range])
    }

    /// Every part refuses a repeat of a keyed send; part 0 alone counts it.
    func testAKeyedSendRepeatedIsRefusedByEveryPartAndCountedOnce() {
        var s = state(devices: [device(tokens[0][0]), device(tokens[1][0])])
        let delivery = UUID()
        let send = NotificationRequested(deliveryId: delivery, mobileAppId: appId, target: NotificationTarget(userIds: ["u"]),
                                         content: NotificationContent(title: "t"), managed: false, businessId: nil, tracking: true,
                                         idempotencyKey: "k", requestHash: "h")
        let handler = NotificationHandler()
        for part in parts.all { _ = handler.apply(send, CommandContext(at: at, part: part), to: &s) }
        let outbound = s.outbound.count
        for part in parts.all {
            XCTAssertEqual(handler.apply(send, CommandContext(at: at.addingTimeInterval(1), part: part), to: &s), .rejected("idempotent-repeat"))
        }
        XCTAssertEqual(s.outbound.count, outbound, "nothing sent again")
        XCTAssertEqual(parts.all.map { s.delivery(delivery, app: appId, part: $0)?.duplicates }, [1, 0])
    }

    /// A report is counted by its message index's part against that part's row; an index of
    /// another part is not this part's to count.
    func testTrackingIsCountedAgainstThePartsOwnRow() {
        var s = state(devices: [device(tokens[0][0]), device(tokens[1][0])])
        let delivery = UUID()
        let send = NotificationRequested(deliveryId: delivery, mobileAppId: appId, target: NotificationTarget(userIds: ["u"]),
                                         content: NotificationContent(title: "t"), managed: false, businessId: nil, tracking: true)
        for part in parts.all { _ = NotificationHandler().apply(send, CommandContext(at: at, part: part), to: &s) }
        let series = MessageId.Series(deliveryId: delivery)
        let report = TrackingReported(mobileAppId: appId, deliveryId: delivery, events: [
            TrackingEvent(broadlogId: series.make(index: AppParts.indexStride), action: .open),
            TrackingEvent(broadlogId: series.make(index: 0), action: .open),
            TrackingEvent(broadlogId: series.make(index: AppParts.indexStride + 1), action: .open),
        ])
        XCTAssertEqual(TrackingHandler().apply(report, CommandContext(at: at, part: 1), to: &s), .applied)
        s.finishTracking()
        XCTAssertEqual(s.trackingOutcomes[.counted], 1)
        XCTAssertEqual(s.trackingOutcomes[.rejected(.foreignBroadlog)], 2)
        guard case .countTracking(let counts)? = s.mutations.last else { return XCTFail("\(s.mutations.last as Any)") }
        XCTAssertEqual(counts.part, 1)
        XCTAssertEqual(counts.counts, [TrackingCount(action: .open, messageIndex: AppParts.indexStride)])
    }

    /// Every part applies an admin command to its own view of the app; the idempotency key's first
    /// request is kept once, by part 0.
    func testEveryPartKeepsItsOwnViewOfTheAppAndPartZeroTheKeys() {
        var s = BatchState(StateSnapshot(), parts: parts)
        var created = AppCreated(orgId: org, mobileAppId: appId, name: "a", tokenId: UUID(), tokenHash: tokenHash)
        created.idempotency = IdempotencyStamp(scope: "apps", key: "k", requestHash: "h")
        for part in parts.all { XCTAssertEqual(AppCreatedHandler().apply(created, CommandContext(at: at, part: part), to: &s), .applied) }
        XCTAssertEqual(parts.all.map { s.app(appId, part: $0)?.part }, [0, 1])
        XCTAssertEqual(parts.all.map { s.tokens(of: appId, part: $0).map(\.part) }, [[0], [1]])
        XCTAssertEqual(s.mutations.filter { if case .putIdempotencyKey = $0 { true } else { false } }.count, 1)
        let renamed = AppSettingsChanged(mobileAppId: appId, name: "b")
        XCTAssertEqual(AppSettingsChangedHandler().apply(renamed, CommandContext(at: at, part: 1), to: &s), .applied)
        XCTAssertEqual(parts.all.map { s.app(appId, part: $0)?.name }, ["a", "b"], "part 0 applies it when it reaches it")
    }
}
