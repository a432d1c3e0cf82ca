import AsyncHTTPClient
import Contracts
import Foundation
import Logging
import Projections
import TestSupport
import XCTest
@testable import Processor
@testable import Handlers
@testable import ProcessorServer

/// The dispatcher against a real receiver on 127.0.0.1 and a real SQLite store: the target
/// policy decides whether a job reaches the receiver, and a refused job ends without retries.
final class WebhookDispatcherTargetTests: DispatcherTestCase {
    /// Enqueues a job to `url` allowing three attempts, claims it and runs one attempt.
    private func attemptOnce(url: String, allowPrivateTargets: Bool, appId: UUID? = nil, secrets: SecretsKeyring? = nil,
                             headers: [String: String] = [:]) async throws -> OutboxJob {
        let now = Date()
        let job = OutboxJob(id: "job-\(UUID())", kind: "registration-status", appId: appId, url: url, headers: headers,
                            body: Data(#"{"Status":"Success"}"#.utf8), maxAttempts: 3, nextAttemptAt: now, createdAt: now)
        try await store.commit(mutations: [.enqueueOutbox(job)], offsets: [])
        let claimed = try await store.claimOutboxJobs(now: now.addingTimeInterval(1), limit: 10, leaseUntil: now.addingTimeInterval(30))
        XCTAssertEqual(claimed.map(\.id), [job.id])
        var configuration = WebhookDispatcher.Configuration()
        configuration.targetPolicy = WebhookTargetPolicy(allowPrivateTargets: allowPrivateTargets)
        configuration.secrets = secrets
        let dispatcher = WebhookDispatcher(configuration: configuration, store: store, http: http, producer: nil, logger: Logger(label: "test"))
        for claimedJob in claimed { await dispatcher.attempt(claimedJob) }
        let recorded = try await store.outboxJob(job.id)
        return try XCTUnwrap(recorded)
    }

    func testDenyingPolicyRefusesLoopbackJobWithoutRequestAndWithoutRetry() async throws {
        let job = try await attemptOnce(url: "\(receiver.baseURL)/hook", allowPrivateTargets: false)
        XCTAssertEqual(job.state, .failed)
        XCTAssertEqual(job.attempts, 1)
        XCTAssertNil(job.lastStatus)
        XCTAssertEqual(job.lastError, "target 127.0.0.1 is a loopback address; set PUSHLINE_WEBHOOK_ALLOW_PRIVATE_TARGETS=true to allow")
        let due = try await store.nextOutboxDue()
        XCTAssertNil(due, "a refused job is not scheduled again")
        XCTAssertEqual(receiver.requests.count, 0)
    }

    func testDenyingPolicyRefusesLocalhostByName() async throws {
        let job = try await attemptOnce(url: "http://localhost:\(receiver.port)/hook", allowPrivateTargets: false)
        XCTAssertEqual(job.state, .failed)
        XCTAssertTrue(job.lastError?.contains("loopback address") == true, job.lastError ?? "no error")
        XCTAssertTrue(job.lastError?.contains("(localhost)") == true, job.lastError ?? "no error")
        XCTAssertEqual(receiver.requests.count, 0)
    }

    func testAllowingPolicyDeliversToLoopbackReceiver() async throws {
        let job = try await attemptOnce(url: "\(receiver.baseURL)/hook", allowPrivateTargets: true)
        XCTAssertEqual(job.state, .delivered)
        XCTAssertEqual(job.lastStatus, 200)
        XCTAssertNil(job.lastError)
        XCTAssertEqual(receiver.requests.map(\.path), ["/hook"])
    }

    func testEveryAttemptIsSignedOverItsBodyWithTheAppsSecretsAndAForgedSignatureIsReplaced() async throws {
        func randomKey() -> String { Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString() }
        let current = randomKey(), previous = randomKey()
        let keyring = try SecretsKeyring(current: current, previous: previous)
        let app = UUID()
        _ = try await attemptOnce(url: "\(receiver.baseURL)/hook", allowPrivateTargets: true, appId: app, secrets: keyring,
                                  headers: [WebhookSigning.header: "t=1,v1=forged"])
        let request = try XCTUnwrap(receiver.requests.first)
        let header = try XCTUnwrap(request.headers[WebhookSigning.header])
        XCTAssertFalse(header.contains("forged"), header)
        // One v1 per key of the keyring: receivers holding the old secret keep verifying during a rotation.
        XCTAssertEqual(header.components(separatedBy: "v1=").count - 1, 2, header)
        for key in [current, previous] {
            let secret = try XCTUnwrap(WebhookSigning.secret(app: app, keyring: try SecretsKeyring(current: key)))
            XCTAssertTrue(WebhookSigning.verify(headerValue: header, body: request.body, secret: secret, now: Date()), header)
        }
        var tampered = request.body
        tampered.append(contentsOf: Array(" ".utf8))
        let secret = try XCTUnwrap(WebhookSigning.secret(app: app, keyring: keyring))
        XCTAssertFalse(WebhookSigning.verify(headerValue: header, body: tampered, secret: secret, now: Date()))
        XCTAssertFalse(WebhookSigning.verify(headerValue: header, body: request.body, secret: secret, now: Date().addingTimeInterval(600)),
                       "outside the replay window")
        let otherApp = try XCTUnwrap(WebhookSigning.secret(app: UUID(), keyring: keyring))
        XCTAssertFalse(WebhookSigning.verify(headerValue: header, body: request.body, secret: otherApp, now: Date()))
    }

    func testWithoutASecretsKeyJobsGoUnsigned() async throws {
        _ = try await attemptOnce(url: "\(receiver.baseURL)/hook", allowPrivateTargets: true, appId: UUID())
        let request = try XCTUnwrap(receiver.requests.first)
        XCTAssertNil(request.headers[WebhookSigning.header])
    }

    func testSealedHeaderValuesAreOpenedForTheReceiverAndAJobWhoseSealDoesNotOpenFailsWithoutRetry() async throws {
        let keyring = try SecretsKeyring(current: Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString())
        let app = UUID()
        let sealed = SealedHeaders.seal(["X-App-Key": "s3cret", "X-Plain": "ignored"], app: app, keyring: keyring)
        XCTAssertFalse(sealed.values.contains { $0.contains("s3cret") })
        let delivered = try await attemptOnce(url: "\(receiver.baseURL)/hook", allowPrivateTargets: true, appId: app, secrets: keyring,
                                              headers: sealed.merging(["X-Clear": "as-is"]) { $1 })
        XCTAssertEqual(delivered.state, .delivered)
        let request = try XCTUnwrap(receiver.requests.first)
        XCTAssertEqual(request.headers["x-app-key"], "s3cret")
        XCTAssertEqual(request.headers["x-clear"], "as-is", "a value written unsealed is sent as it is")

        // Another app's seal (moved onto this job), or no keys at all: nothing is sent, for good.
        let moved = try await attemptOnce(url: "\(receiver.baseURL)/moved", allowPrivateTargets: true, appId: UUID(), secrets: keyring,
                                          headers: sealed)
        XCTAssertEqual(moved.state, .failed)
        XCTAssertEqual(moved.attempts, 1)
        let keyless = try await attemptOnce(url: "\(receiver.baseURL)/keyless", allowPrivateTargets: true, appId: app, headers: sealed)
        XCTAssertEqual(keyless.state, .failed)
        XCTAssertTrue(keyless.lastError?.contains("cannot be opened") == true, keyless.lastError ?? "")
        XCTAssertEqual(receiver.requests.map(\.path), ["/hook"])
    }
}
