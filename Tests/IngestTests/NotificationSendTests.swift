import Contracts
import Foundation
import Projections
import Hummingbird
import HummingbirdTesting
import OutboundRendering
import WireCodec
import XCTest

/// `POST /v1/apps/{mobileAppId}/notifications` (docs/API.md#sending-notifications): one
/// `NotificationRequested` per accepted request, `202 {"deliveryId"}`; every rule of the body a 400
/// naming its field.
final class NotificationSendTests: XCTestCase {
    private func send(_ json: String, harness: Harness) async throws -> TestResponse {
        try await harness.test { client in try await client.bearer(.post, Fixture.notifications(), json: json) }
    }

    /// The delivery id of a 202, checked to be a lower-case UUID.
    private func deliveryId(_ response: TestResponse, file: StaticString = #filePath, line: UInt = #line) throws -> UUID {
        XCTAssertEqual(response.status, .accepted, String(buffer: response.body), file: file, line: line)
        XCTAssertEqual(response.headers[.contentType], "application/json", file: file, line: line)
        let answer = try decodeBody(NotificationAPI.SendAccepted.self, response)
        XCTAssertEqual(answer.deliveryId, answer.deliveryId.lowercased(), file: file, line: line)
        return try XCTUnwrap(UUID(uuidString: answer.deliveryId), file: file, line: line)
    }

    func testAFullSendToOneUserPublishesEveryField() async throws {
        let harness = Harness()
        await harness.seedClientApps()
        let json = """
            {"userId": "user-1", "title": "Gate change", "body": "Now B67", "text": "Boarding at B67", "sound": "default",
             "badge": 3, "category": "GATE", "uri": "myapp://flights/1", "mediaAttachmentUrl": "https://cdn.example.com/a.png",
             "contentAvailable": true, "mutableContent": true, "collapseKey": "flight-1", "priority": "high", "timeToLive": 3600,
             "custom": {"flight": "LH1", "gate": "B67"}, "managed": true, "businessId": "GATE_CHANGE", "tracking": "off"}
            """
        let response = try await send(json, harness: harness)
        let deliveryId = try deliveryId(response)
        let command = try await harness.onlyPublished(NotificationRequested.self)
        XCTAssertEqual(command, NotificationRequested(
            deliveryId: deliveryId, mobileAppId: Fixture.appId, target: NotificationTarget(userIds: ["user-1"]),
            content: NotificationContent(title: "Gate change", body: "Now B67", text: "Boarding at B67", sound: "default", badge: 3,
                                         category: "GATE", uri: "myapp://flights/1", mediaAttachmentUrl: "https://cdn.example.com/a.png",
                                         contentAvailable: true, mutableContent: true, collapseKey: "flight-1", priority: .high,
                                         custom: ["flight": "LH1", "gate": "B67"], timeToLive: 3600),
            managed: true, businessId: "GATE_CHANGE", tracking: false, kind: .alert))
        let encoded = await harness.publisher.commands
        XCTAssertEqual(encoded.map(\.topic), ["pushline.commands.notification"])
        XCTAssertEqual(encoded.map(\.key), [Fixture.appKey], "a send shares its app's partition")
        XCTAssertEqual(encoded.map(\.type), ["notification.requested"])
    }

    func testDefaultsAreUnmanagedTrackedAlert() async throws {
        let harness = Harness()
        await harness.seedClientApps()
        let deliveryId = try deliveryId(try await send(#"{"userIds": ["a", "b"], "body": "hello"}"#, harness: harness))
        let command = try await harness.onlyPublished(NotificationRequested.self)
        XCTAssertEqual(command, NotificationRequested(deliveryId: deliveryId, mobileAppId: Fixture.appId,
                                                      target: NotificationTarget(userIds: ["a", "b"]),
                                                      content: NotificationContent(body: "hello")))
        let keys = await harness.publisher.commands.map(\.key)
        XCTAssertEqual(keys, [Fixture.appKey])
    }

    /// `to` is the target as one object; the flat fields are its older spellings.
    func testToNamesUsersOrDevicesAsTheFlatFieldsDo() async throws {
        for (json, target) in [(#"{"to": {"users": ["a", "b"]}, "body": "hello"}"#, NotificationTarget(userIds: ["a", "b"])),
                               (#"{"to": {"devices": ["\#(Fixture.apnsToken)"]}, "body": "hello"}"#,
                                NotificationTarget(deviceTokens: [Fixture.apnsToken]))] {
            let harness = Harness()
            await harness.seedClientApps()
            _ = try deliveryId(try await send(json, harness: harness))
            let command = try await harness.onlyPublished(NotificationRequested.self)
            XCTAssertEqual(command.target, target, json)
        }
    }

    func testASendToDeviceTokensTargetsThem() async throws {
        let harness = Harness()
        await harness.seedClientApps()
        let json = #"{"deviceTokens": ["\#(Fixture.apnsToken)", "\#(Fixture.fcmToken)"], "title": "t"}"#
        _ = try deliveryId(try await send(json, harness: harness))
        let command = try await harness.onlyPublished(NotificationRequested.self)
        XCTAssertEqual(command.target, NotificationTarget(deviceTokens: [Fixture.apnsToken, Fixture.fcmToken]))
    }

    func testEachSendGetsItsOwnDeliveryId() async throws {
        let harness = Harness()
        await harness.seedClientApps()
        let ids = try await harness.test { client in
            var ids: [String] = []
            for _ in 0..<2 {
                let response = try await client.bearer(.post, Fixture.notifications(), json: #"{"userId": "u", "text": "x"}"#)
                ids.append(try decodeBody(NotificationAPI.SendAccepted.self, response).deliveryId)
            }
            return ids
        }
        XCTAssertNotEqual(ids[0], ids[1])
        let commands = try await harness.published(NotificationRequested.self)
        XCTAssertEqual(commands.map { $0.deliveryId.uuidString.lowercased() }, ids)
    }

    func testALocalTimeSendIsKeptUntilItsTimeFirstComesAnywhere() async throws {
        let harness = Harness()
        await harness.seedClientApps()
        let local = Date().addingTimeInterval(3 * 86_400)
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let day = calendar.dateComponents([.year, .month, .day], from: local)
        let text = String(format: "%04d-%02d-%02dT09:00", day.year!, day.month!, day.day!)
        let response = try await send(#"{"userId": "u", "text": "x", "sendAtLocal": "\#(text)", "quietHours": "drop", "priority": "Critical"}"#,
                                      harness: harness)
        let accepted = try WireJSON.decoder().decode(NotificationAPI.SendAccepted.self, from: Data(response.body.readableBytesView))
        let command = try await harness.onlyPublished(NotificationRequested.self)
        XCTAssertEqual(command.sendAtLocal, text + ":00")
        XCTAssertEqual(accepted.sendAtLocal, text + ":00")
        XCTAssertEqual(command.sendAt, LocalDateTime(text)!.earliestInstant, "its devices are chosen when UTC+14 reaches it")
        XCTAssertEqual(accepted.sendAt, command.sendAt)
        XCTAssertEqual(command.quietHours, .drop)
        XCTAssertEqual(command.content.priority, .critical)
    }

    func testAUsersOwnQuietHoursAreSetCanonicalRemovedByEmptyAndRefusedWhenUnreadable() async throws {
        let harness = Harness()
        await harness.seedClientApps()
        await harness.store.seed(userSettings: UserSettingsRow(appId: Fixture.appId, userId: "ana", part: 0, quietHours: "21:30-06:00"))
        try await harness.test { client in
            let read = try await client.bearer(.get, "/v1/apps/\(Fixture.appId)/users/ana/settings", json: nil)
            XCTAssertEqual(read.status, .ok)
            XCTAssertEqual(try decodeBody(NotificationAPI.UserSettings.self, read), NotificationAPI.UserSettings(quietHours: "21:30-06:00"))
            let none = try await client.bearer(.get, "/v1/apps/\(Fixture.appId)/users/bob/settings", json: nil)
            XCTAssertEqual(String(buffer: none.body), "{}")
            for json in [#"{"quietHours": "23:00-07:00"}"#, #"{"quietHours": ""}"#] {
                let response = try await client.bearer(.put, "/v1/apps/\(Fixture.appId)/users/ana/settings", json: json)
                XCTAssertEqual(response.status, .ok)
            }
            for (json, field) in [(#"{"quietHours": "23:00"}"#, "quietHours"), (#"{"quiet": "23:00-07:00"}"#, "quiet"),
                                  (#"{"quietHours": 2300}"#, "quietHours")] {
                try assertProblem(try await client.bearer(.put, "/v1/apps/\(Fixture.appId)/users/ana/settings", json: json),
                                  .badRequest, field: field)
            }
            let long = String(repeating: "u", count: FieldLimits.userIdBytes + 1)
            try assertProblem(try await client.bearer(.put, "/v1/apps/\(Fixture.appId)/users/\(long)/settings", json: "{}"),
                              .badRequest, field: "userId")
        }
        let commands = try await harness.published(UserSettingsChanged.self)
        XCTAssertEqual(commands, [UserSettingsChanged(mobileAppId: Fixture.appId, userId: "ana", quietHours: "23:00-07:00"),
                                  UserSettingsChanged(mobileAppId: Fixture.appId, userId: "ana", quietHours: "")])
    }

    func testASilentPushNeedsNoAlertText() async throws {
        let harness = Harness()
        await harness.seedClientApps()
        _ = try deliveryId(try await send(#"{"userId": "u", "contentAvailable": true, "custom": {"sync": "1"}}"#, harness: harness))
        let command = try await harness.onlyPublished(NotificationRequested.self)
        XCTAssertEqual(command.content, NotificationContent(contentAvailable: true, custom: ["sync": "1"]))
    }

    func testAChatMessageIsTheAlertTextOfAnImSendWithoutATextOfItsOwn() async throws {
        let harness = Harness()
        await harness.seedClientApps()
        try await harness.test { client in
            for body in [#"{"userId": "123", "kind": "im", "message": "hello"}"#,
                         #"{"userId": "123", "kind": "im", "message": "hello", "title": "Anna", "managed": true}"#,
                         #"{"userId": "123", "kind": "im", "message": "hello", "text": "Anna wrote"}"#] {
                let response = try await client.bearer(.post, Fixture.notifications(), json: body)
                XCTAssertEqual(response.status, .accepted, "\(body): \(String(buffer: response.body))")
            }
        }
        let commands = try await harness.published(NotificationRequested.self)
        XCTAssertEqual(commands.map(\.content.alertText), ["hello", "hello", "Anna wrote"])
        XCTAssertEqual(commands.map(\.message), ["hello", "hello", "hello"])
        XCTAssertEqual(commands[1].content.title, "Anna", "the title stays the push's title")
        // The push itself carries it: the APNs alert and the BW `text`.
        var writer = JSONWriter(capacity: PushPayload.maxBytes)
        PushPayload.render(commands[0], platform: .ios, messageId: "0-0", sentAt: Date(), managedBadge: nil, into: &writer)
        XCTAssertTrue(String(decoding: writer.bytes, as: UTF8.self).contains(#""body":"hello""#),
                      String(decoding: writer.bytes, as: UTF8.self))
    }

    func testTrackingAcceptsOnOffAndBooleans() async throws {
        let harness = Harness()
        await harness.seedClientApps()
        let cases: [(String, Bool)] = [(#""on""#, true), (#""OFF""#, false), ("true", true), ("false", false)]
        try await harness.test { client in
            for (value, _) in cases {
                let response = try await client.bearer(.post, Fixture.notifications(), json: #"{"userId": "u", "text": "x", "tracking": \#(value)}"#)
                XCTAssertEqual(response.status, .accepted, value)
            }
        }
        let commands = try await harness.published(NotificationRequested.self)
        XCTAssertEqual(commands.map(\.tracking), cases.map(\.1))
    }

    func testTicketAndImKinds() async throws {
        let harness = Harness()
        await harness.seedClientApps()
        let bodies = [
            #"{"userId": "123", "title": "Reply", "kind": "ticket", "ticketId": "T-9", "message": "dropped"}"#,
            #"{"userId": "123", "title": "Reply", "kind": "ticket", "ticketId": 123}"#,
            #"{"userId": "123", "text": "hello", "kind": "im", "message": "hello", "ticketId": 5}"#,
            #"{"userId": "123", "text": "plain", "kind": "alert", "ticketId": "ignored"}"#,
        ]
        try await harness.test { client in
            for body in bodies {
                let response = try await client.bearer(.post, Fixture.notifications(), json: body)
                XCTAssertEqual(response.status, .accepted, body)
            }
        }
        let commands = try await harness.published(NotificationRequested.self)
        XCTAssertEqual(commands.map(\.kind), [.ticket, .ticket, .im, .alert])
        XCTAssertEqual(commands.map(\.ticketId), ["T-9", "123", nil, nil])
        XCTAssertEqual(commands.map(\.message), [nil, nil, "hello", nil])
    }

    func testEmptyTextFieldsCountAsNotSent() async throws {
        let harness = Harness()
        await harness.seedClientApps()
        _ = try deliveryId(try await send(#"{"userId": "u", "title": "", "body": "b", "businessId": "", "sound": ""}"#, harness: harness))
        let command = try await harness.onlyPublished(NotificationRequested.self)
        XCTAssertEqual(command.content, NotificationContent(body: "b"))
        XCTAssertNil(command.businessId)
    }

    func testInvalidSendsAre400NamingTheFieldAndPublishNothing() async throws {
        let harness = Harness()
        await harness.seedClientApps()
        let thousandAndOne = try Fixture.json((0...1000).map { "u\($0)" })
        let tooLongToken = String(repeating: "a", count: 4097)
        let manyCustom = try Fixture.json(Dictionary(uniqueKeysWithValues: (0...100).map { ("k\($0)", "v") }))
        let cases: [(json: String, field: String)] = [
            // Target.
            (#"{"title": "t"}"#, "to|userId|userIds|deviceTokens"),
            (#"{"userId": "u", "userIds": ["v"], "title": "t"}"#, "to|userId|userIds|deviceTokens"),
            (#"{"userIds": ["v"], "deviceTokens": ["d"], "title": "t"}"#, "to|userId|userIds|deviceTokens"),
            (#"{"to": {"users": ["v"]}, "userId": "u", "title": "t"}"#, "to|userId|userIds|deviceTokens"),
            (#"{"to": {}, "title": "t"}"#, "to"),
            (#"{"to": {"users": ["v"], "devices": ["d"]}, "title": "t"}"#, "to"),
            (#"{"to": "all", "title": "t"}"#, "to"),
            (#"{"to": {"users": []}, "title": "t"}"#, "to.users"),
            (#"{"to": {"users": ["a", ""]}, "title": "t"}"#, "to.users[1]"),
            (#"{"to": {"devices": ["\#(tooLongToken)"]}, "title": "t"}"#, "to.devices[0]"),
            (#"{"userId": "", "title": "t"}"#, "userId"),
            (#"{"userId": 12, "title": "t"}"#, "userId"),
            (#"{"userIds": [], "title": "t"}"#, "userIds"),
            (#"{"userIds": \#(thousandAndOne), "title": "t"}"#, "userIds"),
            (#"{"userIds": ["a", "b", "c", ""], "title": "t"}"#, "userIds[3]"),
            (#"{"userIds": ["a", 7], "title": "t"}"#, "userIds[1]"),
            (#"{"userIds": "a", "title": "t"}"#, "userIds"),
            (#"{"deviceTokens": [], "title": "t"}"#, "deviceTokens"),
            (#"{"deviceTokens": ["ok", ""], "title": "t"}"#, "deviceTokens[1]"),
            (#"{"deviceTokens": ["\#(tooLongToken)"], "title": "t"}"#, "deviceTokens[0]"),
            // Content.
            (#"{"userId": "u"}"#, "title|body|text"),
            (#"{"userId": "u", "title": "", "sound": "default"}"#, "title|body|text"),
            (#"{"userId": "u", "contentAvailable": false}"#, "title|body|text"),
            (#"{"userId": "u", "contentAvailable": true, "managed": true}"#, "title|body|text"),
            (#"{"userId": "u", "title": "t", "badge": -1}"#, "badge"),
            (#"{"userId": "u", "title": "t", "badge": 1000001}"#, "badge"),
            (#"{"userId": "u", "title": "t", "badge": "1"}"#, "badge"),
            (#"{"userId": "u", "title": "t", "priority": "urgent"}"#, "priority"),
            (#"{"userId": "u", "title": "t", "mediaAttachmentUrl": "/a.png"}"#, "mediaAttachmentUrl"),
            (#"{"userId": "u", "title": "t", "mediaAttachmentUrl": "ftp://cdn.example.com/a.png"}"#, "mediaAttachmentUrl"),
            (#"{"userId": "u", "title": "t", "mediaAttachmentUrl": ""}"#, "mediaAttachmentUrl"),
            (#"{"userId": "u", "title": "t", "uri": ""}"#, "uri"),
            (#"{"userId": "u", "title": "t", "contentAvailable": "yes"}"#, "contentAvailable"),
            (#"{"userId": "u", "title": "t", "custom": {"a": 1}}"#, "custom.a"),
            (#"{"userId": "u", "title": "t", "custom": ["a"]}"#, "custom"),
            (#"{"userId": "u", "title": "t", "custom": {"": "v"}}"#, "custom"),
            (#"{"userId": "u", "title": "t", "custom": \#(manyCustom)}"#, "custom"),
            // Options.
            (#"{"userId": "u", "title": "t", "managed": "yes"}"#, "managed"),
            (#"{"userId": "u", "title": "t", "tracking": "maybe"}"#, "tracking"),
            (#"{"userId": "u", "title": "t", "tracking": 1}"#, "tracking"),
            (#"{"userId": "u", "title": "t", "tracking": [true]}"#, "tracking"),
            (#"{"userId": "u", "title": "t", "kind": "sms"}"#, "kind"),
            (#"{"userId": "u", "title": "t", "kind": "ticket"}"#, "ticketId"),
            (#"{"userId": "u", "title": "t", "kind": "ticket", "ticketId": ""}"#, "ticketId"),
            (#"{"userId": "u", "title": "t", "kind": "ticket", "ticketId": true}"#, "ticketId"),
            (#"{"userId": "u", "title": "t", "kind": "ticket", "ticketId": 1.5}"#, "ticketId"),
            (#"{"userId": "u", "title": "t", "kind": "im"}"#, "message"),
            (#"{"userId": "u", "title": "t", "kind": "im", "message": ""}"#, "message"),
            (#"{"userId": "u", "title": "t", "businessId": 5}"#, "businessId"),
            (#"{"userId": "u", "title": "t", "timeToLive": 0}"#, "timeToLive"),
            (#"{"userId": "u", "title": "t", "timeToLive": 2419201}"#, "timeToLive"),
            (#"{"userId": "u", "title": "t", "collapseKey": "\#(String(repeating: "k", count: 65))"}"#, "collapseKey"),
            // A field the route does not take: a newer server's audience or schedule, or a typo.
            (#"{"to": {"topic": "news", "users": ["u"]}, "title": "t"}"#, "to"),
            (#"{"to": {"segment": "news"}, "title": "t"}"#, "to.segment"),
            (#"{"userId": "u", "title": "t", "sendAtLocal": "2026-12-01T09:00Z"}"#, "sendAtLocal"),
            (#"{"userId": "u", "title": "t", "sendAtLocal": "2026-02-30T09:00"}"#, "sendAtLocal"),
            (#"{"userId": "u", "title": "t", "sendAtLocal": "2000-12-01T09:00"}"#, "sendAtLocal"),
            (#"{"userId": "u", "title": "t", "sendAtLocal": "2999-12-01T09:00"}"#, "sendAtLocal"),
            (#"{"userId": "u", "title": "t", "sendAtLocal": "2999-12-01T09:00", "sendAt": "2026-12-01T09:00:00Z"}"#, "sendAtLocal"),
            (#"{"userId": "u", "title": "t", "quietHours": "skip"}"#, "quietHours"),
            (#"{"userId": "u", "title": "t", "priority": "urgent"}"#, "priority"),
            (#"{"userId": "u", "title": "t", "sendAt": "tomorrow"}"#, "sendAt"),
            (#"{"userId": "u", "title": "t", "sendAt": "2026-12-01 09:00"}"#, "sendAt"),
            (#"{"userId": "u", "title": "t", "sendAt": "2999-01-01T00:00:00Z"}"#, "sendAt"),
            (#"{"userId": "u", "title": "t", "sendAt": 1800000000}"#, "sendAt"),
            (#"{"userId": "u", "titel": "t", "body": "b"}"#, "titel"),
            (#"{"userId": "u", "title": "t", "\u0061udience": "all"}"#, "audience"),
            (#"{"userId": "u", "title": "t", "\#(String(repeating: "x", count: 70))": 1}"#, String(repeating: "x", count: 64) + "…"),
            // The body itself.
            (#"["userId"]"#, "body"),
            (#"{"userId": "#, "body"),
        ]
        try await harness.test { client in
            for (json, field) in cases {
                let response = try await client.bearer(.post, Fixture.notifications(), json: json)
                try assertProblem(response, .badRequest, field: field)
            }
            // Each kind of refusal has its code.
            for (json, code) in [(#"{"to": {"everyone": true}, "title": "t"}"#, ProblemCode.fieldUnknown), (#"{"title": "t"}"#, .fieldMissing),
                                 (#"{"to": {}, "title": "t"}"#, .fieldMissing), (#"{"to": [], "title": "t"}"#, .fieldType),
                                 (#"{"userId": 5, "title": "t"}"#, .fieldType), (#"{"userId": "u", "title": "t", "badge": -1}"#, .fieldInvalid),
                                 (#"{"userId": "#, .bodyMalformed)] {
                let response = try await client.bearer(.post, Fixture.notifications(), json: json)
                XCTAssertEqual(try decodeBody(Problem.self, response).code, code, json)
            }
        }
        await assertNothingPublished(harness.publisher)
    }

    /// The app's scheduled sends in one state come by time, a page at a time, each page after
    /// the `next` of the one before; another state's and another part's rows are not listed.
    func testScheduledSendsAreListedByTimeInPages() async throws {
        let harness = Harness()
        await harness.seedClientApps()
        var waiting: [UUID] = []
        for n in 0..<3 {
            let id = UUID()
            waiting.append(id)
            await harness.store.seed(stats: DeliveryStatsRow(delivery: DeliveryRow(
                appId: Fixture.appId, deliveryId: id, kind: .alert, managed: false, tracking: true, sent: 0, createdAt: Date(),
                sendAt: Date(timeIntervalSince1970: 1_900_000_000 + Double(n)), schedule: .waiting, scheduledCommand: "{}"),
                impressions: 0, clicks: 0, opens: 0, repeatsIgnored: 0))
        }
        await harness.store.seed(stats: DeliveryStatsRow(delivery: DeliveryRow(
            appId: Fixture.appId, deliveryId: UUID(), kind: .alert, managed: false, tracking: true, sent: 0, createdAt: Date(), part: 1,
            sendAt: Date(timeIntervalSince1970: 1_900_000_000), schedule: .waiting, scheduledCommand: "{}"),
            impressions: 0, clicks: 0, opens: 0, repeatsIgnored: 0))
        await harness.store.seed(stats: DeliveryStatsRow(delivery: DeliveryRow(
            appId: Fixture.appId, deliveryId: UUID(), kind: .alert, managed: false, tracking: true, sent: 1, createdAt: Date(),
            sendAt: Date(timeIntervalSince1970: 1_900_000_000), schedule: .fired), impressions: 0, clicks: 0, opens: 0, repeatsIgnored: 0))
        let (first, second) = try await harness.test { client in
            func list(_ query: String) async throws -> NotificationAPI.ScheduledList {
                let response = try await client.bearer(.get, Fixture.notifications() + query)
                return try WireJSON.decoder().decode(NotificationAPI.ScheduledList.self, from: Data(response.body.readableBytesView))
            }
            let first = try await list("?limit=2")
            let second = try await list("?limit=2&after=\(try XCTUnwrap(first.next))")
            return (first, second)
        }
        XCTAssertEqual(first.notifications.map(\.deliveryId), waiting.prefix(2).map(\.lowercasedString))
        XCTAssertEqual(second.notifications.map(\.deliveryId), [waiting[2].lowercasedString])
        XCTAssertNil(second.next)
    }

    /// The fields a send may carry are exactly those of `SendRequest`: every one it encodes, and
    /// a member name written with escapes counts as the name it spells.
    func testTheFieldsASendTakesAreTheOnesItHas() async throws {
        let full = NotificationAPI.SendRequest(
            to: .init(users: ["u"]), userId: "u", userIds: ["u"], deviceTokens: ["d"], title: "t", body: "b", text: "x", sound: "s", badge: 1,
            category: "c",
            uri: "u:", mediaAttachmentUrl: "https://a", contentAvailable: true, mutableContent: true, collapseKey: "k",
            priority: "high", custom: ["a": "b"], managed: true, businessId: "b", tracking: .bool(true), kind: "alert",
            ticketId: .int(1), message: "m", timeToLive: 1, localized: ["pt": .init(title: "t")], sendAt: "2026-12-01T09:00:00Z",
            sendAtLocal: "2026-12-01T09:00", quietHours: "hold", capCategory: "news", capExempt: true)
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: JSONEncoder().encode(full)) as? [String: Any])
        XCTAssertEqual(Set(object.keys), NotificationAPI.SendRequest.fields)

        let harness = Harness()
        await harness.seedClientApps()
        _ = try deliveryId(try await send(#"{"userId": "u", "b\u006fdy": "hello"}"#, harness: harness))
        let command = try await harness.onlyPublished(NotificationRequested.self)
        XCTAssertEqual(command.content, NotificationContent(body: "hello"))
    }

    func testEveryReservedCustomKeyIsRefused() async throws {
        let harness = Harness()
        await harness.seedClientApps()
        let reserved = ["aps", "_dId", "_mId", "_acsDeliveryTracking", "media-attachment-url", "uri", "title", "body", "text",
                        "sound", "badge", "category", "timestamp", "nid", "bid", "faf"]
        XCTAssertEqual(PushPayload.reservedCustomKeys, Set(reserved))
        try await harness.test { client in
            for key in reserved {
                let json = try Fixture.json(["userId": "u", "title": "t", "custom": ["ok": "1", key: "v"]] as [String: Any])
                try assertProblem(try await client.bearer(.post, Fixture.notifications(), json: json), .badRequest, field: "custom.\(key)")
            }
            // Keys are compared exactly: "Title" is not the payload's "title".
            let fine = try await client.bearer(.post, Fixture.notifications(), json: #"{"userId": "u", "title": "t", "custom": {"Title": "x"}}"#)
            XCTAssertEqual(fine.status, .accepted)
        }
        let commands = try await harness.published(NotificationRequested.self)
        XCTAssertEqual(commands.map(\.content.custom), [["Title": "x"]])
    }

    func testThousandTargetsAreAccepted() async throws {
        let harness = Harness()
        await harness.seedClientApps()
        let ids = (0..<1000).map { "u\($0)" }
        _ = try deliveryId(try await send(try Fixture.json(["userIds": ids, "text": "x"] as [String: Any]), harness: harness))
        let command = try await harness.onlyPublished(NotificationRequested.self)
        XCTAssertEqual(command.target.userIds, ids)
    }
}

final class NotificationPayloadSizeTests: XCTestCase {
    func testAPayloadPastFourKilobytesIsRefusedAndOneJustUnderIsAccepted() async throws {
        let harness = Harness()
        await harness.seedClientApps()
        try await harness.test { client in
            let big = try Fixture.json(["userId": "u", "title": "t", "custom": ["k": String(repeating: "x", count: 4000)]] as [String: Any])
            try assertProblem(try await client.bearer(.post, Fixture.notifications(), json: big), .badRequest, field: "payload")
            let fits = try Fixture.json(["userId": "u", "title": "t", "custom": ["k": String(repeating: "x", count: 3000)]] as [String: Any])
            let accepted = try await client.bearer(.post, Fixture.notifications(), json: fits)
            XCTAssertEqual(accepted.status, .accepted)
        }
        let published = try await harness.published(NotificationRequested.self)
        XCTAssertEqual(published.count, 1, "only the request that fits is published")
    }
}
