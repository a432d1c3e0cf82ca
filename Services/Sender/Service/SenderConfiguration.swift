import Contracts
import Foundation
import Kafka
import Logging
import Settings

/// Everything `pushline-sender` is configured with, read from the environment (docs/CONFIGURATION.md
/// lists each variable; docs/ARCHITECTURE.md#delivery explains them).
public struct SenderConfiguration: Sendable {
    /// The settings every executable shares: broker, topics, store, logging.
    public var shared = SharedSettings()
    public var host = "127.0.0.1"
    /// Health and metrics (`PUSHLINE_SENDER_PORT`).
    public var port = 8082
    /// The consumer group of every sender of the deployment (`PUSHLINE_SENDER_GROUP_ID`).
    public var groupId = "pushline-sender"
    /// Opens the apps' sealed credentials (`PUSHLINE_SECRETS_KEY`, required).
    public var keyring: SecretsKeyring?
    /// Where pushes go (`PUSHLINE_APNS_URL`, `PUSHLINE_FCM_URL`).
    public var endpoints = ProviderEndpoints()
    /// Further CAs to trust (`PUSHLINE_SENDER_CA_FILE`).
    public var caFile: String?
    /// Provider requests in the air at once, all apps together (`PUSHLINE_SENDER_CONCURRENCY`).
    public var concurrency = 256
    /// Provider requests in the air at once for one app and platform: its share of the above
    /// and the streams it keeps on its connection (`PUSHLINE_SENDER_APP_CONCURRENCY`).
    public var appConcurrency = 64
    /// Records read and not finished — sending, waiting to be retried or paused — at most; the
    /// sender reads on as records finish (`PUSHLINE_SENDER_WINDOW`).
    public var window = 10_000
    /// Records of one app waiting (to be retried, or paused) at most; a record that would wait
    /// beyond it fails at once, with its reason, so that one app cannot fill the window
    /// (`PUSHLINE_SENDER_APP_WAITING`).
    public var appWaiting = 1_000
    /// How long after its record was written a push expires: it is not attempted or retried
    /// later, and the providers are told (`apns-expiration`, FCM `ttl`) (`PUSHLINE_SENDER_EXPIRY_MS`).
    public var expiryMs = 86_400_000
    /// The first retry's back-off ceiling and the largest (`PUSHLINE_SENDER_RETRY_BASE_MS`,
    /// `PUSHLINE_SENDER_RETRY_CAP_MS`).
    public var retryBaseMs = 1_000
    public var retryCapMs = 300_000
    /// How long an app's credentials read from the store are reused (`PUSHLINE_SENDER_CREDENTIALS_CACHE_MS`):
    /// replaced credentials are used, and a pause lifted, at most this long after the processor applied them.
    public var credentialsCacheMs = 5_000
    /// One provider request, connecting included (`PUSHLINE_SENDER_TIMEOUT_MS`).
    public var requestTimeoutMs = 30_000
    /// How long an app's connection to a provider stays open with no push
    /// (`PUSHLINE_SENDER_IDLE_CONNECTION_MS`); its next push connects again.
    public var idleConnectionMs = 600_000
    /// How long partitions may have records waiting without any finishing before `/health`
    /// answers 503 (`PUSHLINE_STALL_TIMEOUT_MS`).
    public var stallTimeoutMs = 60_000
    /// How long an outcome waits for others to share its produce request (`PUSHLINE_SENDER_LINGER_MS`).
    /// Outcomes wait for nobody: fewer, larger requests and batches cost the broker less (the
    /// memory broker's fetch takes longer the more batches a partition holds; the durable one
    /// writes an object per request) and wake librdkafka's producer thread less.
    public var lingerMs = 100
    /// The consumer's session and poll timeouts and fetch wait.
    public var consumerTimings = ConsumerTimings()

    public init() {}

    public static func fromEnvironment(_ env: [String: String] = ProcessInfo.processInfo.environment,
                                       overrides: [String: String?] = [:]) throws -> SenderConfiguration {
        var c = SenderConfiguration()
        let reader = SettingsReader(environment: env, overrides: overrides)
        c.shared = try SharedSettings(reader)
        c.host = reader.string("PUSHLINE_SENDER_HOST", default: c.host)
        c.port = try reader.int("PUSHLINE_SENDER_PORT", default: c.port, range: 0...65535)
        c.groupId = reader.string("PUSHLINE_SENDER_GROUP_ID", default: c.groupId)
        c.keyring = try reader.secretsKeyring()
        guard c.keyring != nil else {
            throw ConfigurationError("\(SecretsVariable.key) is required: the sender opens the apps' push credentials with it "
                                     + "(the key ingest seals them with; docs/DEPLOYMENT.md#push-credentials-and-the-secrets-key)")
        }
        let apns = reader.string("PUSHLINE_APNS_URL", default: "")
        let fcm = reader.string("PUSHLINE_FCM_URL", default: ProviderEndpoints.fcmDefault)
        for (name, url) in [("PUSHLINE_APNS_URL", apns), ("PUSHLINE_FCM_URL", fcm)] where !url.isEmpty {
            guard let parsed = URL(string: url), parsed.scheme == "https", parsed.host != nil, parsed.path.isEmpty || parsed.path == "/" else {
                throw ConfigurationError("\(name)=\(url) is not an https base URL (scheme and host, no path)")
            }
        }
        c.endpoints = ProviderEndpoints(apnsOverride: apns.isEmpty ? nil : Self.trimmed(apns), fcm: Self.trimmed(fcm))
        c.caFile = reader.raw("PUSHLINE_SENDER_CA_FILE").flatMap { $0.isEmpty ? nil : $0 }
        if let caFile = c.caFile, !FileManager.default.isReadableFile(atPath: caFile) {
            throw ConfigurationError("PUSHLINE_SENDER_CA_FILE=\(caFile) is not a readable file")
        }
        c.concurrency = try reader.int("PUSHLINE_SENDER_CONCURRENCY", default: c.concurrency, range: 1...100_000)
        c.appConcurrency = try reader.int("PUSHLINE_SENDER_APP_CONCURRENCY", default: c.appConcurrency, range: 1...100_000)
        c.window = try reader.int("PUSHLINE_SENDER_WINDOW", default: c.window, range: 1...10_000_000)
        c.appWaiting = try reader.int("PUSHLINE_SENDER_APP_WAITING", default: c.appWaiting, range: 0...10_000_000)
        c.expiryMs = try reader.int("PUSHLINE_SENDER_EXPIRY_MS", default: c.expiryMs, range: 1_000...2_419_200_000)
        c.retryBaseMs = try reader.int("PUSHLINE_SENDER_RETRY_BASE_MS", default: c.retryBaseMs, range: 1...3_600_000)
        c.retryCapMs = try reader.int("PUSHLINE_SENDER_RETRY_CAP_MS", default: c.retryCapMs, range: c.retryBaseMs...86_400_000)
        c.credentialsCacheMs = try reader.int("PUSHLINE_SENDER_CREDENTIALS_CACHE_MS", default: c.credentialsCacheMs, range: 0...3_600_000)
        c.requestTimeoutMs = try reader.int("PUSHLINE_SENDER_TIMEOUT_MS", default: c.requestTimeoutMs, range: 100...600_000)
        c.idleConnectionMs = try reader.int("PUSHLINE_SENDER_IDLE_CONNECTION_MS", default: c.idleConnectionMs, range: 1_000...86_400_000)
        c.lingerMs = try reader.int("PUSHLINE_SENDER_LINGER_MS", default: c.lingerMs, range: 0...10_000)
        c.stallTimeoutMs = try reader.int("PUSHLINE_STALL_TIMEOUT_MS", default: c.stallTimeoutMs, range: 1_000...86_400_000)
        c.consumerTimings = try ConsumerTimings(reader)
        return c
    }

    private static func trimmed(_ url: String) -> String {
        url.hasSuffix("/") ? String(url.dropLast()) : url
    }

    /// The sender's consumer of the outbound topic.
    public var consumerConfiguration: KafkaConsumerConfiguration {
        var config = shared.consumerConfiguration(groupId: groupId, clientId: "pushline-sender")
        consumerTimings.apply(to: &config)
        return config
    }

    public var retryPolicy: RetryPolicy {
        RetryPolicy(base: TimeInterval(retryBaseMs) / 1000, cap: TimeInterval(retryCapMs) / 1000)
    }
}
