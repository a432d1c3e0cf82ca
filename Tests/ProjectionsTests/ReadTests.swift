import Contracts
import Foundation
@testable import Projections
@testable import SQLiteProjections
@testable import PostgresProjections
@testable import ProjectionChangelog
import Testing
import WireCodec

@Suite(.serialized) struct ReadTests {
    @Test(arguments: StoreBackend.allCases)
    func testRegistrationStatusesNeverReturnAnotherAppsRows(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let mine = UUID()
            let theirs = UUID()
            let myStatus = Fixture.status(app: mine, status: .Success)
            let theirStatus = Fixture.status(app: theirs, status: .Failed, reason: .DuplicateExists)
            try await store.commit(mutations: [.putRegistrationStatus(myStatus), .putRegistrationStatus(theirStatus)], offsets: [])

            let statuses = try await store.registrationStatuses(app: mine, requestIds: [myStatus.requestId, theirStatus.requestId])
            let theirsSeen = try await store.registrationStatuses(app: theirs, requestIds: [theirStatus.requestId])

            #expect(statuses == [myStatus.requestId: myStatus])
            #expect(theirsSeen == [theirStatus.requestId: theirStatus])
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testRegistrationStatusesLeaveOutUnknownIdsAndTolerateRepeats(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let app = UUID()
            let stored = (0..<70).map { _ in Fixture.status(app: app) }
            try await store.commit(mutations: stored.map(Mutation.putRegistrationStatus), offsets: [])
            let unknown = UUID()

            let statuses = try await store.registrationStatuses(app: app, requestIds: [unknown] + stored.map(\.requestId) + [stored[0].requestId])

            #expect(statuses.count == 70)
            #expect(statuses[unknown] == nil)
            #expect(statuses[stored[69].requestId] == stored[69])
        }
    }

    /// The pages an audience send reads: every device of the app once, in the tokens' byte
    /// order, also for tokens longer than PostgreSQL's index holds that share its prefix.
    @Test(arguments: StoreBackend.allCases)
    func testAnAppsDevicesArePagedInTheTokensByteOrder(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let app = UUID(), other = UUID()
            let long = String(repeating: "a", count: 300)
            var tokens = (0..<25).map { String(format: "%064x", $0 * 7919 % 101) }
            tokens += [long + "b", long + "a", long, long + "ab", String(repeating: "a", count: 256), String(repeating: "a", count: 255) + "b",
                       "Z", "\u{E9}-token", "e-token", "\u{FC}", "a\u{7F}", "a", String(repeating: "f", count: 4_096)]
            var mutations = tokens.shuffled().map { Mutation.upsertDevice(Fixture.device(app: app, token: $0, user: "u")) }
            mutations.append(.upsertDevice(Fixture.device(app: other, token: "0", user: "u")))
            try await store.commit(mutations: mutations, offsets: [])
            let expected = tokens.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }

            var paged: [String] = []
            var after: String?
            while true {
                let page = try await store.devices(app: app, after: after, limit: 4)
                paged += page.map(\.deviceToken)
                guard page.count == 4 else { break }
                after = page.last!.deviceToken
            }
            #expect(paged == expected)
            #expect(try await store.devices(app: app, after: nil, limit: 1_000).map(\.deviceToken) == expected)
            #expect(try await store.devices(app: app, after: expected.last!, limit: 10).isEmpty)
            #expect(try await store.devices(app: other, after: nil, limit: 10).map(\.deviceToken) == ["0"])
        }
    }

    /// A page of the devices that carry some tags and topics, read from the index of names:
    /// exactly those, in exact case; a name's `_` and `%` are only themselves.
    @Test(arguments: StoreBackend.allCases)
    func testAPageOfTheDevicesWithSomeTagsAndTopicsHoldsExactlyThem(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let app = UUID(), other = UUID()
            let labelled: [(token: String, tags: DeviceLabels, topics: DeviceLabels)] = [
                ("t1", ["a", "b"], ["news"]), ("t2", ["ab"], ["news"]), ("t3", ["b_c"], []), ("t4", ["bxc"], ["news"]),
                ("t5", [], ["news"]), ("t6", ["b"], []), ("t7", ["B"], ["news"]), ("t8", ["a%"], ["news", "sport"]),
                ("t9", ["news"], ["b"]),
            ]
            var mutations = labelled.map { token, tags, topics in
                var device = Fixture.device(app: app, token: token, user: "u")
                device.tags = tags
                device.topics = topics
                return Mutation.upsertDevice(device)
            }
            var elsewhere = Fixture.device(app: other, token: "t1", user: "u")
            elsewhere.tags = ["a", "b"]
            mutations.append(.upsertDevice(elsewhere))
            try await store.commit(mutations: mutations, offsets: [])
            func page(tags: Set<String> = [], topics: Set<String> = [], after: String? = nil, limit: Int = 100) async throws -> [String] {
                try await store.devices(app: app, after: after, limit: limit, having: DeviceNames(tags: tags, topics: topics)).map(\.deviceToken)
            }
            #expect(try await page(tags: ["b"]) == ["t1", "t6"])
            #expect(try await page(tags: ["B"]) == ["t7"])
            #expect(try await page(tags: ["b_c"]) == ["t3"])
            #expect(try await page(tags: ["a%"]) == ["t8"])
            #expect(try await page(tags: ["a"]) == ["t1"])
            #expect(try await page(tags: ["a", "b"]) == ["t1"])
            #expect(try await page(tags: ["news"]) == ["t9"])
            #expect(try await page(topics: ["news"]) == ["t1", "t2", "t4", "t5", "t7", "t8"])
            #expect(try await page(tags: ["a"], topics: ["news"]) == ["t1"])
            #expect(try await page(topics: ["sport", "news"]) == ["t8"])
            #expect(try await page(topics: ["news"], after: "t2", limit: 2) == ["t4", "t5"])
            #expect(try await page(tags: ["nobody"]).isEmpty)
            #expect(try await page() == labelled.map(\.token))

            // Counted up to a limit; the page leads with the name of the fewest devices, and
            // gives the same devices whichever leads.
            let news = DeviceName(kind: .topic, name: "news")
            #expect(try await store.deviceCount(app: app, name: news, upTo: 100) == 6)
            #expect(try await store.deviceCount(app: app, name: news, upTo: 4) == 4)
            #expect(try await store.deviceCount(app: app, name: DeviceName(kind: .tag, name: "news"), upTo: 100) == 1)
            #expect(try await store.deviceCount(app: other, name: news, upTo: 100) == 0)
            var names = DeviceNames(tags: ["a"], topics: ["news"])
            #expect(try await store.leading(names, app: app).lead == DeviceName(kind: .tag, name: "a"))
            names = DeviceNames(tags: ["news", "b"], topics: ["news"])
            #expect(try await store.leading(names, app: app).lead == DeviceName(kind: .tag, name: "news"))
            names = DeviceNames(topics: ["sport", "news"])
            let led = try await store.leading(names, app: app)
            #expect(led.lead == DeviceName(kind: .topic, name: "sport"))
            #expect(try await store.devices(app: app, after: nil, limit: 100, having: led).map(\.deviceToken) == ["t8"])
            // Led by the topic, the tag is checked on each device's own names, whole: `a` is not
            // in `ab` or `a%`, nor `ab` in `a b`.
            for (tag, expected) in [("a", ["t1"]), ("ab", ["t2"]), ("b", ["t1"]), ("news", [String]())] {
                var byNews = DeviceNames(tags: [tag], topics: ["news"])
                byNews.lead = news
                #expect(try await store.devices(app: app, after: nil, limit: 100, having: byNews).map(\.deviceToken) == expected, "\(tag)")
            }
            names.lead = news
            #expect(try await store.devices(app: app, after: nil, limit: 100, having: names).map(\.deviceToken) == ["t8"])
        }
    }

    /// The index of names follows every write of a device (new, changed names, a new user's
    /// empty ones, deleted), in random histories, tokens longer than PostgreSQL's index keeps
    /// sharing its prefix among them: paged in small pages by any one or two names, it gives
    /// exactly the devices that carry them, in the tokens' byte order.
    @Test(arguments: StoreBackend.allCases)
    func testTheIndexOfNamesFollowsEveryWriteOfADevice(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let app = UUID()
            var generator = SeededRandom(seed: 50)
            let long = String(repeating: "p", count: 300)
            let tokens = (0..<40).map { $0 % 4 == 0 ? long + "\($0)" : "token-\($0)" }
            let names = ["vip", "fan", "news", "team:benfica", "x.y"]
            var devices: [String: DeviceRow] = [:]
            for _ in 0..<12 {
                var mutations: [Mutation] = []
                for token in tokens.shuffled(using: &generator).prefix(15) {
                    if devices[token] != nil, Int.random(in: 0..<5, using: &generator) == 0 {
                        devices[token] = nil
                        mutations.append(.deleteDevice(DeviceKey(appId: app, deviceToken: token)))
                        continue
                    }
                    var device = devices[token] ?? Fixture.device(app: app, token: token, user: "u")
                    device.tags = DeviceLabels(names.filter { _ in Bool.random(using: &generator) })
                    device.topics = DeviceLabels(names.filter { _ in Int.random(in: 0..<3, using: &generator) == 0 })
                    devices[token] = device
                    mutations.append(.upsertDevice(device))
                }
                try await store.commit(mutations: mutations, offsets: [])

                var ledByTheLast = DeviceNames(tags: ["fan", "x.y"], topics: ["news"])
                ledByTheLast.lead = DeviceName(kind: .topic, name: "news")
                for having in [DeviceNames(tags: ["vip"]), DeviceNames(topics: ["news"]), DeviceNames(tags: ["fan", "x.y"]),
                               DeviceNames(tags: ["team:benfica"], topics: ["vip"]), ledByTheLast] {
                    var paged: [String] = []
                    var after: String?
                    while true {
                        let page = try await store.devices(app: app, after: after, limit: 3, having: having)
                        paged += page.map(\.deviceToken)
                        guard page.count == 3 else { break }
                        after = page.last!.deviceToken
                    }
                    let expected = devices.values.filter { device in
                        having.tags.allSatisfy { device.tags.contains($0) } && having.topics.allSatisfy { device.topics.contains($0) }
                    }.map(\.deviceToken).sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
                    #expect(paged == expected, "\(having)")
                }
            }
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testAppsArePagedInIdOrder(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let apps = (0..<5).map { _ in Fixture.app() }
            try await store.commit(mutations: apps.map(Mutation.upsertApp), offsets: [])
            let ids = apps.map(\.appId).sorted { $0.lowercasedString < $1.lowercasedString }

            let first = try await store.apps(after: nil, limit: 2)
            let rest = try await store.apps(after: ids[1], limit: 10)
            let none = try await store.apps(after: ids[4], limit: 10)

            #expect(first.map(\.appId) == Array(ids[0...1]))
            #expect(rest.map(\.appId) == Array(ids[2...4]))
            #expect(rest.first == (apps.first { $0.appId == ids[2] }))
            #expect(none == [])
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testReadsOfMissingRowsAnswerNothing(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()

            let app = try await store.app(UUID())
            let tokens = try await store.apiTokens(app: UUID())
            let device = try await store.device(DeviceKey(appId: UUID(), deviceToken: "none"))
            let devices = try await store.devices(app: UUID(), user: "none")
            let statuses = try await store.registrationStatuses(app: UUID(), requestIds: [])
            let job = try await store.outboxJob("none")
            let due = try await store.nextOutboxDue()
            let token = try await store.apiToken(hash: "none")
            let pending = try await store.pendingNotifications(DeviceKey(appId: UUID(), deviceToken: "none"))
            let delivery = try await store.deliveryStats(app: UUID(), deliveryId: UUID())

            #expect(app == nil)
            #expect(tokens == [])
            #expect(device == nil)
            #expect(devices == [])
            #expect(statuses == [:])
            #expect(job == nil)
            #expect(due == nil)
            #expect(token == nil)
            #expect(pending == [])
            #expect(delivery == nil)
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testDevicesOfAUserAreListedByToken(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let app = UUID()
            let devices = ["c", "a", "b"].map { Fixture.device(app: app, token: $0, user: "u") }
            try await store.commit(mutations: devices.map(Mutation.upsertDevice), offsets: [])

            let listed = try await store.devices(app: app, user: "u")

            #expect(listed.map(\.deviceToken) == ["a", "b", "c"])
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testApiTokenIsFoundByHashInWhicheverAppRevokedToo(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let active = Fixture.token(app: UUID())
            let revoked = Fixture.token(app: UUID(), revoked: true)
            let sameApp = Fixture.token(app: active.appId, at: 1)
            try await store.commit(mutations: [active, revoked, sameApp].map(Mutation.upsertApiToken), offsets: [])

            let foundActive = try await store.apiToken(hash: active.tokenHash)
            let foundRevoked = try await store.apiToken(hash: revoked.tokenHash)
            let foundSameApp = try await store.apiToken(hash: sameApp.tokenHash)
            let unknown = try await store.apiToken(hash: ApiTokens.hash(ApiTokens.generate()))

            #expect(foundActive == active)
            #expect(foundRevoked == revoked)
            #expect(foundSameApp == sameApp)
            #expect(unknown == nil)
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testPendingNotificationsAreListedOldestFirstThenByNotificationId(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let app = UUID()
            let device = DeviceKey(appId: app, deviceToken: "t1")
            let rows = [
                Fixture.pending(app: app, token: "t1", nid: "b", sent: 5),
                Fixture.pending(app: app, token: "t1", nid: "z", sent: 1),
                Fixture.pending(app: app, token: "t1", nid: "a", sent: 5),
                Fixture.pending(app: app, token: "t1", nid: "m", sent: 3, business: "b-1"),
            ]
            try await store.commit(mutations: (rows + [
                Fixture.pending(app: app, token: "t2", nid: "c", sent: 0),
                Fixture.pending(app: UUID(), token: "t1", nid: "d", sent: 0),
            ]).map(Mutation.putPending), offsets: [])

            let listed = try await store.pendingNotifications(device)

            #expect(listed.map(\.notificationId) == ["z", "m", "a", "b"])
            #expect(listed[1] == rows[3])
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testADeliveryIsOnlyFoundInItsOwnApp(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let mine = Fixture.delivery(app: UUID(), kind: .alert, managed: true, tracking: true, sent: 7)
            let theirsSameId = Fixture.delivery(app: UUID(), id: mine.deliveryId, kind: .im, managed: false, sent: 1)
            let theirsOnly = Fixture.delivery(app: theirsSameId.appId)
            try await store.commit(mutations: [mine, theirsSameId, theirsOnly].map(Mutation.putDelivery), offsets: [])

            let found = try await store.deliveryStats(app: mine.appId, deliveryId: mine.deliveryId)?.delivery
            let theirs = try await store.deliveryStats(app: theirsSameId.appId, deliveryId: mine.deliveryId)?.delivery
            let notMine = try await store.deliveryStats(app: mine.appId, deliveryId: theirsOnly.deliveryId)

            #expect(found == mine)
            #expect(theirs == theirsSameId)
            #expect(notMine == nil)
        }
    }

    /// The read every keyed send makes (`delivery`, on a connection of its own in SQLite): the
    /// app's row, written by another connection just before, and nothing of another app's.
    @Test(arguments: StoreBackend.allCases)
    func testADeliveryReadAloneSeesTheLastCommitOfItsAppOnly(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let mine = Fixture.delivery(app: UUID(), sent: 7)
            let theirsSameId = Fixture.delivery(app: UUID(), id: mine.deliveryId, kind: .im, managed: false, sent: 1)
            let theirsOnly = Fixture.delivery(app: theirsSameId.appId)
            #expect(try await store.delivery(app: mine.appId, deliveryId: mine.deliveryId) == nil)
            try await store.commit(mutations: [mine, theirsSameId, theirsOnly].map(Mutation.putDelivery), offsets: [])
            var counted = mine
            counted.duplicates = 2
            try await store.commit(mutations: [.putDelivery(counted)], offsets: [])

            // Reads from many tasks at once.
            let found = try await withThrowingTaskGroup(of: DeliveryRow?.self) { group in
                for _ in 0..<16 { group.addTask { try await store.delivery(app: mine.appId, deliveryId: mine.deliveryId) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(found == Array(repeating: counted, count: 16))
            #expect(try await store.delivery(app: theirsSameId.appId, deliveryId: mine.deliveryId) == theirsSameId)
            #expect(try await store.delivery(app: mine.appId, deliveryId: theirsOnly.deliveryId) == nil)
        }
    }
}
