import Contracts
import Foundation
import WireCodec
import XCTest

/// `AppParts`: where an app's parts and a device token's part are.
final class AppPartsTests: XCTestCase {
    func testOnePartHoldsEveryToken() {
        for token in ["", "a", String(repeating: "f", count: 4_096), "東京"] { XCTAssertEqual(AppParts.one.part(ofToken: token), 0) }
    }

    func testATokensPartIsTheCRC32OfItsBytesAndTheTokensSpreadEvenly() {
        for count in [2, 3, 7] {
            let parts = AppParts(count)
            var held = [Int](repeating: 0, count: count)
            for n in 0..<30_000 {
                let token = String(format: "%064x", n)
                let part = parts.part(ofToken: token)
                XCTAssertEqual(part, Int(CRC32.checksum(token.utf8) % UInt32(count)))
                held[part] += 1
            }
            let even = 30_000 / count
            for n in held { XCTAssertTrue(abs(n - even) < even / 20, "\(count) parts: \(held)") }
        }
    }

    /// An app's parts are spread evenly from its key's partition, wrapping around: a range of
    /// shards as a group's range assignment hands a member holds as few of them as it can.
    func testAnAppsPartsAreSpreadEvenlyFromItsKeysPartition() {
        let key = "9f3a1c52-0d7e-4b8a-9c61-2f4e5d6a7b8c"
        let first = Int(RecordKey.partition(of: key, partitions: 12))
        for count in [1, 2, 3, 4, 5, 12, 20] {
            let parts = AppParts(count)
            let partitions = parts.all.map { Int(parts.partition(key: key, part: $0, partitions: 12)) }
            XCTAssertEqual(partitions[0], first)
            XCTAssertEqual(Set(partitions).count, min(count, 12), "\(count) parts are on different partitions as far as there are")
            let stride = max(1, 12 / count)
            XCTAssertEqual(partitions, parts.all.map { (first + $0 * stride) % 12 })
        }
        // Two members of a group each own half of the shards: two parts are never in one half.
        for n in 0..<200 {
            let key = "app-\(n)"
            let halves = AppParts(2).all.map { Int(AppParts(2).partition(key: key, part: $0, partitions: 12)) / 6 }
            XCTAssertNotEqual(halves[0], halves[1], key)
        }
        XCTAssertEqual(AppParts(3).partition(key: key, part: 2, partitions: 1), 0)
    }

    func testAnEncodedCommandsPartitionIsItsParts() throws {
        let app = UUID()
        let command = NotificationAcknowledged(mobileAppId: app, notificationId: "n", deviceToken: "t")
        for part in 0..<3 {
            let encoded = try EncodedCommand(command, topics: Topics(), part: part, parts: AppParts(3), encoder: JSONEncoder())
            XCTAssertEqual(encoded.key, app.lowercasedString)
            XCTAssertEqual(encoded.partition(partitions: 12), AppParts(3).partition(key: app.lowercasedString, part: part, partitions: 12))
        }
    }
}

/// `AppScopedCommand.split`: which parts of its app each command goes to.
final class AppPartsSplitTests: XCTestCase {
    let app = UUID()
    let parts = AppParts(3)

    /// Two tokens of different parts.
    func tokens() -> (String, String) {
        let first = "token-0"
        let other = (1...).lazy.map { "token-\($0)" }.first { self.parts.part(ofToken: $0) != self.parts.part(ofToken: first) }!
        return (first, other)
    }

    func testACommandAboutOneDeviceGoesToItsTokensPart() {
        let (token, _) = tokens()
        let part = parts.part(ofToken: token)
        let registration = DeviceRegistrationRequested(registrationRequestId: UUID(), orgId: UUID(), mobileAppId: app, userId: "u",
                                                       platform: .ios, deviceToken: token, apiTokenHash: "h", trackStatus: true, callback: nil)
        XCTAssertEqual(registration.split(into: parts).map(\.part), [part])
        let ack = NotificationAcknowledged(mobileAppId: app, notificationId: "n", deviceToken: token)
        XCTAssertEqual(ack.split(into: parts).map(\.part), [part])
        let outcome = DeliveryResultReported(mobileAppId: app, deviceToken: token, platform: .ios, deliveryId: nil, messageId: "m",
                                             outcome: .delivered, reason: nil, status: 200)
        XCTAssertEqual(outcome.split(into: parts).map(\.part), [part])
        let cleanup = DeviceCleanupRequested(orgId: UUID(), mobileAppId: app, userId: "u", deviceToken: token, apiTokenHash: "h")
        XCTAssertEqual(cleanup.split(into: parts).map(\.part), [part])
    }

    func testSendsAdminCommandsAndCleanupsOfAllOfAUsersDevicesGoToEveryPart() {
        let cleanup = DeviceCleanupRequested(orgId: UUID(), mobileAppId: app, userId: "u", deviceToken: nil, apiTokenHash: "h")
        XCTAssertEqual(cleanup.split(into: parts).map(\.part), [0, 1, 2])
        let send = NotificationRequested(deliveryId: UUID(), mobileAppId: app, target: NotificationTarget(deviceTokens: [tokens().0, tokens().1]),
                                         content: NotificationContent(title: "t"), managed: false, businessId: nil, tracking: true)
        XCTAssertEqual(send.split(into: parts).map(\.part), [0, 1, 2])
        XCTAssertEqual(send.split(into: parts).map(\.command), [send, send, send])
        let created = AppCreated(orgId: UUID(), mobileAppId: app, name: "a", tokenId: UUID(), tokenHash: "h")
        XCTAssertEqual(created.split(into: parts).map(\.part), [0, 1, 2])
        XCTAssertEqual(created.split(into: .one).map(\.part), [0])
    }

    func testTrackingEventsGoToTheirMessageIndexsPartAndAnIdWithoutOneToPartZero() {
        let delivery = UUID()
        let events = [
            TrackingEvent(broadlogId: "\(AppParts.messageIndex(place: 4, part: 2))-0123456789abcdef", action: .open),
            TrackingEvent(broadlogId: "7-0123456789abcdef", action: .click),
            TrackingEvent(broadlogId: "not an id", action: .open),
            TrackingEvent(broadlogId: "\(AppParts.messageIndex(place: 0, part: 5))-0123456789abcdef", action: .open),
            TrackingEvent(broadlogId: "\(AppParts.messageIndex(place: 9, part: 2))-0123456789abcdef", action: .impression),
        ]
        let split = TrackingReported(mobileAppId: app, deliveryId: delivery, events: events).split(into: parts)
        XCTAssertEqual(split.map(\.part), [0, 2])
        XCTAssertEqual(split[0].command.events, [events[1], events[2], events[3]], "part 5 is not one of three: part 0 refuses it")
        XCTAssertEqual(split[1].command.events, [events[0], events[4]])
        XCTAssertTrue(split.allSatisfy { $0.command.deliveryId == delivery && $0.command.mobileAppId == app })
        XCTAssertEqual(TrackingReported(mobileAppId: app, deliveryId: delivery, events: []).split(into: parts).map(\.part), [0])
    }

    /// A split command's records share its id and time, each in its part's partition.
    func testTheRecordsOfASplitCommandShareItsIdAndGoToTheirPartsPartitions() throws {
        let id = UUID(), at = Date(timeIntervalSince1970: 1_800_000_000)
        let created = AppCreated(orgId: UUID(), mobileAppId: app, name: "a", tokenId: UUID(), tokenHash: "h")
        let records = try EncodedCommand.parts(of: created, parts: parts, topics: Topics(), id: id, at: at, encoder: WireJSON.encoder())
        XCTAssertEqual(records.map(\.part), [0, 1, 2])
        let first = RecordKey.partition(of: app.lowercasedString, partitions: 12)
        XCTAssertEqual(records.map { $0.partition(partitions: 12) }, [first, (first + 4) % 12, (first + 8) % 12])
        for record in records {
            let envelope = try WireJSON.decoder().decode(Envelope<AppCreated>.self, from: record.value)
            XCTAssertEqual(envelope.id, id)
            XCTAssertEqual(envelope.at, at)
            XCTAssertEqual(envelope.appPart, record.part)
            XCTAssertEqual(envelope.payload, created)
        }
        let admin = AdminTokenIssued(adminTokenId: UUID(), name: "ops", tokenHash: "h")
        XCTAssertEqual(try EncodedCommand.parts(of: admin, parts: parts, topics: Topics(), encoder: JSONEncoder()).map(\.part), [0],
                       "a command about no app is in no app's parts")
    }
}
