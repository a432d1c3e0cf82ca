import Contracts
import Foundation
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

    func testEnvelopeHasTheVersionedShapeAndRoundTrips() throws {
        let command = DeviceCleanupRequested(orgId: UUID(), mobileAppId: UUID(), userId: "u", deviceToken: nil, apiTokenHash: "h")
        let at = Date(timeIntervalSince1970: 1_795_000_000.5)
        let encoded = try EncodedCommand(command, topics: Topics(prefix: "x."), at: at, encoder: WireJSON.encoder())
        XCTAssertEqual(encoded.topic, "x.commands.registration")
        XCTAssertEqual(encoded.key, "\(command.mobileAppId.uuidString.lowercased())/u")
        XCTAssertEqual(encoded.type, "registration.device-cleanup-requested")
        let object = try JSONSerialization.jsonObject(with: encoded.value) as! [String: Any]
        XCTAssertEqual(Set(object.keys), ["v", "type", "id", "at", "payload"])
        XCTAssertEqual(object["v"] as? Int, 1)
        XCTAssertEqual(object["at"] as? String, "2026-11-18T11:06:40.500Z")
        let back = try WireJSON.decoder().decode(Envelope<DeviceCleanupRequested>.self, from: encoded.value)
        XCTAssertEqual(back.payload, command)
        XCTAssertEqual(back.at.timeIntervalSince1970, at.timeIntervalSince1970, accuracy: 0.001)
    }

    func testRegistrationsOfOneUserShareAKeyAndTopicsHaveTheirNames() {
        let app = UUID()
        let a = DeviceRegistrationRequested(registrationRequestId: UUID(), orgId: UUID(), mobileAppId: app, userId: "u", platform: .ios,
                                            deviceToken: "t1", apiTokenHash: "h", trackStatus: false, callback: nil)
        var b = a
        b.deviceToken = "t2"
        XCTAssertEqual(a.recordKey, b.recordKey)
        let topics = Topics()
        XCTAssertEqual(topics.commandTopics, ["pushline.commands.admin", "pushline.commands.registration",
                                              "pushline.commands.notification", "pushline.commands.tracking"])
        XCTAssertEqual(topics.all().map(\.name).count, 6)
    }
}
