import Contracts
import Foundation
import ProjectionChangelog
@testable import Projections
import Testing

/// An app in parts calls back once per user (docs/ARCHITECTURE.md#one-app-in-parts): each part
/// stores its share of a send's callbacks, and the commit that stores the last share merges them,
/// in a real store, whichever order and however concurrently the parts commit.
@Suite(.serialized) struct CallbackShareTests {
    static let app = UUID()
    static let url = "https://callbacks.example/hook"

    static func share(_ delivery: UUID, part: Int, parts: Int = 3, users: [String: [String]], kind: NotificationKind = .ticket) -> CallbackShare {
        CallbackShare(deliveryId: delivery, part: part, parts: parts, kind: kind, ticketId: kind == .ticket ? "T-1" : nil,
                      message: kind == .im ? "hi" : nil,
                      users: users.keys.sorted().map { user in
                          CallbackShare.User(userId: user, devices: users[user]!.map { CallbackShare.Device(token: $0, platform: .ios) })
                      })
    }

    static func job(_ share: CallbackShare, url: String = url, state: OutboxState = .pending) -> OutboxJob {
        var job = share.job(appId: app, url: url, headers: ["X-Key": "k\(share.part)"], maxAttempts: 2 + share.part, at: Fixture.at(5))
        job.state = state
        return job
    }

    static func jobs(_ store: any ProjectionStore) async throws -> [OutboxJob] {
        try await store.outboxJobs(after: nil, limit: 10_000)
    }

    @Test(arguments: StoreBackend.allCases)
    func testTheCommitOfTheLastShareMergesThemIntoOneCallbackPerUser(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let d = UUID()
            // User "7" has a device in parts 0 and 2, "amy" one in part 1; part 1 knows "7" has none there.
            let shares = [
                Self.share(d, part: 0, users: ["7": ["bb"]]),
                Self.share(d, part: 1, users: ["amy": ["cc"], "7": []]),
                Self.share(d, part: 2, users: ["7": ["aa"]]),
            ]
            try await store.commit(mutations: [.enqueueOutbox(Self.job(shares[2]))], offsets: [])
            try await store.commit(mutations: [.enqueueOutbox(Self.job(shares[0]))], offsets: [])
            #expect(try await Self.jobs(store).allSatisfy { $0.kind == CallbackShare.jobKind && $0.state == .pending })
            #expect(try await store.claimOutboxJobs(now: Fixture.at(60), limit: 10, leaseUntil: Fixture.at(90)).isEmpty,
                    "a share is never sent")
            try await store.commit(mutations: [.enqueueOutbox(Self.job(shares[1]))], offsets: [])

            let all = try await Self.jobs(store)
            let callbacks = all.filter { $0.kind == CallbackShare.callbackKind }
            // As one part holding every device would have called back: part 0's URL, headers and retries.
            let one = CallbackShare.callbacks([Self.share(d, part: 0, parts: 1, users: ["7": ["aa", "bb"], "amy": ["cc"]])], appId: Self.app,
                                              url: Self.url, headers: ["X-Key": "k0"], maxAttempts: 2, at: Fixture.at(5))
            #expect(callbacks == one)
            #expect(callbacks.map(\.id) == [CallbackShare.callbackId(d, userId: "7"), CallbackShare.callbackId(d, userId: "amy")])
            #expect(String(decoding: callbacks[0].body, as: UTF8.self) == String(decoding: AppCallback.body(
                userId: "7", devices: [("aa", .ios), ("bb", .ios)], kind: .ticket, ticketId: "T-1", message: nil), as: UTF8.self))
            #expect(callbacks[0].headers == ["X-Key": "k0", "Content-Type": "application/json", "Accept": "application/json"])
            let merged = all.filter { $0.kind == CallbackShare.jobKind }
            #expect(merged.count == 3 && merged.allSatisfy { $0.state == .delivered })
            let claimed = try await store.claimOutboxJobs(now: Fixture.at(60), limit: 10, leaseUntil: Fixture.at(90))
            #expect(Set(claimed.map(\.id)) == Set(callbacks.map(\.id)))

            // A share stored again (a command applied again) merges nothing twice.
            try await store.commit(mutations: [.enqueueOutbox(Self.job(shares[1]))], offsets: [])
            #expect(try await Self.jobs(store).filter { $0.kind == CallbackShare.callbackKind }.count == 2)

            // The merge is in the changelog entry of the commit that made it: a restore gives the same store.
            let entries = try await store.unpublishedChangelog(after: 0, limit: 100).map { try ChangelogEntry(decoding: $0.payload) }
            let restored = try await h.openStore("restored.sqlite")
            try await restored.beginRestore()
            try await restored.restore(entries, offsets: [], lineage: "l", through: Int64(entries.count))
            try await restored.finishRestore()
            #expect(try await restored.dump() == store.dump())
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testPartsCommittingTheirSharesAtOnceMergeEveryDeliveryOnce(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let deliveries = (0..<90).map { _ in UUID() }
            let parts = 3
            _ = try await h.openStore()
            // One store object per part, as processors have; each commits its shares in an order of its own.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for part in 0..<parts {
                    let store = try await h.openStore()
                    group.addTask {
                        for d in deliveries.shuffled() {
                            let share = Self.share(d, part: part, parts: parts, users: ["u": ["t\(part)"]])
                            try await store.commit(mutations: [.enqueueOutbox(Self.job(share))], offsets: [])
                        }
                    }
                }
                try await group.waitForAll()
            }
            let all = try await Self.jobs(try await h.openStore())
            #expect(all.filter { $0.kind == CallbackShare.jobKind }.allSatisfy { $0.state == .delivered })
            let callbacks = all.filter { $0.kind == CallbackShare.callbackKind }
            #expect(Set(callbacks.map(\.id)) == Set(deliveries.map { CallbackShare.callbackId($0, userId: "u") }))
            #expect(callbacks.allSatisfy { $0.body == AppCallback.body(userId: "u", devices: [("t0", .ios), ("t1", .ios), ("t2", .ios)],
                                                                        kind: .ticket, ticketId: "T-1", message: nil) })
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func testARebuildsSharesMergeIntoCallbacksNoDispatcherSendsAndPartZeroWithoutAURLCallsNoOne(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let replayed = UUID(), completedLive = UUID(), noURL = UUID()
            for part in 0..<2 {
                let users = ["u": ["t\(part)"]]
                try await store.commit(mutations: [
                    .enqueueOutbox(Self.job(Self.share(replayed, part: part, parts: 2, users: users), state: .replayed)),
                    // A rebuild stored part 0's share; a live processor part 1's, after the switch.
                    .enqueueOutbox(Self.job(Self.share(completedLive, part: part, parts: 2, users: users), state: part == 0 ? .replayed : .pending)),
                    .enqueueOutbox(Self.job(Self.share(noURL, part: part, parts: 2, users: users), url: part == 0 ? "" : Self.url)),
                ], offsets: [])
            }
            let all = try await Self.jobs(store)
            let state = Dictionary(uniqueKeysWithValues: all.map { ($0.id, $0.state) })
            #expect(state[CallbackShare.callbackId(replayed, userId: "u")] == .replayed)
            #expect(state[CallbackShare.callbackId(completedLive, userId: "u")] == .pending)
            #expect(state[CallbackShare.callbackId(noURL, userId: "u")] == nil)
            #expect(all.filter { $0.kind == CallbackShare.jobKind }.count == 6)
            #expect(all.filter { $0.kind == CallbackShare.jobKind }.allSatisfy { $0.state == .delivered })
            #expect(try await store.claimOutboxJobs(now: Fixture.at(60), limit: 10, leaseUntil: Fixture.at(90)).map(\.id)
                    == [CallbackShare.callbackId(completedLive, userId: "u")])
        }
    }

    @Test func testAShareJobReadsBackAsTheShareAndAJobOfAnotherKindIsRefused() throws {
        let share = Self.share(UUID(), part: 1, users: ["7": ["a\"b", "é😀"], "x": []], kind: .im)
        #expect(try CallbackShare(job: Self.job(share)) == share)
        #expect(throws: ProjectionStoreError.self) { try CallbackShare(job: Fixture.job("registration-status:x")) }
        // A group with a share missing, or one of another count, merges nothing.
        let d = UUID()
        #expect(try CallbackShare.merge([Self.job(Self.share(d, part: 0, parts: 2, users: [:]))]).isEmpty)
        #expect(try CallbackShare.merge([Self.job(Self.share(d, part: 0, parts: 2, users: [:])),
                                         Self.job(Self.share(d, part: 1, parts: 3, users: [:]))]).isEmpty)
    }
}
