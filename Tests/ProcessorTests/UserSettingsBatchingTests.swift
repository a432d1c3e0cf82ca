import Contracts
import Foundation
import Projections
import XCTest
@testable import Processor

/// Users' settings (caps counted, quiet hours of their own) decide the same whatever the batch
/// boundaries, through the real applier and SQLite: a device registered in the same batch as a
/// send reaches its new user's quiet hours, and caps set again in the same batch as a send count
/// the pushes counted before they were removed.
final class UserSettingsBatchingTests: ApplierTestCase {
    let appId = UUID(), org = UUID(), tokenHash = ApiTokens.hash("t"), tokenId = UUID()
    /// 2026-09-21T14:13:20Z: 11:13 in São Paulo.
    let base = Date(timeIntervalSince1970: 1_790_000_000)
    let capped = UUID(), quiet = UUID()

    private func log() throws -> [ConsumedRecord] {
        var offsets: [String: Int64] = [:], second = 0.0
        func next<C: Command>(_ command: C) throws -> ConsumedRecord {
            let topic = C.topic.name(in: topics)
            defer { offsets[topic, default: 0] += 1; second += 1 }
            return try record(command, partition: 0, offset: offsets[topic, default: 0], at: base.addingTimeInterval(second))
        }
        func register(_ device: Int, to user: String) -> DeviceRegistrationRequested {
            DeviceRegistrationRequested(registrationRequestId: UUID(), orgId: org, mobileAppId: appId, userId: user, platform: .ios,
                                        deviceToken: String(format: "%064x", device), apiTokenHash: tokenHash, trackStatus: false,
                                        callback: nil)
        }
        func send(_ id: UUID, to user: String) -> NotificationRequested {
            NotificationRequested(deliveryId: id, mobileAppId: appId, target: NotificationTarget(userIds: [user]),
                                  content: NotificationContent(title: "T"))
        }
        return [
            try next(AppCreated(orgId: org, mobileAppId: appId, name: "a", tokenId: tokenId, tokenHash: tokenHash)),
            try next(AppSettingsChanged(mobileAppId: appId, timeZone: "America/Sao_Paulo", frequencyCaps: "*:1/3600")),
            try next(register(2, to: "u2")),
            try next(send(UUID(), to: "u2")),
            // Caps removed, then set again: u2's push counted above still counts.
            try next(AppSettingsChanged(mobileAppId: appId, frequencyCaps: "")),
            try next(AppSettingsChanged(mobileAppId: appId, frequencyCaps: "*:1/3600")),
            try next(send(capped, to: "u2")),
            // u1's own quiet hours, then a first device of u1's, then a send to u1 in them.
            try next(UserSettingsChanged(mobileAppId: appId, userId: "u1", quietHours: "11:00-12:00")),
            try next(register(1, to: "u1")),
            try next(send(quiet, to: "u1")),
        ]
    }

    func testUsersSettingsDecideTheSameWhateverTheBatching() async throws {
        let records = try log()
        var dumps: [String] = []
        for (name, sizes) in [("one", [10]), ("each", Array(repeating: 1, count: 10)), ("pairs", [2, 2, 2, 2, 2]), ("mixed", [5, 3, 2])] {
            var rest = records[...]
            let batches = sizes.map { size in
                defer { rest = rest.dropFirst(size) }
                return Array(rest.prefix(size))
            }
            let (store, _) = try await apply(batches, name: "\(name).sqlite")
            let dump = try await store.dump()
            let deliveries = dump.split(separator: "\n").filter { $0.hasPrefix("deliveries ") }
            let cappedRow = deliveries.first { $0.contains(capped.lowercasedString) }
            let quietRow = deliveries.first { $0.contains(quiet.lowercasedString) }
            XCTAssertTrue(cappedRow?.contains(" sent=0 ") == true && cappedRow?.contains(" capped=1") == true,
                          "\(name): u2 had a push in the hour before the caps came back: \(cappedRow ?? "none")")
            XCTAssertTrue(quietRow?.contains(" sent=0 ") == true && quietRow?.contains(" held=1 ") == true,
                          "\(name): u1's device, registered in the send's batch, is in u1's quiet hours: \(quietRow ?? "none")")
            dumps.append(dump)
            await store.close()
        }
        for dump in dumps.dropFirst() { XCTAssertEqual(dump, dumps[0]) }
    }

    /// A send to an audience, read in pages, decides the same whether it read all of its app
    /// part's users' settings at once or a page's users at a time, and counts itself once: u0,
    /// counted on their own row by a send to them, is capped by the second broadcast; u1's own
    /// quiet hours hold theirs.
    func testASendToAnAudienceDecidesTheSameWithUsersSettingsReadAtOnceOrByPage() async throws {
        var offsets: [String: Int64] = [:], second = 0.0
        func next<C: Command>(_ command: C) throws -> ConsumedRecord {
            let topic = C.topic.name(in: topics)
            defer { offsets[topic, default: 0] += 1; second += 1 }
            return try record(command, partition: 0, offset: offsets[topic, default: 0], at: base.addingTimeInterval(second))
        }
        var records = [
            try next(AppCreated(orgId: org, mobileAppId: appId, name: "a", tokenId: tokenId, tokenHash: tokenHash)),
            try next(AppSettingsChanged(mobileAppId: appId, timeZone: "America/Sao_Paulo", frequencyCaps: "*:2/3600")),
            try next(UserSettingsChanged(mobileAppId: appId, userId: "u1", quietHours: "11:00-12:00")),
        ]
        for device in 0..<7 {
            records.append(try next(DeviceRegistrationRequested(
                registrationRequestId: UUID(), orgId: org, mobileAppId: appId, userId: "u\(device % 4)", platform: .ios,
                deviceToken: String(format: "%064x", device), apiTokenHash: tokenHash, trackStatus: false, callback: nil)))
        }
        records.append(try next(NotificationRequested(deliveryId: UUID(), mobileAppId: appId, target: NotificationTarget(userIds: ["u0"]),
                                                      content: NotificationContent(title: "T"))))
        let broadcasts = [UUID(), UUID()]
        for id in broadcasts {
            records.append(try next(NotificationRequested(deliveryId: id, mobileAppId: appId, target: NotificationTarget(audience: "all"),
                                                          content: NotificationContent(title: "B"))))
        }
        var dumps: [String] = []
        for few in [10_000, 0] {
            let (store, outbound) = try await apply([records], name: "few-\(few).sqlite", devicePageSize: 2, fewUserSettings: few)
            let dump = try await store.dump()
            let second = dump.split(separator: "\n").first { $0.hasPrefix("deliveries ") && $0.contains(broadcasts[1].lowercasedString) }
            // u0 has two devices (0, 4), u1 two (1, 5, held), u2 two (2, 6), u3 one (3).
            XCTAssertTrue(second?.contains(" sent=3 ") == true && second?.contains(" capped=2") == true && second?.contains(" held=2 ") == true,
                          "few \(few): u0's devices capped, u1's held: \(second ?? "none")")
            XCTAssertEqual(dump.split(separator: "\n").filter { $0.hasPrefix("counted_sends ") }.count, 2, "few \(few): each broadcast counted once")
            XCTAssertEqual(Set(outbound.map(\.deviceToken)).count, 7 - 2, "few \(few): u1's devices held")
            dumps.append(dump)
            await store.close()
        }
        XCTAssertEqual(dumps[0], dumps[1])
    }
}
