import AsyncHTTPClient
import Foundation
import Logging
import Projections
import Synchronization
import TestSupport
import XCTest
@testable import Processor
@testable import Handlers
@testable import ProcessorServer

/// Receivers cannot hold the dispatcher: a whole-attempt deadline, a per-app cap on attempts in
/// flight, headers an app may not set, and attempts recorded only by the lease holder — against
/// a real receiver on 127.0.0.1 and a real SQLite store.
final class WebhookDispatcherLimitsTests: DispatcherTestCase {
    private func job(_ path: String, app: UUID? = nil, headers: [String: String] = [:], at: Date = Date()) -> OutboxJob {
        OutboxJob(id: "job-\(UUID())", kind: "registration-status", appId: app, url: "\(receiver.baseURL)\(path)", headers: headers,
                  body: Data(#"{"Status":"Success"}"#.utf8), maxAttempts: 1, nextAttemptAt: at, createdAt: at)
    }

    private func dispatcher(timeout: Duration = .seconds(5), perApp: Int = 4, concurrency: Int = 32) -> WebhookDispatcher {
        var configuration = WebhookDispatcher.Configuration()
        configuration.targetPolicy = WebhookTargetPolicy(allowPrivateTargets: true)
        configuration.requestTimeout = timeout
        configuration.perAppConcurrency = perApp
        configuration.concurrency = concurrency
        configuration.idlePoll = .milliseconds(100)
        return WebhookDispatcher(configuration: configuration, store: store, http: http, producer: nil, logger: Logger(label: "test"))
    }

    func testAReceiverThatTricklesItsAnswerIsCutOffAtTheWholeAttemptDeadline() async throws {
        let trickle = job("/drip")
        try await store.commit(mutations: [.enqueueOutbox(trickle)], offsets: [])
        await dispatcher(timeout: .seconds(1)).attempt(trickle)
        let recorded = try await store.outboxJob(trickle.id)
        XCTAssertEqual(recorded?.attempts, 1)
        XCTAssertEqual(recorded?.state, .failed, "headers came at once, the body never ended within the deadline")
        XCTAssertTrue(recorded?.lastError?.contains("took longer than") ?? false, recorded?.lastError ?? "")
    }

    func testHeadersThatFrameOrRouteTheRequestAreNotSent() async throws {
        let sent = job("/hook", headers: ["Host": "evil.example", "Proxy-Authorization": "Basic x", "Transfer-Encoding": "chunked",
                                          "Connection": "close", "X-Key": "abc"])
        try await store.commit(mutations: [.enqueueOutbox(sent)], offsets: [])
        await dispatcher().attempt(sent)
        try await receiver.waitFor(count: 1)
        let headers = Dictionary(uniqueKeysWithValues: receiver.requests[0].headers.map { ($0.key.lowercased(), $0.value) })
        XCTAssertEqual(headers["x-key"], "abc")
        XCTAssertEqual(headers["host"], "127.0.0.1:\(receiver.port)")
        XCTAssertNil(headers["proxy-authorization"])
        XCTAssertNil(headers["transfer-encoding"])
        let recorded = try await store.outboxJob(sent.id)
        XCTAssertEqual(recorded?.state, .delivered)
    }

    func testAnAttemptWhoseLeaseRanOutIsNotRecorded() async throws {
        let start = Date()
        let late = job("/hook", at: start)
        try await store.commit(mutations: [.enqueueOutbox(late)], offsets: [])
        let firstLease = start.addingTimeInterval(1)
        let first = try await store.claimOutboxJobs(now: start, limit: 1, leaseUntil: firstLease)
        XCTAssertEqual(first.map(\.id), [late.id])
        // The first dispatcher is slow; its lease runs out and another one claims the job.
        let secondLease = start.addingTimeInterval(60)
        let second = try await store.claimOutboxJobs(now: start.addingTimeInterval(2), limit: 1, leaseUntil: secondLease)
        XCTAssertEqual(second.map(\.id), [late.id])

        await dispatcher().attempt(first[0], lease: firstLease)
        let afterLate = try await store.outboxJob(late.id)
        XCTAssertEqual(afterLate?.attempts, 0, "the late attempt of the first dispatcher is not recorded")
        XCTAssertEqual(afterLate?.state, .pending)

        await dispatcher().attempt(second[0], lease: secondLease)
        let afterHolder = try await store.outboxJob(late.id)
        XCTAssertEqual(afterHolder?.attempts, 1)
        XCTAssertEqual(afterHolder?.state, .delivered)
    }

    func testOneAppsHangingReceiverDoesNotHoldAnotherAppsWebhooks() async throws {
        let slowApp = UUID(), otherApp = UUID()
        let start = Date().addingTimeInterval(-10)
        // The hanging app's jobs are older: claimed first, oldest first.
        let hanging = (0..<8).map { job("/hang/\($0)", app: slowApp, at: start.addingTimeInterval(Double($0))) }
        let prompt = (0..<3).map { job("/ok/\($0)", app: otherApp, at: start.addingTimeInterval(9 + Double($0) / 10)) }
        try await store.commit(mutations: (hanging + prompt).map(Mutation.enqueueOutbox), offsets: [])
        let dispatcher = dispatcher(timeout: .seconds(8), perApp: 2, concurrency: 4)
        let running = Task { try await dispatcher.run() }
        defer { running.cancel() }

        try await receiver.waitFor(count: 5, timeout: .seconds(6))
        let paths = receiver.requests.map(\.path)
        XCTAssertEqual(paths.filter { $0.hasPrefix("/ok/") }.count, 3, "the other app's webhooks went out: \(paths)")
        XCTAssertEqual(paths.filter { $0.hasPrefix("/hang/") }.count, 2, "the hanging app holds at most its 2 slots: \(paths)")
        for slow in hanging {
            let recorded = try await store.outboxJob(slow.id)
            XCTAssertEqual(recorded?.attempts, 0, "the hanging app's attempts are still in flight")
        }
        running.cancel()
        _ = try? await running.value
    }
}
