import Contracts
import Foundation
import WireCodec
import XCTest

final class ContractsTests: XCTestCase {
    func testWebhookSignatureIsBase64HmacSha256OfTheURLKeyedByTheToken() {
        // Expected value computed independently (Python hmac/hashlib).
        XCTAssertEqual(ApiTokens.webhookSignature(apiToken: "my-api-token", callbackURL: "https://app.example/hook?x=1"),
                       "aTFPCUY2NtuglloEwwI3RkVZjB/bCKjlGsnyjmyd0B4=")
    }

    func testTokenHashIsHexSha256() {
        XCTAssertEqual(ApiTokens.hash("my-api-token"), "076137216c5afeb6cf6fa7e11de161a2e2bb2772ea30d58e6df42be96bc7db08")
    }

    func testGeneratedTokensAreLongRandomAndURLSafe() {
        let tokens = (0..<100).map { _ in ApiTokens.generate() }
        XCTAssertEqual(Set(tokens).count, 100)
        for t in tokens {
            XCTAssertEqual(t.count, 43, "32 bytes in unpadded base64url")
            XCTAssertTrue(t.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" })
        }
    }

    func testConstantTimeEquals() {
        XCTAssertTrue(ApiTokens.constantTimeEquals("abc", "abc"))
        XCTAssertFalse(ApiTokens.constantTimeEquals("abc", "abd"))
        XCTAssertFalse(ApiTokens.constantTimeEquals("abc", "abcd"))
    }

    func testKeysArePartitionedAsLibrdkafkaDoesByCRC32() {
        XCTAssertEqual(CRC32.checksum(Array("123456789".utf8)), 0xCBF4_3926, "the check value of CRC-32/ISO-HDLC")
        XCTAssertEqual(CRC32.checksum([]), 0)
        XCTAssertEqual(RecordKey.partition(of: "123456789", partitions: 12), Int32(0xCBF4_3926 % 12))
        XCTAssertEqual(RecordKey.partition(of: "anything", partitions: 1), 0)
    }

    func testEnvelopeHasTheVersionedShapeAndRoundTrips() throws {
        let command = DeviceCleanupRequested(orgId: UUID(), mobileAppId: UUID(), userId: "u", deviceToken: nil, apiTokenHash: "h")
        let at = Date(timeIntervalSince1970: 1_795_000_000.5)
        let encoded = try EncodedCommand(command, topics: Topics(prefix: "x."), at: at, encoder: WireJSON.encoder())
        XCTAssertEqual(encoded.topic, "x.commands.registration")
        XCTAssertEqual(encoded.key, command.mobileAppId.uuidString.lowercased(), "keyed by app")
        XCTAssertEqual(encoded.type, "registration.device-cleanup-requested")
        let object = try JSONSerialization.jsonObject(with: encoded.value) as! [String: Any]
        XCTAssertEqual(Set(object.keys), ["v", "type", "id", "at", "payload"])
        XCTAssertEqual(object["v"] as? Int, 1)
        XCTAssertEqual(object["at"] as? String, "2026-11-18T11:06:40.500Z")
        let back = try WireJSON.decoder().decode(Envelope<DeviceCleanupRequested>.self, from: encoded.value)
        XCTAssertEqual(back.payload, command)
        XCTAssertEqual(back.at.timeIntervalSince1970, at.timeIntervalSince1970, accuracy: 0.001)
    }

    func testTrackingEventsTravelAsPairsKeyedByApp() throws {
        let app = UUID(uuidString: "00000000-0000-0000-0000-0000000000a1")!
        let delivery = UUID(uuidString: "0A1868E6-04C9-4D3B-8125-2F9597F68E78")!
        let command = TrackingReported(mobileAppId: app, deliveryId: delivery, events: [
            TrackingEvent(broadlogId: "0-a9a7cfeaf8da1fa1", action: .impression), TrackingEvent(broadlogId: "7-\"q\"", action: .open),
        ])
        let encoded = try EncodedCommand(command, topics: Topics(), encoder: WireJSON.encoder())
        XCTAssertEqual(encoded.topic, "pushline.commands.tracking")
        XCTAssertEqual(encoded.key, "00000000-0000-0000-0000-0000000000a1")
        XCTAssertEqual(encoded.type, "tracking.reported")
        let payload = try XCTUnwrap((try JSONSerialization.jsonObject(with: encoded.value) as? [String: Any])?["payload"] as? [String: Any])
        XCTAssertEqual(payload["events"] as? [[AnyHashable]], [["0-a9a7cfeaf8da1fa1", 7], ["7-\"q\"", 1]])
        XCTAssertEqual(try WireJSON.decoder().decode(Envelope<TrackingReported>.self, from: encoded.value).payload, command)

        for bad in [#"[["0-a", 3]]"#, #"[["0-a"]]"#, #"[["0-a", 7, 1]]"#, #"[{"broadlogId": "0-a", "action": 7}]"#, #"[[7, "0-a"]]"#] {
            XCTAssertThrowsError(try JSONDecoder().decode([TrackingEvent].self, from: Data(bad.utf8)), bad)
        }
    }

    func testEveryCommandOfAnAppSharesItsKeyAndTopicsHaveTheirNames() {
        let app = UUID()
        let commands: [any Command] = [
            DeviceRegistrationRequested(registrationRequestId: UUID(), orgId: UUID(), mobileAppId: app, userId: "u", platform: .ios,
                                        deviceToken: "t1", apiTokenHash: "h", trackStatus: false, callback: nil),
            DeviceCleanupRequested(orgId: UUID(), mobileAppId: app, userId: "v", deviceToken: nil, apiTokenHash: "h"),
            NotificationAcknowledged(mobileAppId: app, notificationId: "n", deviceToken: "t2"),
            TrackingReported(mobileAppId: app, deliveryId: UUID(), events: []),
            ApiTokenRevoked(mobileAppId: app, tokenId: UUID()),
        ]
        XCTAssertEqual(Set(commands.map(\.recordKey)), [app.lowercasedString], "an app's commands land in one partition index")
        let topics = Topics()
        XCTAssertEqual(topics.commandTopics, ["pushline.commands.admin", "pushline.commands.registration",
                                              "pushline.commands.notification", "pushline.commands.tracking",
                                              "pushline.commands.delivery"])
        XCTAssertEqual(topics.all().map(\.name).count, 9)
        XCTAssertEqual(topics.all(commandPartitions: 7).first { $0.name == "pushline.processor-lease" }?.partitions, 7,
                       "a lease partition per shard")
        XCTAssertEqual(topics.all().first { $0.name == "pushline.changelog" }?.partitions, 1, "one changelog partition: entries in order")
    }
}

final class WireFormatTests: XCTestCase {
    func testUUIDFormattingMatchesFoundation() {
        for _ in 0..<5000 {
            let a = UUID(), b = UUID.random()
            XCTAssertEqual(a.lowercasedString, a.uuidString.lowercased())
            XCTAssertEqual(b.lowercasedString, b.uuidString.lowercased())
        }
        let edge = UUID(uuid: (0, 0x0f, 0xf0, 0xff, 0xab, 0xcd, 0xef, 0x10, 0x01, 0x9a, 0xa9, 0x7f, 0x80, 0xfe, 0xef, 0x00))
        XCTAssertEqual(edge.lowercasedString, "000ff0ff-abcd-ef10-019a-a97f80feef00")
        XCTAssertEqual(edge.lowercasedString, edge.uuidString.lowercased())
    }

    func testRandomUUIDsAreVersion4AndDistinct() {
        let ids = (0..<10_000).map { _ in UUID.random() }
        XCTAssertEqual(Set(ids).count, ids.count)
        for id in ids.prefix(100) {
            let s = id.uuidString
            XCTAssertEqual(Array(s)[14], "4")
            XCTAssertTrue("89AB".contains(Array(s)[19]))
        }
    }
}
