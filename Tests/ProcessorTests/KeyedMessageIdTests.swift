import Contracts
import Foundation
import OutboundRendering
import Projections
import WireCodec
import XCTest
@testable import Processor
@testable import Handlers

/// Message ids under a server-held key (docs/API.md#engagement-tracking): a send stamped with a
/// key id gets ids nobody can compute from its delivery id, a keyed report counts only such ids,
/// a rebuild (after a rotation too) makes the same ids, and a log from before keyed ids keeps its
/// ids and counts.
final class KeyedMessageIdTests: XCTestCase {
    let appId = UUID(uuidString: "00000000-0000-0000-0000-00000000000a")!
    let at = Date(timeIntervalSince1970: 1_800_000_000)
    let tokens = (0..<3).map { String(repeating: "a\($0)", count: 32) }
    let oldKey = try! SecretsKeyring(current: Data(repeating: 1, count: 32).base64EncodedString())
    let newKey = try! SecretsKeyring(current: Data(repeating: 2, count: 32).base64EncodedString(),
                                     previous: Data(repeating: 1, count: 32).base64EncodedString())

    private func state(delivery: DeliveryRow? = nil) -> BatchState {
        var snapshot = StateSnapshot()
        snapshot.apps[AppPart(appId)] = AppRow(appId: appId, orgId: UUID(), name: "a", createdAt: at)
        for token in tokens {
            let device = DeviceRow(appId: appId, deviceToken: token, userId: "u1", platform: .ios, version: 1, updatedAt: at)
            snapshot.devices[device.key] = device
        }
        if let delivery { snapshot.deliveries[delivery.key] = delivery }
        var state = BatchState(snapshot)
        state.advance(to: at, app: appId, part: 0)
        return state
    }

    private func send(_ deliveryId: UUID, keyId: String?) -> NotificationRequested {
        NotificationRequested(deliveryId: deliveryId, mobileAppId: appId, target: NotificationTarget(userIds: ["u1"]),
                              content: NotificationContent(title: "T"), messageKeyId: keyId)
    }

    /// The message ids of the records a send writes, in device order.
    private func messageIds(_ c: NotificationRequested, keys: MessageIdKeys) throws -> [String] {
        var s = state()
        XCTAssertEqual(NotificationHandler(messageIdKeys: keys).apply(c, CommandContext(at: at), to: &s), .applied)
        return try s.outbound.map { try JSONDecoder().decode(OutboundRecordView.self, from: $0.value).messageId }
    }

    func testAKeyedSendsIdsAreNotTheOnesItsDeliveryIdGives() throws {
        let keys = MessageIdKeys(keyring: oldKey)
        let deliveryId = UUID()
        let ids = try messageIds(send(deliveryId, keyId: oldKey.currentKeyId), keys: keys)
        XCTAssertEqual(ids.count, 3)
        for (index, id) in ids.enumerated() {
            XCTAssertTrue(id.hasPrefix("\(index)-") && id.count == "\(index)-".count + 16, "the format the tracking SDK expects: \(id)")
            XCTAssertNotEqual(id, MessageId.make(deliveryId: deliveryId, index: index))
            XCTAssertEqual(id, MessageId.make(deliveryId: deliveryId, index: index, key: keys.key(oldKey.currentKeyId)))
        }
    }

    func testARebuildAfterARotationMakesTheSameIds() throws {
        let deliveryId = UUID()
        let command = send(deliveryId, keyId: oldKey.currentKeyId)
        let live = try messageIds(command, keys: MessageIdKeys(keyring: oldKey))
        XCTAssertEqual(try messageIds(command, keys: MessageIdKeys(keyring: oldKey)), live, "a rebuild with the same key")
        XCTAssertEqual(try messageIds(command, keys: MessageIdKeys(keyring: newKey)), live, "a rebuild after the key was rotated")
    }

    func testAnOldLogsSendKeepsItsUnkeyedIdsAndItsBytes() throws {
        let deliveryId = UUID(uuidString: "0A1868E6-04C9-4D3B-8125-2F9597F68E78")!
        let command = send(deliveryId, keyId: nil)
        let ids = try messageIds(command, keys: MessageIdKeys(keyring: newKey))
        XCTAssertEqual(ids, (0..<3).map { MessageId.make(deliveryId: deliveryId, index: $0) })
        XCTAssertEqual(ids.first, "0-a9a7cfeaf8da1fa1", "the id the seed gave this delivery")
        // The command of an old log is written as before: no key id field.
        var writer = JSONWriter()
        command.writePayload(to: &writer)
        XCTAssertFalse(String(decoding: writer.bytes, as: UTF8.self).contains("messageKeyId"))
        var report = JSONWriter()
        TrackingReported(mobileAppId: appId, deliveryId: deliveryId, events: []).writePayload(to: &report)
        XCTAssertFalse(String(decoding: report.bytes, as: UTF8.self).contains("keyedIds"))
    }

    func testAKeyedReportCountsOnlyIdsMadeWithTheKeyNotOnesComputedFromTheDeliveryId() {
        let keys = MessageIdKeys(keyring: newKey)
        let deliveryId = UUID()
        let key = keys.key(oldKey.currentKeyId)
        let delivery = DeliveryRow(appId: appId, deliveryId: deliveryId, kind: .alert, managed: false, tracking: true, sent: 3, createdAt: at)
        var s = state(delivery: delivery)
        let mine = MessageId.make(deliveryId: deliveryId, index: 0, key: key)
        let report = TrackingReported(mobileAppId: appId, deliveryId: deliveryId, events: [
            TrackingEvent(broadlogId: mine, action: .open),
            // What the holder of `_dId` (and of its own id) could compute for the other recipients.
            TrackingEvent(broadlogId: MessageId.make(deliveryId: deliveryId, index: 1), action: .open),
            TrackingEvent(broadlogId: MessageId.make(deliveryId: deliveryId, index: 2), action: .click),
            TrackingEvent(broadlogId: "1-" + String(repeating: "0", count: 16), action: .open),
            TrackingEvent(broadlogId: mine, action: .open),
        ], keyedIds: true)
        XCTAssertEqual(TrackingHandler(messageIdKeys: keys).apply(report, CommandContext(at: at), to: &s), .applied)
        XCTAssertEqual(s.trackingOutcomes, [.counted: 2, .rejected(.foreignBroadlog): 3],
                       "the recipient's own id counts (its repeat is stored as a repeat), forged ones count nothing")
    }

    func testAnUnkeyedReportOfAnOldLogIsCheckedAgainstTheUnkeyedIds() {
        let keys = MessageIdKeys(keyring: newKey)
        let deliveryId = UUID()
        let delivery = DeliveryRow(appId: appId, deliveryId: deliveryId, kind: .alert, managed: false, tracking: true, sent: 3, createdAt: at)
        var s = state(delivery: delivery)
        let report = TrackingReported(mobileAppId: appId, deliveryId: deliveryId, events: [
            TrackingEvent(broadlogId: MessageId.make(deliveryId: deliveryId, index: 1), action: .open),
            TrackingEvent(broadlogId: MessageId.make(deliveryId: deliveryId, index: 2, key: keys.key(oldKey.currentKeyId)), action: .open),
        ])
        XCTAssertEqual(TrackingHandler(messageIdKeys: keys).apply(report, CommandContext(at: at), to: &s), .applied)
        XCTAssertEqual(s.trackingOutcomes, [.counted: 1, .rejected(.foreignBroadlog): 1])
    }

    func testAProcessorWithoutTheSendsKeyStopsBeforeItInsteadOfSendingOtherIds() throws {
        let keyed = send(UUID(), keyId: oldKey.currentKeyId)
        let report = TrackingReported(mobileAppId: appId, deliveryId: UUID(), events: [], keyedIds: true)
        XCTAssertNoThrow(try MessageKeyMissing.check([try decoded(keyed), try decoded(report)], keys: MessageIdKeys(keyring: newKey)))
        XCTAssertNoThrow(try MessageKeyMissing.check([try decoded(send(UUID(), keyId: nil))], keys: .none), "an old log needs no key")
        XCTAssertThrowsError(try MessageKeyMissing.check([try decoded(keyed)], keys: .none)) { error in
            XCTAssertTrue("\(error)".contains("PUSHLINE_SECRETS_KEY"), "\(error)")
        }
        let rotatedAway = MessageIdKeys(keyring: try SecretsKeyring(current: Data(repeating: 3, count: 32).base64EncodedString()))
        XCTAssertThrowsError(try MessageKeyMissing.check([try decoded(keyed)], keys: rotatedAway), "a key dropped from the keyring")
        XCTAssertThrowsError(try MessageKeyMissing.check([try decoded(report)], keys: .none))
        var s = state()
        XCTAssertEqual(NotificationHandler().apply(keyed, CommandContext(at: at), to: &s), .rejected("unknown-message-key"),
                       "never sent with ids other than the ones its key makes")
        XCTAssertTrue(s.outbound.isEmpty)
    }

    private func decoded<C: Command>(_ command: C) throws -> DecodedRecord {
        let encoded = try EncodedCommand(command, topics: Topics(), at: at, encoder: WireJSON.encoder())
        let outcome = CommandDecoder().decode(type: encoded.type, version: encoded.version, value: encoded.value)
        return DecodedRecord(partition: PartitionKey(topic: encoded.topic, partition: 0), offset: 7, requestId: nil,
                             outcome: outcome, type: encoded.type, value: encoded.value, timestamp: nil, at: nil)
    }
}
