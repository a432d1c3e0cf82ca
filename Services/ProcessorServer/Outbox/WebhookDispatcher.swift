import AsyncHTTPClient
import Contracts
import Foundation
import Kafka
import Logging
import Metrics
import NIOCore
import NIOHTTP1
import Processor
import Projections
import ServiceLifecycle
import Synchronization
import WireCodec

/// Sends the outbox's webhook and callback jobs and records every attempt.
///
/// Jobs are leased in the store before they are sent, so two dispatchers never send the same
/// job at once; the attempt is recorded right after the POST, so a restart never sends a
/// recorded job again (only a crash between a POST and its record repeats that POST, and the
/// `x-pushline-webhook-id` header lets receivers drop the repeat). Up to `concurrency` jobs are
/// in flight; a slow receiver holds one slot until its timeout and never blocks consumption.
final class WebhookDispatcher: Service, Sendable {
    struct Configuration: Sendable {
        var concurrency = 32
        /// The whole attempt: the target check (its DNS lookup), connecting, sending, the answer's
        /// headers and the part of its body that is read. A receiver that trickles its answer is
        /// cut off here and the attempt counts as failed.
        var requestTimeout: Duration = .seconds(5)
        var maxResponseBytes = 64 * 1024
        /// How long a claimed job stays reserved: twice the whole-attempt deadline and 10 s more,
        /// so that an attempt is always over (or cut off) before another dispatcher may take
        /// the job, and only the lease holder records it.
        var lease: Duration { requestTimeout * 2 + .seconds(10) }
        /// Attempts in flight for one app at most (`PUSHLINE_WEBHOOK_APP_CONCURRENCY`).
        var perAppConcurrency = 4
        /// Audit records waiting for the broker at most before claims pause.
        var auditBacklog: Int { concurrency * 8 }
        var idlePoll: Duration = .seconds(1)
        var retryBaseDelay: Duration = .seconds(1)
        var auditTopic: String?
        var targetPolicy = WebhookTargetPolicy()
        /// The deployment's keys (`PUSHLINE_SECRETS_KEY`): they sign every job of an app with the
        /// app's secrets (`WebhookSigning`) and open its sealed header values (`SealedHeaders`).
        /// Nil: jobs go without Pushline's signature, and a job with a sealed value fails.
        var secrets: SecretsKeyring?
    }

    private let configuration: Configuration
    private let store: any OutboxStore
    private let http: HTTPClient
    private let producer: KafkaProducer?
    private let logger: Logger
    /// Set by `wake()`, cleared by the idle waiter: new jobs may be due.
    private let woken = WakeSignal()
    private let stopping = Mutex(false)
    private let encoder = WireJSON.encoder()

    init(configuration: Configuration, store: any OutboxStore, http: HTTPClient, producer: KafkaProducer?, logger: Logger) {
        self.configuration = configuration
        self.store = store
        self.http = http
        self.producer = producer
        self.logger = logger
    }

    /// Tells the dispatcher that new jobs may be due (called after each applied batch).
    func wake() {
        woken.signal()
    }

    /// On graceful shutdown no new job is claimed, and the attempts in flight are finished and
    /// recorded (not cancelled): a SIGTERM restart repeats no webhook.
    func run() async throws {
        await withGracefulShutdownHandler {
            await self.loop()
        } onGracefulShutdown: {
            self.stopping.withLock { $0 = true }
            self.woken.signal()
        }
    }

    private var isStopping: Bool { stopping.withLock { $0 } }

    private enum Event: Sendable {
        /// An attempt of a job of this app (nil: a job of no app) is over and recorded in the
        /// store; its audit record is still to be written.
        case sent(UUID?, WebhookAttemptRecord)
        /// An audit record is written (or could not be).
        case audited
        case wake
    }

    private func loop() async {
        await withTaskGroup(of: Event.self) { group in
            var inFlight = 0
            /// Attempts in flight per app: an app at `perAppConcurrency` gets no more slots, so one
            /// app's slow receiver cannot take every slot from the others.
            var inFlightByApp: [UUID: Int] = [:]
            var waiting = false
            /// Audit records the broker has not answered yet: while it is slow, at most as many
            /// as `auditBacklog`, then no new job is claimed.
            var auditing = 0
            /// The app the last claim ended with: the next claim starts after it, so apps take turns.
            var lastApp: UUID?
            while !Task.isCancelled, !isStopping {
                let free = auditing < configuration.auditBacklog ? configuration.concurrency - inFlight : 0
                if free > 0 {
                    let now = Date()
                    let leaseUntil = now.addingTimeInterval(configuration.lease.inSeconds)
                    let slots = OutboxSlots(perApp: configuration.perAppConcurrency, inFlight: inFlightByApp, after: lastApp)
                    var claimed: [OutboxJob] = []
                    do {
                        claimed = try await store.claimOutboxJobs(now: now, limit: free, leaseUntil: leaseUntil, slots: slots)
                    } catch {
                        logger.error("cannot claim outbox jobs", metadata: ["error": "\(error)"])
                    }
                    for job in claimed {
                        if let app = job.appId {
                            inFlightByApp[app, default: 0] += 1
                            lastApp = app
                        }
                        inFlight += 1
                        group.addTask { .sent(job.appId, await self.attempt(job, lease: leaseUntil)) }
                    }
                }
                // A claim that took fewer jobs than it asked for looked at every app: nothing else is
                // due until an attempt ends, a wake or the idle poll.
                if !waiting {
                    // One idle waiter at a time: it returns on wake() or after idlePoll.
                    waiting = true
                    group.addTask { await self.idle(); return .wake }
                }
                guard let event = await group.next() else { break }
                switch event {
                case .sent(let app, let record):
                    inFlight -= 1
                    if let app {
                        inFlightByApp[app, default: 1] -= 1
                        if inFlightByApp[app] == 0 { inFlightByApp[app] = nil }
                    }
                    // The attempt is in the store: its slot is free while the broker takes the
                    // audit record (a slot held for the broker's answer too would bound one
                    // app's webhooks by the broker's round trip).
                    auditing += 1
                    group.addTask { await self.audit(record); return .audited }
                case .audited: auditing -= 1
                case .wake: waiting = false
                }
            }
            // Finish (and record, and audit) what is in flight; the idle waiter ends by itself.
            while let event = await group.next() {
                if case .sent(_, let record) = event { group.addTask { await self.audit(record); return .audited } }
            }
        }
    }

    /// Returns on `wake()`, on graceful shutdown, or after `idlePoll` (jobs whose retry time came).
    private func idle() async {
        guard !isStopping else { return }
        _ = await woken.wait(timeout: configuration.idlePoll)
    }

    /// What one POST came to.
    private struct Sent: Sendable {
        var status: Int?
        var failure: String?
        /// The target policy refused the URL: no retry can succeed.
        var refused = false
    }

    /// The attempt outlived `Configuration.requestTimeout`.
    struct AttemptTimedOut: Error, CustomStringConvertible {
        var timeout: Duration
        var description: String { "the attempt took longer than \(timeout) (connect, answer and its body); cut off" }
    }

    /// Checks the target and POSTs the job: the part of an attempt its deadline covers.
    private static func send(_ job: OutboxJob, configuration: Configuration, http: HTTPClient) async throws -> Sent {
        var url = job.url, host: String?
        switch try await configuration.targetPolicy.check(job.url) {
        case .refused(let reason):
            return Sent(status: nil, failure: reason, refused: true)
        case .pinned(let addresses):
            // Connect to the address that was checked, not to whatever the name resolves to next.
            if let pinned = WebhookTargetPolicy.pinnedRequest(job.url, to: addresses[0]) { (url, host) = (pinned.url, pinned.host) }
        case .allowed:
            break
        }
        let headers: [String: String]
        do {
            headers = try SealedHeaders.open(job.headers, app: job.appId, keyring: configuration.secrets)
        } catch {
            // No retry can open it: the keys are the process's.
            return Sent(status: nil, failure: "a header value of the job cannot be opened: \(error)", refused: true)
        }
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        // Headers that frame or route the request are the client's to decide (ingest refuses
        // them too; a job written around ingest may still carry them).
        // Nor may a job carry a signature of its own: only the dispatcher signs.
        for (name, value) in headers where !WebhookHeaders.isReserved(name) && name.lowercased() != WebhookSigning.header {
            request.headers.replaceOrAdd(name: name, value: value)
        }
        if let host { request.headers.replaceOrAdd(name: "Host", value: host) }
        request.headers.replaceOrAdd(name: WebhookHeaders.webhookId, value: job.id)
        if let keyring = configuration.secrets, let app = job.appId {
            // Signed as sent, at the attempt's time, so that each attempt falls within a receiver's replay window.
            let secrets = WebhookSigning.secrets(app: app, keyring: keyring)
            let timestamp = Int64(Date().timeIntervalSince1970)
            request.headers.replaceOrAdd(name: WebhookSigning.header,
                                         value: WebhookSigning.headerValue(secrets: secrets, timestamp: timestamp, body: job.body))
        }
        request.body = .bytes(ByteBuffer(bytes: job.body))
        let response = try await http.execute(request, timeout: .nanoseconds(configuration.requestTimeout.inNanoseconds))
        let status = Int(response.status.code)
        // Read a bounded amount of the answer (so the connection can be reused), within the deadline.
        _ = try await response.body.collect(upTo: configuration.maxResponseBytes)
        return Sent(status: status, failure: (200..<300).contains(status) ? nil : "HTTP \(status)")
    }

    /// Runs `body` and gives up on it at `timeout`: the caller goes on at once, and `body` is
    /// cancelled (a DNS lookup on its own thread may finish later; its answer is dropped).
    static func withDeadline<T: Sendable>(_ timeout: Duration, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
        let settled = Once()
        var timer: Task<Void, Never>?
        let result: Result<T, any Error> = await withCheckedContinuation { continuation in
            let work = Task {
                let outcome: Result<T, any Error>
                do { outcome = .success(try await body()) } catch { outcome = .failure(error) }
                if settled.claim() { continuation.resume(returning: outcome) }
            }
            timer = Task {
                try? await Task.sleep(for: timeout)
                if settled.claim() {
                    work.cancel()
                    continuation.resume(returning: .failure(AttemptTimedOut(timeout: timeout)))
                }
            }
        }
        // The attempt won: its timer need not sleep out the deadline.
        timer?.cancel()
        return try result.get()
    }

    /// True for the first caller only: whichever of an attempt and its deadline ends first.
    private final class Once: Sendable {
        private let done = Mutex(false)
        func claim() -> Bool { done.withLock { done in defer { done = true }; return !done } }
    }

    /// Sends `job` once and records the attempt, if this dispatcher still holds the job's lease
    /// (`lease`, the claim's lease end; nil records in any case). Returns the attempt's record
    /// for the `webhooks` topic, which the caller writes (`audit`). Internal so that tests can
    /// drive one attempt.
    @discardableResult
    func attempt(_ job: OutboxJob, lease: Date? = nil) async -> WebhookAttemptRecord {
        let attemptNumber = job.attempts + 1
        var status: Int?
        var failure: String?
        var refused = false
        do {
            let configuration = self.configuration, http = self.http
            let sent = try await Self.withDeadline(configuration.requestTimeout) {
                try await Self.send(job, configuration: configuration, http: http)
            }
            (status, failure, refused) = (sent.status, sent.failure, sent.refused)
        } catch {
            failure = String(describing: error)
        }
        let next: OutboxAttemptResult.Next
        if failure == nil {
            next = .delivered
        } else if !refused && attemptNumber < job.maxAttempts {
            // A refused target fails for good: the policy would refuse every retry as well.
            let delay = configuration.retryBaseDelay.inSeconds * pow(2, Double(attemptNumber - 1))
            next = .retry(at: Date().addingTimeInterval(delay))
        } else {
            next = .failed
        }
        let result = OutboxAttemptResult(at: Date(), httpStatus: status, error: failure, next: next)
        do {
            if !(try await store.recordOutboxAttempt(jobId: job.id, lease: lease, result: result)) {
                Counter(label: "pushline_processor_webhook_leases_lost_total").increment()
                logger.warning("webhook attempt not recorded: the job's lease ran out and another dispatcher took it", metadata: [
                    "job": "\(job.id)", "attempt": "\(attemptNumber)",
                ])
            }
        } catch {
            logger.error("cannot record webhook attempt; the lease will expire and the job be retried",
                         metadata: ["job": "\(job.id)", "error": "\(error)"])
        }
        let outcome: WebhookAttemptRecord.Outcome = switch next {
        case .delivered: .delivered
        case .retry: .retrying
        case .failed: .failed
        }
        Counter(label: "pushline_processor_webhook_attempts_total", dimensions: [("kind", job.kind), ("outcome", outcome.rawValue)]).increment()
        if failure != nil {
            logger.info("webhook attempt failed", metadata: ["job": "\(job.id)", "attempt": "\(attemptNumber)", "error": "\(failure ?? "")"])
        }
        return WebhookAttemptRecord(webhookId: job.id, kind: job.kind, mobileAppId: job.appId, url: RedactedURL.string(job.url),
                                    attempt: attemptNumber, outcome: outcome, httpStatus: status, error: failure)
    }

    private func audit(_ record: WebhookAttemptRecord) async {
        guard let producer, let topic = configuration.auditTopic else { return }
        do {
            let envelope = Envelope(type: WebhookAttemptRecord.type, payload: record)
            let value = try encoder.encode(envelope)
            _ = try await producer.send(KafkaProducerRecord(topic: topic, key: record.webhookId, value: value,
                                                            headers: RecordHeaders(type: WebhookAttemptRecord.type).fields))
        } catch {
            logger.warning("cannot write webhook audit record", metadata: ["job": "\(record.webhookId)", "error": "\(error)"])
        }
    }
}
