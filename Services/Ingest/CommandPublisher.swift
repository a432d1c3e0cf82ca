import Contracts
import Kafka

/// Writes commands to Kafka and returns only once the broker acknowledged every one of them.
///
/// This is the only way ingest changes anything (docs/ARCHITECTURE.md#acknowledged-means-durable):
/// a route answers 2xx only after `publish` returned. The Kafka adapter implements it; tests use an
/// in-memory fake.
public protocol CommandPublisher: Sendable {
    /// Publishes every command of one HTTP request (sent concurrently, awaited together) and
    /// returns where each one landed, in order. Throws when any of them was not acknowledged;
    /// ingest then answers 503 with `Retry-After`.
    @discardableResult
    func publish(_ commands: [EncodedCommand], requestId: String) async throws -> [KafkaDeliveryReport]
    /// True when the broker answered recently (used by /health).
    func isReady() async -> Bool
}

/// Thrown by publishers when the broker refuses a record as too large: no retry can succeed,
/// so ingest answers 413, never 503.
public struct RecordTooLarge: Error, Sendable {
    public var reason: String
    public init(reason: String) { self.reason = reason }
}

/// Thrown by publishers when the broker did not acknowledge within the bound: ingest answers 503 + Retry-After.
public struct PublishUnavailable: Error, Sendable {
    public var reason: String
    public init(reason: String) { self.reason = reason }
}
