import Contracts
import Foundation
import Kafka
@testable import Sender
import XCTest

/// The sender service's bookkeeping, with made-up offsets and credentials.
final class SenderServiceTests: XCTestCase {
    private let p0 = TopicPartition(topic: "pushline.outbound", partition: 0)
    private let p1 = TopicPartition(topic: "pushline.outbound", partition: 1)

    // MARK: - Offsets

    func testAPartitionIsCommittedUpToItsLowestUnfinishedRecordWhateverOrderRecordsFinishIn() throws {
        var random = SystemRandomNumberGenerator()
        for _ in 0..<50 {
            var ledger = PartitionLedger()
            let generation = ledger.assign(p0, from: 100)
            let offsets = Array(Int64(100)..<Int64(140))
            for offset in offsets { XCTAssertEqual(ledger.begin(p0, offset: offset), generation) }
            var finished: Set<Int64> = []
            for offset in offsets.shuffled(using: &random) {
                ledger.finish(p0, offset: offset, generation: generation)
                finished.insert(offset)
                let lowestUnfinished = offsets.first { !finished.contains($0) } ?? 140
                XCTAssertEqual(ledger.committable()[p0] ?? 100, lowestUnfinished, "after finishing \(finished.sorted())")
            }
            XCTAssertEqual(ledger.unfinished, 0)
            XCTAssertEqual(ledger.finished, offsets.count)
        }
    }

    func testCommittedOffsetsAreNotCommittedAgainAndRevocationHandsBackWhatMoved() {
        var ledger = PartitionLedger()
        let g0 = ledger.assign(p0, from: nil)
        let g1 = ledger.assign(p1, from: 7)
        XCTAssertEqual(ledger.committable(), [:], "nothing read, nothing to commit")
        _ = ledger.begin(p0, offset: 0)
        _ = ledger.begin(p0, offset: 1)
        _ = ledger.begin(p1, offset: 7)
        XCTAssertEqual(ledger.committable(), [p0: 0], "p1 stays where the group had it")
        ledger.finish(p0, offset: 0, generation: g0)
        ledger.finish(p1, offset: 7, generation: g1)
        XCTAssertEqual(ledger.committable(), [p0: 1, p1: 8])
        ledger.committed([p0: 1, p1: 8])
        XCTAssertEqual(ledger.committable(), [:])
        ledger.finish(p0, offset: 1, generation: g0)
        XCTAssertEqual(ledger.revoke(p0), 2)
        XCTAssertEqual(ledger.revoke(p1), nil, "unchanged since committed")
        XCTAssertEqual(ledger.committable(), [:])
    }

    func testRecordsOfAnEarlierAssignmentOrAlreadyReadAreNotBegunAndTheirWorkNoLongerCounts() {
        var ledger = PartitionLedger()
        let first = ledger.assign(p0, from: 10)
        XCTAssertNil(ledger.begin(p0, offset: 9), "before the committed offset")
        XCTAssertNil(ledger.begin(p1, offset: 0), "a partition not owned")
        XCTAssertEqual(ledger.begin(p0, offset: 10), first)
        XCTAssertNil(ledger.begin(p0, offset: 10), "fetched again")
        _ = ledger.revoke(p0)
        XCTAssertFalse(ledger.owns(p0, generation: first))
        let second = ledger.assign(p0, from: 10)
        XCTAssertNotEqual(first, second)
        XCTAssertEqual(ledger.begin(p0, offset: 10), second)
        ledger.finish(p0, offset: 10, generation: first)
        XCTAssertEqual(ledger.committable(), [:], "finished under the earlier assignment: does not count")
        ledger.finish(p0, offset: 10, generation: second)
        XCTAssertEqual(ledger.committable(), [p0: 11])
    }

    func testALongRunOfFinishedRecordsIsCompacted() {
        var ledger = PartitionLedger()
        let generation = ledger.assign(p0, from: 0)
        for offset in Int64(0)..<10_000 {
            _ = ledger.begin(p0, offset: offset)
            if offset >= 1 { ledger.finish(p0, offset: offset - 1, generation: generation) }
        }
        XCTAssertEqual(ledger.unfinished, 1)
        XCTAssertEqual(ledger.committable(), [p0: 9_999])
    }

    // MARK: - Slots

    func testSlotsAreNeverHandedOutBeyondTheirCountAndEveryWaiterIsServed() async {
        let slots = Slots(2)
        let first = await slots.acquire(), second = await slots.acquire()
        XCTAssertTrue(first && second)
        let order = OrderLog()
        let waiters = (0..<3).map { n in
            Task {
                let acquired = await slots.acquire()
                await order.append(acquired ? n : -1)
            }
        }
        try? await Task.sleep(for: .milliseconds(100))
        let early = await order.entries
        XCTAssertEqual(early, [], "no slot is free")
        slots.release()
        slots.release()
        slots.release()
        for waiter in waiters { await waiter.value }
        let served = await order.entries
        XCTAssertEqual(served.sorted(), [0, 1, 2])
    }

    func testACancelledWaiterStopsWaitingWithoutASlot() async {
        let slots = Slots(1)
        _ = await slots.acquire()
        let cancelled = Task { await slots.acquire() }
        let next = Task { await slots.acquire() }
        try? await Task.sleep(for: .milliseconds(50))
        cancelled.cancel()
        let gotOne = await cancelled.value
        XCTAssertFalse(gotOne, "cancelled while waiting")
        slots.release()
        let nextGot = await next.value
        XCTAssertTrue(nextGot, "the released slot goes to the waiter still waiting")
        let alreadyCancelled = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await slots.acquire()
        }
        let late = await alreadyCancelled.value
        XCTAssertFalse(late, "none is free, and the task was cancelled before it waited")
    }

    // MARK: - Credentials

    func testCredentialsAreReadOncePerCacheAgeAndAPauseLastsWhileTheyStayTheSame() async throws {
        let app = UUID()
        let reads = Counter()
        let stored = PushCredentials(apns: Self.apns(box: "seal-1"))
        let book = CredentialsBook(maxAge: .seconds(3600)) { _ in
            await reads.increment()
            return stored
        }
        let first = try await book.credentials(of: app)
        _ = try await book.credentials(of: app)
        let count = await reads.value
        XCTAssertEqual(count, 1, "read from the store once while fresh")
        XCTAssertEqual(first?.version(of: .apns), "seal-1")
        XCTAssertNil(first?.version(of: .fcm))

        XCTAssertTrue(book.pause(app, .apns, version: "seal-1", reason: "InvalidProviderToken"))
        XCTAssertFalse(book.pause(app, .apns, version: "seal-1", reason: "InvalidProviderToken"), "already paused")
        XCTAssertEqual(book.pausedCount, 1)
        XCTAssertEqual(book.pauseReason(app, .apns, version: "seal-1").reason, "InvalidProviderToken")
        XCTAssertNil(book.pauseReason(app, .fcm, version: nil).reason, "the other provider goes on")
        XCTAssertNil(book.pauseReason(UUID(), .apns, version: "seal-1").reason, "other apps go on")
        let replaced = book.pauseReason(app, .apns, version: "seal-2")
        XCTAssertNil(replaced.reason)
        XCTAssertTrue(replaced.ended, "new credentials end the pause")
        XCTAssertEqual(book.pausedCount, 0)
    }

    func testPushesAskingTogetherShareOneReadAndAFailedReadIsNotKept() async throws {
        let reads = Counter()
        let failNext = Counter()
        let book = CredentialsBook(maxAge: .seconds(3600)) { _ in
            await reads.increment()
            if await failNext.value == 1 {
                await failNext.increment()
                throw CancellationError()
            }
            // Long enough for every caller to arrive while it is read.
            try await Task.sleep(for: .milliseconds(200))
            return PushCredentials(apns: Self.apns(box: "seal-1"))
        }
        let app = UUID()
        let versions = try await withThrowingTaskGroup(of: String?.self) { group in
            for _ in 0..<50 { group.addTask { try await book.credentials(of: app)?.version(of: .apns) } }
            return try await group.reduce(into: [String?]()) { $0.append($1) }
        }
        XCTAssertEqual(versions, Array(repeating: "seal-1", count: 50))
        let shared = await reads.value
        XCTAssertEqual(shared, 1, "one store read for the 50 pushes")

        let other = UUID()
        await failNext.increment()
        do {
            _ = try await book.credentials(of: other)
            XCTFail("the store's error reaches the push")
        } catch is CancellationError {}
        let after = try await book.credentials(of: other)
        XCTAssertEqual(after?.version(of: .apns), "seal-1", "read again, not the failure kept")
        let total = await reads.value
        XCTAssertEqual(total, 3)
    }

    func testCredentialsOlderThanTheCacheAgeAreReadAgain() async throws {
        let reads = Counter()
        let book = CredentialsBook(maxAge: .zero) { _ in
            await reads.increment()
            return nil
        }
        let app = UUID()
        let none = try await book.credentials(of: app)
        _ = try await book.credentials(of: app)
        XCTAssertNil(none)
        let count = await reads.value
        XCTAssertEqual(count, 2)
    }

    // MARK: - Configuration

    func testTheConfigurationNeedsTheSecretsKeyAndChecksProviderURLs() throws {
        let key = ["PUSHLINE_SECRETS_KEY": Data(repeating: 7, count: 32).base64EncodedString()]
        XCTAssertThrowsError(try SenderConfiguration.fromEnvironment([:])) { error in
            XCTAssertTrue("\(error)".contains("PUSHLINE_SECRETS_KEY is required"), "\(error)")
        }
        let defaults = try SenderConfiguration.fromEnvironment(key)
        XCTAssertEqual(defaults.port, 8082)
        XCTAssertEqual(defaults.groupId, "pushline-sender")
        XCTAssertEqual(defaults.endpoints.apns(.production), ProviderEndpoints.apnsProduction)
        XCTAssertEqual(defaults.endpoints.apns(.sandbox), ProviderEndpoints.apnsSandbox)
        XCTAssertEqual(defaults.endpoints.fcm, ProviderEndpoints.fcmDefault)
        XCTAssertEqual(defaults.lingerMs, 100)
        XCTAssertEqual(try SenderConfiguration.fromEnvironment(key.merging(["PUSHLINE_SENDER_LINGER_MS": "0"]) { $1 }).lingerMs, 0)
        XCTAssertThrowsError(try SenderConfiguration.fromEnvironment(key.merging(["PUSHLINE_SENDER_LINGER_MS": "10001"]) { $1 })) { error in
            XCTAssertTrue("\(error)".contains("PUSHLINE_SENDER_LINGER_MS"), "\(error)")
        }
        let local = try SenderConfiguration.fromEnvironment(key.merging(["PUSHLINE_APNS_URL": "https://127.0.0.1:9443/",
                                                                          "PUSHLINE_FCM_URL": "https://127.0.0.1:9444"]) { $1 })
        XCTAssertEqual(local.endpoints.apns(.sandbox), "https://127.0.0.1:9443")
        XCTAssertEqual(local.endpoints.fcm, "https://127.0.0.1:9444")
        for bad in ["http://127.0.0.1:9443", "https://127.0.0.1/3/device", "not a url"] {
            XCTAssertThrowsError(try SenderConfiguration.fromEnvironment(key.merging(["PUSHLINE_APNS_URL": bad]) { $1 })) { error in
                XCTAssertTrue("\(error)".contains("PUSHLINE_APNS_URL"), "\(error)")
            }
        }
        XCTAssertThrowsError(try SenderConfiguration.fromEnvironment(key.merging(["PUSHLINE_SENDER_CA_FILE": "/nonexistent/ca.pem"]) { $1 }))
        XCTAssertThrowsError(try SenderConfiguration.fromEnvironment(key.merging(["PUSHLINE_SENDER_RETRY_BASE_MS": "5000",
                                                                                  "PUSHLINE_SENDER_RETRY_CAP_MS": "1000"]) { $1 }))
    }

    private static func apns(box: String) -> APNsCredentials {
        APNsCredentials(teamId: "ABCDE12345", keyId: "KEY1234567", bundleId: "com.example.app", environment: .production,
                        fingerprint: "SHA256:x", privateKey: SealedSecret(keyId: "k", box: box))
    }
}

private actor OrderLog {
    var entries: [Int] = []
    func append(_ n: Int) { entries.append(n) }
}

private actor Counter {
    var value = 0
    func increment() { value += 1 }
}
