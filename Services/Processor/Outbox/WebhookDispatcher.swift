import AsyncHTTPClient
import Contracts
import Foundation
import Kafka
import Logging
import Metrics
import NIOCore
import NIOHTTP1
import Projections
import ServiceLifecycle
import Synchronization

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
        var requestTimeout: Duration = .seconds(5)
        var maxResponseBytes = 64 * 1024
        /// How long a claimed job stays reserved: longer than any attempt can take.
        var lease: Duration = .seconds(30)
        var idlePoll: Duration = .seconds(1)
        var retryBaseDelay: Duration = .seconds(1)
        var auditTopic: String?
        var targetPolicy = WebhookTargetPolicy()
    }

    private let configuration: Configuration
    private let store: any ProjectionStore
    private let http: HTTPClient
    private let producer: KafkaProducer?
    private let logger: Logger
    /// Set by `wake()`, cleared by the idle waiter: new jobs may be due.
    private let woken = Mutex(false)
    private let stopping = Mutex(false)
    private let encoder = WireJSON.encoder()

    init(configuration: Configuration, store: any ProjectionStore, http: HTTPClient, producer: KafkaProducer?, logger: Logger) {
        self.configuration = configuration
        self.store = store
        self.http = http
        self.producer = producer
        self.logger = logger
    }

    /// Tells the dispatcher that new jobs may be due (called after each applied batch).
    func wake() {
        woken.withLock { $0 = true }
    }

    /// On graceful shutdown no new job is claimed, and the attempts in flight are finished and
    /// recorded (not cancelled): a SIGTERM restart repeats no webhook.
    func run() async throws {
        await withGracefulShutdownHandler {
            await self.loop()
        } onGracefulShutdown: {
            self.stopping.withLock { $0 = true }
        }
    }

    private var isStopping: Bool { stopping.withLock { $0 } }

    private enum Event: Sendable {
        case sent
        case wake
    }

    private func loop() async {
        await withTaskGroup(of: Event.self) { group in
            var inFlight = 0
            var waiting = false
            while !Task.isCancelled, !isStopping {
                let free = configuration.concurrency - inFlight
                var claimed: [OutboxJob] = []
                if free > 0 {
                    do {
                        let now = Date()
                        claimed = try await store.claimOutboxJobs(now: now, limit: free, leaseUntil: now.addingTimeInterval(configuration.lease.seconds))
                    } catch {
                        logger.error("cannot claim outbox jobs", metadata: ["error": "\(error)"])
                    }
                }
                for job in claimed {
                    inFlight += 1
                    group.addTask { await self.attempt(job); return .sent }
                }
                if !claimed.isEmpty && inFlight < configuration.concurrency { continue }
                if !waiting {
                    // One idle waiter at a time: it returns on wake() or after idlePoll.
                    waiting = true
                    group.addTask { await self.idle(); return .wake }
                }
                guard let event = await group.next() else { break }
                switch event {
                case .sent: inFlight -= 1
                case .wake: waiting = false
                }
            }
            // Finish (and record) what is in flight; the idle waiter ends by itself.
            while await group.next() != nil {}
        }
    }

    private func idle() async {
        let deadline = ContinuousClock.now + configuration.idlePoll
        while ContinuousClock.now < deadline, !Task.isCancelled, !isStopping {
            if woken.withLock({ let was = $0; $0 = false; return was }) { return }
            try? await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Sends `job` once and records the attempt (internal so that tests can drive one attempt).
    func attempt(_ job: OutboxJob) async {
        let attemptNumber = job.attempts + 1
        var status: Int?
        var failure: String?
        var refused = false
        do {
            switch try await configuration.targetPolicy.check(job.url) {
            case .refused(let reason):
                failure = reason
                refused = true
            case .allowed:
                var request = HTTPClientRequest(url: job.url)
                request.method = .POST
                for (name, value) in job.headers { request.headers.replaceOrAdd(name: name, value: value) }
                request.headers.replaceOrAdd(name: WebhookHeaders.webhookId, value: job.id)
                request.body = .bytes(ByteBuffer(bytes: job.body))
                let response = try await http.execute(request, timeout: .nanoseconds(configuration.requestTimeout.nanoseconds))
                status = Int(response.status.code)
                // Drain a bounded amount of the answer so the connection can be reused.
                _ = try? await response.body.collect(upTo: configuration.maxResponseBytes)
                if !(200..<300).contains(Int(response.status.code)) { failure = "HTTP \(response.status.code)" }
            }
        } catch {
            failure = String(describing: error)
        }
        let next: OutboxAttemptResult.Next
        if failure == nil {
            next = .delivered
        } else if !refused && attemptNumber < job.maxAttempts {
            // A refused target fails for good: the policy would refuse every retry as well.
            let delay = configuration.retryBaseDelay.seconds * pow(2, Double(attemptNumber - 1))
            next = .retry(at: Date().addingTimeInterval(delay))
        } else {
            next = .failed
        }
        let result = OutboxAttemptResult(at: Date(), httpStatus: status, error: failure, next: next)
        do {
            try await store.recordOutboxAttempt(jobId: job.id, result: result)
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
        await audit(WebhookAttemptRecord(webhookId: job.id, kind: job.kind, mobileAppId: job.appId, url: job.url,
                                         attempt: attemptNumber, outcome: outcome, httpStatus: status, error: failure))
    }

    private func audit(_ record: WebhookAttemptRecord) async {
        guard let producer, let topic = configuration.auditTopic else { return }
        do {
            let envelope = Envelope(type: WebhookAttemptRecord.type, payload: record)
            let value = try encoder.encode(envelope)
            _ = try await producer.send(KafkaProducerRecord(topic: topic, key: record.webhookId, value: value, headers: [
                KafkaHeader(name: RecordHeader.type, value: WebhookAttemptRecord.type), KafkaHeader(name: RecordHeader.version, value: "1"),
            ]))
        } catch {
            logger.warning("cannot write webhook audit record", metadata: ["job": "\(record.webhookId)", "error": "\(error)"])
        }
    }
}

extension Duration {
    var seconds: Double {
        let (s, atto) = components
        return Double(s) + Double(atto) / 1e18
    }
}
