import Contracts
import Foundation
@testable import Processor
@testable import Handlers
import WireCodec
import XCTest

/// `HandlerRegistry`: one handler per command type; the decoder reads every type and progress marks.
final class HandlerRegistryTests: XCTestCase {
    func testEveryCommandTypeHasAHandler() {
        XCTAssertEqual(HandlerRegistry.standard().types, Set(CommandType.allCases))
    }

    func testEachCommandTypeDecodesWithItsTime() throws {
        let app = UUID(), at = Date(timeIntervalSince1970: 1_700_000_000)
        let commands: [any Command] = [
            AppCreated(orgId: UUID(), mobileAppId: app, name: "n", tokenId: UUID(), tokenHash: "h"),
            ApiTokenIssued(mobileAppId: app, tokenId: UUID(), tokenHash: "h"),
            ApiTokenRevoked(mobileAppId: app, tokenId: UUID()),
            AppSettingsChanged(mobileAppId: app, name: "m"),
            PushCredentialsSet(mobileAppId: app, fcm: FCMCredentials(projectId: "p", clientEmail: "e", privateKeyId: nil, tokenUri: "u",
                                                                     fingerprint: "f", serviceAccount: SealedSecret(keyId: "k", box: "b"))),
            PushCredentialsRemoved(mobileAppId: app, provider: .apns),
            DeliveryResultReported(mobileAppId: app, deviceToken: "t", platform: .android, deliveryId: UUID(), messageId: "m",
                                   outcome: .unregistered, reason: "UNREGISTERED", status: 404, invalidSince: Date(timeIntervalSince1970: 1)),
            DeviceCleanupRequested(orgId: UUID(), mobileAppId: app, userId: "u", deviceToken: nil, apiTokenHash: "h"),
            NotificationAcknowledged(mobileAppId: app, notificationId: "n", deviceToken: "t"),
            TrackingReported(mobileAppId: app, deliveryId: UUID(), events: []),
        ]
        let decoder = CommandDecoder()
        for command in commands {
            let encoded = try EncodedCommand(command, topics: Topics(), at: at, encoder: WireJSON.encoder())
            guard case .command(let decoded) = decoder.decode(type: encoded.type, version: encoded.version, value: encoded.value) else {
                XCTFail("\(encoded.type) not decoded"); continue
            }
            XCTAssertEqual(decoded.type.rawValue, encoded.type)
            XCTAssertEqual(decoded.at, at, encoded.type)
        }
    }

    func testAProgressMarkDecodesToItsTimeAndNoCommand() {
        let at = Date(timeIntervalSince1970: 1_700_000_000.123)
        let outcome = CommandDecoder().decode(type: ProgressMark.type, version: 1, value: ProgressMark.value(at: at))
        guard case .progressMark(let read) = outcome else { return XCTFail("\(outcome.summary)") }
        XCTAssertEqual(read, at)
        XCTAssertEqual(outcome.at, at)
        guard case .malformed = CommandDecoder().decode(type: ProgressMark.type, version: 1, value: Data("{}".utf8)) else {
            return XCTFail("a mark without a time must be skipped as malformed")
        }
    }

    func testAKnownTypeWithoutAHandlerIsSkippedAsUnknown() throws {
        let encoded = try EncodedCommand(ApiTokenRevoked(mobileAppId: UUID(), tokenId: UUID()), topics: Topics(),
                                         encoder: WireJSON.encoder())
        guard case .unknownType(let type) = CommandDecoder(registry: HandlerRegistry()).decode(
            type: encoded.type, version: encoded.version, value: encoded.value) else { return XCTFail("decoded without a handler") }
        XCTAssertEqual(type, CommandType.apiTokenRevoked.rawValue)
    }
}
