import Contracts
import Foundation
import Logging
import Projections
import ProjectionStores
import WireCodec
import XCTest
@testable import Processor
@testable import Handlers

/// A user keeps at most `maxDevicesPerUser` devices: a registration past it retires the user's
/// devices registered longest ago, by command time, through the real applier and SQLite, across
/// batches (the user's devices are read from the store).
final class DeviceCapTests: ApplierTestCase {
    let appId = UUID(), org = UUID(), tokenHash = ApiTokens.hash("t"), tokenId = UUID()

    private func registration(_ n: Int, user: String = "u", second: TimeInterval, offset: Int64) throws -> ConsumedRecord {
        let command = DeviceRegistrationRequested(registrationRequestId: UUID(), orgId: org, mobileAppId: appId, userId: user,
                                                  platform: .ios, deviceToken: String(format: "%064x", n), apiTokenHash: tokenHash,
                                                  trackStatus: false, callback: nil)
        let encoded = try EncodedCommand(command, topics: topics, id: UUID(), at: at.addingTimeInterval(second), encoder: WireJSON.encoder())
        return ConsumedRecord(partition: PartitionKey(topic: encoded.topic, partition: 0), offset: offset, type: encoded.type,
                              version: encoded.version, value: encoded.value)
    }

    func testARegistrationPastTheCapRetiresTheDevicesRegisteredLongestAgo() async throws {
        let store = try await ProjectionStoreFactory.open("sqlite:" + directory.appendingPathComponent("cap.sqlite").path, logger: Logger(label: "test"))
        let applier = BatchApplier(store: store, outbound: RecordingOutbound(), verifier: TokenFormatVerifier(), logger: Logger(label: "test"),
                                   rules: DecisionRules(maxDevicesPerUser: 3))
        let admin = try record(AppCreated(orgId: org, mobileAppId: appId, name: "a", tokenId: tokenId, tokenHash: tokenHash), partition: 0, offset: 0)
        var positions = try await applier.apply([admin], expected: [:])
        // Four devices over two batches, then device 1 registered again (it is the newest now),
        // then a fifth: the user keeps 3, the ones registered last.
        let batches = [
            [try registration(1, second: 1, offset: 0), try registration(2, second: 2, offset: 1)],
            [try registration(3, second: 3, offset: 2), try registration(4, second: 4, offset: 3)],
            [try registration(1, user: "other", second: 5, offset: 4), try registration(1, second: 6, offset: 5)],
            [try registration(5, second: 7, offset: 6)],
        ]
        for batch in batches {
            let expected = positions
            for (key, value) in try await applier.apply(batch, expected: expected) { positions[key] = value }
        }
        let kept = try await store.devices(app: appId, user: "u").map(\.deviceToken)
        XCTAssertEqual(Set(kept), Set([1, 4, 5].map { String(format: "%064x", $0) }))
    }

    func testTheCapIsTheSameWhateverTheBatching() async throws {
        var dumps: [String] = []
        // One log, applied in different batches: the app's record (its id is in the audit log) is the same.
        let admin = try record(AppCreated(orgId: org, mobileAppId: appId, name: "a", tokenId: tokenId, tokenHash: tokenHash),
                               partition: 0, offset: 0)
        for (name, sizes) in [("one", [7]), ("each", [1, 1, 1, 1, 1, 1, 1]), ("mixed", [2, 4, 1])] {
            let store = try await ProjectionStoreFactory.open("sqlite:" + directory.appendingPathComponent("\(name).sqlite").path,
                                                              logger: Logger(label: "test"))
            let applier = BatchApplier(store: store, outbound: RecordingOutbound(), verifier: TokenFormatVerifier(),
                                       logger: Logger(label: "test"), rules: DecisionRules(maxDevicesPerUser: 2))
            var positions = try await applier.apply([admin], expected: [:])
            var records = try (0..<7).map { try registration($0, second: TimeInterval($0), offset: Int64($0)) }[...]
            for size in sizes {
                let batch = Array(records.prefix(size))
                records = records.dropFirst(size)
                let expected = positions
                for (key, value) in try await applier.apply(batch, expected: expected) { positions[key] = value }
            }
            dumps.append(try await store.dump())
            let count = try await store.devices(app: appId, user: "u").count
            XCTAssertEqual(count, 2, name)
        }
        XCTAssertEqual(dumps[0], dumps[1])
        XCTAssertEqual(dumps[0], dumps[2])
    }
}
