import Contracts
import Foundation
@testable import Projections
@testable import SQLiteProjections
@testable import PostgresProjections
@testable import ProjectionChangelog
import Testing

@Suite(.serialized) struct LargeCommitTests {
    /// The shape of a big processor batch: mostly device upserts, with statuses, webhook jobs
    /// and cleanups. The rate is printed for information only; machines differ too much to assert it.
    @Test(arguments: StoreBackend.allCases)
    func testACommitOfTwentyThousandMutationsSucceeds(_ backend: StoreBackend) async throws {
        try await withStoreHarness(backend) { h in
            let store = try await h.openStore()
            let app = Fixture.app()
            var mutations: [Mutation] = [.upsertApp(app)]
            for n in 0..<10_000 {
                mutations.append(.upsertDevice(Fixture.device(app: app.appId, token: String(format: "%064x", n), user: "user-\(n % 2_500)")))
            }
            for n in 0..<5_000 {
                mutations.append(.putRegistrationStatus(Fixture.status(app: app.appId)))
                if n % 2 == 0 {
                    mutations.append(.enqueueOutbox(Fixture.job("job-\(n)", app: app.appId)))
                }
            }
            for n in stride(from: 0, to: 10_000, by: 4) {
                mutations.append(.deleteDevice(DeviceKey(appId: app.appId, deviceToken: String(format: "%064x", n))))
            }
            #expect(mutations.count == 20_001)

            let start = ContinuousClock.now
            try await store.commit(mutations: mutations, offsets: [OffsetUpdate(partition: Fixture.partition(0), expected: nil, next: 2_000)])
            let elapsed = ContinuousClock.now - start

            let seconds = elapsed.inSeconds
            print("committed \(mutations.count) mutations in \(elapsed): \(Int(Double(mutations.count) / seconds)) mutations/s")
            let lines = try await store.dump().split(separator: "\n")
            #expect(lines.filter { $0.hasPrefix("devices ") }.count == 7_500)
            #expect(lines.filter { $0.hasPrefix("registration_status ") }.count == 5_000)
            #expect(lines.filter { $0.hasPrefix("outbox ") }.count == 2_500)
            let offsets = try await store.offsets(topics: [Fixture.partition(0).topic])
            #expect(offsets == [Fixture.partition(0): 2_000])
        }
    }
}
