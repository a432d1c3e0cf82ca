import Contracts
import Foundation
@testable import Processor
import XCTest

/// `HandlerRegistry`: one handler per command type, each in its batch phase.
final class HandlerRegistryTests: XCTestCase {
    func testEveryCommandTypeHasAHandler() {
        XCTAssertEqual(HandlerRegistry.standard().types, Set(CommandType.allCases))
    }

    func testEachCommandTypeRunsInItsPhase() throws {
        let app = UUID(), at = Date(timeIntervalSince1970: 1_700_000_000)
        let commands: [(any Command, BatchPhase)] = [
            (AppCreated(orgId: UUID(), mobileAppId: app, name: "n", tokenId: UUID(), tokenHash: "h"), .admin),
            (ApiTokenIssued(mobileAppId: app, tokenId: UUID(), tokenHash: "h"), .admin),
            (ApiTokenRevoked(mobileAppId: app, tokenId: UUID()), .admin),
            (AppSettingsChanged(mobileAppId: app, name: "m"), .admin),
            (DeviceCleanupRequested(orgId: UUID(), mobileAppId: app, userId: "u", deviceToken: nil, apiTokenHash: "h"), .main),
            (NotificationAcknowledged(mobileAppId: app, notificationId: "n", deviceToken: "t"), .main),
            (TrackingReported(mobileAppId: app, deliveryId: UUID(), events: []), .tracking),
        ]
        let decoder = CommandDecoder()
        for (command, phase) in commands {
            let encoded = try EncodedCommand(command, topics: Topics(), at: at, encoder: WireJSON.encoder())
            guard case .command(let decoded) = decoder.decode(type: encoded.type, version: encoded.version, value: encoded.value) else {
                XCTFail("\(encoded.type) not decoded"); continue
            }
            XCTAssertEqual(decoded.type.rawValue, encoded.type)
            XCTAssertEqual(decoded.phase, phase, encoded.type)
            XCTAssertEqual(decoded.at, at, encoded.type)
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
