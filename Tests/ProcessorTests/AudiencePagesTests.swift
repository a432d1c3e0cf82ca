import Contracts
import Foundation
import Logging
import Projections
import ProjectionStores
import Synchronization
import WireCodec
import XCTest
@testable import Handlers
@testable import Processor

/// A send to an audience is applied on its own and reads its app's devices from the store in
/// pages (`BatchApplier.stream`): it reaches the devices the event order gives it, with the records
/// the handler makes over the same devices held in memory, whatever the page and window sizes.
final class AudiencePagesTests: ApplierTestCase {
    private let appId = UUID(), org = UUID(), tokenHash = ApiTokens.hash("t")
    private let locales = ["pt-BR", "es", nil, "pt-PT"]

    private func registration(_ n: Int, token: String) -> DeviceRegistrationRequested {
        DeviceRegistrationRequested(registrationRequestId: UUID(), orgId: org, mobileAppId: appId, userId: "u-\(n % 7)",
                                    platform: token.utf8.count == 64 ? .ios : .android, deviceToken: token, apiTokenHash: tokenHash,
                                    trackStatus: false, callback: nil, locale: locales[n % locales.count],
                                    tags: n % 3 == 0 ? ["vip"] : ["free"])
    }

    func testAnAudienceSendReadInPagesReachesWhatTheEventOrderGivesWhateverThePageAndWindowSizes() async throws {
        // Tokens in no order: APNs tokens, and FCM tokens sharing long prefixes.
        let tokens = (0..<41).map { n in n % 10 == 9 ? String(repeating: "c", count: 300) + "\(n)" : String(format: "%064x", n * 7919 % 101) }
        var setup = [try record(AppCreated(orgId: org, mobileAppId: appId, name: "a", tokenId: UUID(), tokenHash: tokenHash),
                                partition: 0, offset: 0)]
        for (n, token) in tokens.enumerated() { setup.append(try record(registration(n, token: token), partition: 1, offset: Int64(n))) }
        let send = NotificationRequested(
            deliveryId: UUID(), mobileAppId: appId, target: NotificationTarget(audience: "tag:vip"),
            content: NotificationContent(title: "Goal", localized: ["pt": LocalizedText(title: "Golo"), "pt-BR": LocalizedText(title: "Gol")]),
            managed: false, businessId: nil, tracking: true, kind: .alert)
        // In the send's batch: before it, device 0 loses its tag and device 1 gains it; after it, a
        // new vip device registers. The send is applied between them.
        let late = String(repeating: "0", count: 64)
        let batch = [
            try record(DeviceChangeRequested(mobileAppId: appId, deviceToken: tokens[0], userId: nil, removeTags: ["vip"]),
                       partition: 1, offset: 41),
            try record(DeviceChangeRequested(mobileAppId: appId, deviceToken: tokens[1], userId: nil, addTags: ["vip"]),
                       partition: 1, offset: 42),
            try record(send, partition: 2, offset: 0),
            try record(registration(3, token: late), partition: 1, offset: 43),
        ]
        let expected = tokens.enumerated().filter { ($0.offset % 3 == 0 && $0.offset != 0) || $0.offset == 1 }.map(\.element)
            .sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }

        let paged = try await apply([setup, batch], name: "paged.sqlite", outboundWindow: 2, devicePageSize: 3)
        let whole = try await apply([setup, batch], name: "whole.sqlite")
        XCTAssertEqual(paged.outbound.map(\.deviceToken), expected, "the vip devices as the send found them, in byte order")
        XCTAssertEqual(paged.outbound.map(\.value), whole.outbound.map(\.value), "the same records whatever the page and window")

        // The records the handler makes with every device in memory, over the same devices.
        let stored = try await paged.store.devices(app: appId, after: nil, limit: 100)
        XCTAssertTrue(stored.contains { $0.deviceToken == late }, "the later registration was applied after the send")
        var snapshot = StateSnapshot()
        snapshot.apps[AppPart(appId)] = try await paged.store.app(appId)
        for device in stored where device.deviceToken != late { snapshot.devices[device.key] = device }
        var state = BatchState(snapshot)
        XCTAssertEqual(NotificationHandler().apply(send, CommandContext(at: at), to: &state), .applied)
        XCTAssertEqual(paged.outbound.map(\.value), state.outbound.map(\.value), "the records of the send held in memory")

        let delivery = try await paged.store.delivery(app: appId, deliveryId: send.deliveryId)
        XCTAssertEqual(delivery?.sent, expected.count)
        let byLocale = Dictionary(grouping: expected) { token in
            let n = tokens.firstIndex(of: token)!
            return ["pt-BR": "pt-BR", "pt-PT": "pt"][locales[n % locales.count] ?? ""] ?? "default"
        }.mapValues(\.count)
        XCTAssertEqual(delivery?.sentByLocale, byLocale)
        // Each record names the variant its device got, which the sender reports its outcome under.
        let recordLocales = try paged.outbound.map { try OutboundPush.read($0.value).locale ?? "none" }
        XCTAssertEqual(Dictionary(grouping: recordLocales) { $0 }.mapValues(\.count), byLocale)
        let offsets = try await paged.store.offsets(topics: [topics.notification, topics.registration])
        XCTAssertEqual(offsets[PartitionKey(topic: topics.notification, partition: 2)], 1)
        XCTAssertEqual(offsets[PartitionKey(topic: topics.registration, partition: 1)], 44, "the records after the send are applied too")
    }

    func testAnAudienceSendThatReachesNobodyOrRepeatsADeliveryIsRecordedOnceAndSendsNothing() async throws {
        let setup = [
            try record(AppCreated(orgId: org, mobileAppId: appId, name: "a", tokenId: UUID(), tokenHash: tokenHash), partition: 0, offset: 0),
            try record(registration(1, token: String(format: "%064x", 1)), partition: 1, offset: 0),
        ]
        let nobody = NotificationRequested(deliveryId: UUID(), mobileAppId: appId, target: NotificationTarget(audience: "tag:none"),
                                           content: NotificationContent(title: "hi"), managed: false, businessId: nil, tracking: true,
                                           kind: .alert)
        var all = nobody
        all.deliveryId = UUID()
        all.target = NotificationTarget(audience: "all")
        let sends = [try record(nobody, partition: 2, offset: 0), try record(all, partition: 2, offset: 1), try record(all, partition: 2, offset: 2)]
        let applied = try await apply([setup, sends], name: "store.sqlite", devicePageSize: 1)
        XCTAssertEqual(applied.outbound.count, 1, "the second copy of the send is a repeat, not sent again")
        let reachedNobody = try await applied.store.delivery(app: appId, deliveryId: nobody.deliveryId)
        let reachedAll = try await applied.store.delivery(app: appId, deliveryId: all.deliveryId)
        XCTAssertEqual(reachedNobody?.sent, 0, "a send that reaches nobody is recorded")
        XCTAssertEqual(reachedAll?.sent, 1)
    }

    func testTheSendReadsItsDevicesInPagesAndNeverLoadsTheWholeApp() async throws {
        let sqlite = try await ProjectionStoreFactory.open("sqlite:" + directory.appendingPathComponent("count.sqlite").path,
                                                           logger: Logger(label: "test"))
        let store = ReadCountingStore(sqlite)
        let applier = BatchApplier(store: store, outbound: RecordingOutbound(), verifier: TokenFormatVerifier(),
                                   logger: Logger(label: "test"), devicePageSize: 4)
        var records = [try record(AppCreated(orgId: org, mobileAppId: appId, name: "a", tokenId: UUID(), tokenHash: tokenHash),
                                  partition: 0, offset: 0)]
        for n in 0..<10 { records.append(try record(registration(n, token: String(format: "%064x", n)), partition: 1, offset: Int64(n))) }
        let all = NotificationRequested(deliveryId: UUID(), mobileAppId: appId, target: NotificationTarget(audience: "all"),
                                        content: NotificationContent(title: "hi"), managed: false, businessId: nil, tracking: true,
                                        kind: .alert)
        records.append(try record(all, partition: 2, offset: 0))
        _ = try await applier.apply(records, expected: [:])
        XCTAssertEqual(store.pages, [nil, String(format: "%064x", 3), String(format: "%064x", 7)], "pages of 4, 4 and 2, each after the last")
        XCTAssertFalse(store.loadedAllDevices, "no batch loaded every device of the app")
        let delivery = try await sqlite.delivery(app: appId, deliveryId: all.deliveryId)
        XCTAssertEqual(delivery?.sent, 10)
    }
}

/// A store that records the pages of devices read from it, and whether a batch loaded every
/// device of an app.
private final class ReadCountingStore: BatchStore {
    private let store: any ProjectionStore
    private let reads = Mutex<(pages: [String?], loadedAllDevices: Bool)>(([], false))
    var pages: [String?] { reads.withLock { $0.pages } }
    var loadedAllDevices: Bool { reads.withLock { $0.loadedAllDevices } }

    init(_ store: any ProjectionStore) { self.store = store }

    func load(_ query: StateQuery) async throws -> StateSnapshot {
        if !query.allDevicesOf.isEmpty { reads.withLock { $0.loadedAllDevices = true } }
        return try await store.load(query)
    }

    func commit(mutations: [Mutation], offsets: [OffsetUpdate]) async throws { try await store.commit(mutations: mutations, offsets: offsets) }

    func devices(app appId: UUID, after: String?, limit: Int, having: DeviceNames) async throws -> [DeviceRow] {
        reads.withLock { $0.pages.append(after) }
        return try await store.devices(app: appId, after: after, limit: limit, having: having)
    }

    func deviceCount(app appId: UUID, name: DeviceName, upTo limit: Int) async throws -> Int {
        try await store.deviceCount(app: appId, name: name, upTo: limit)
    }

    func offsets(topics: [String]) async throws -> [PartitionKey: Int64] { try await store.offsets(topics: topics) }
    func eventTimes(topics: [String]) async throws -> [PartitionKey: Int64] { try await store.eventTimes(topics: topics) }
    func heldLanes(topics: [String]) async throws -> [HeldLane] { try await store.heldLanes(topics: topics) }
    func waitingSends(dueBy: Date, after: DeliveryRow?, limit: Int) async throws -> [DeliveryRow] {
        try await store.waitingSends(dueBy: dueBy, after: after, limit: limit)
    }
    func createdAt() async throws -> Date { try await store.createdAt() }
}
