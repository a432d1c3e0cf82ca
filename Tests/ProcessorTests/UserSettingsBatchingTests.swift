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
}
