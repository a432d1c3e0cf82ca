import Contracts
import Foundation
import Handlers
import Kafka
import Logging
import OutboundRendering
import Settings

/// Everything the processor is configured with: one value, read from the environment and the
/// command line by `fromEnvironment` (docs/CONFIGURATION.md lists each variable).
public struct ProcessorConfiguration: Sendable {
    /// The settings every executable shares: broker, topics, store, logging.
    public var shared = SharedSettings()
    public var host = "127.0.0.1"
    public var port = 8081
    public var groupId = "pushline-processor"
    /// The consumer's session and poll timeouts and fetch wait.
    public var consumerTimings = ConsumerTimings()
    public var maxBatchSize = 2_000
    /// The batch sizes a processor or a rebuild accepts (`PUSHLINE_MAX_BATCH`, `rebuild --batch`).
    public static let batchSizes = 1...100_000
    public var webhookConcurrency = 32
    public var webhookTimeoutMs = 5_000
    /// The most devices one user of an app keeps (`DecisionRules.maxDevicesPerUser`). Live
    /// processors and rebuilds of one log must use the same value.
    public var maxDevicesPerUser = DecisionRules.default.maxDevicesPerUser
    /// The most users one app keeps (`DecisionRules.maxUsersPerApp`).
    public var maxUsersPerApp = DecisionRules.default.maxUsersPerApp
    /// How long tracking reports of an unapplied send are kept (`DecisionRules.trackingParkTtlMs`).
    public var trackingParkTtlMs = DecisionRules.default.trackingParkTtlMs
    /// How long tracked registration statuses and acks are kept (`DecisionRules.registrationStatusTtlMs`, `.ackTtlMs`).
    public var registrationStatusTtlMs = DecisionRules.default.registrationStatusTtlMs
    public var ackTtlMs = DecisionRules.default.ackTtlMs
    /// Badge updates per device and minute of log time (`DecisionRules.maxBadgeUpdatesPerMinute`).
    public var maxBadgeUpdatesPerMinute = DecisionRules.default.maxBadgeUpdatesPerMinute
    /// Webhook attempts in flight for one app at most, so one app's slow receiver cannot hold
    /// every slot (`PUSHLINE_WEBHOOK_APP_CONCURRENCY`).
    public var webhookAppConcurrency = 4
    /// Whether webhooks and callbacks may go to loopback, private, link-local and similar
    /// addresses; off (denied) unless the local stack or a test turns it on.
    public var webhookAllowPrivateTargets = false
    /// How long an owned partition may have records waiting without progress before `/health`
    /// answers 503 (`PUSHLINE_STALL_TIMEOUT_MS`).
    public var stallTimeoutMs = 60_000
    /// Whether a live processor applies records written before its store was created
    /// (`PUSHLINE_ACCEPT_EXISTING_LOG`); off: it refuses them and names the rebuild instead.
    public var acceptExistingLog = false
    /// The deployment's keys (`PUSHLINE_SECRETS_KEY`, `PUSHLINE_SECRETS_PREVIOUS_KEYS`), from
    /// which the processor derives the keys it signs and names with; nil when unset.
    public var secrets: SecretsKeyring?
    /// The local queue of the processor's producer: `queue.buffering.max.messages` when
    /// `PUSHLINE_KAFKA_PROPERTIES` sets it, else the producer's default. Outbound records are
    /// published in windows that fit it.
    public var producerQueueMessages: Int {
        shared.kafkaProperties["queue.buffering.max.messages"].flatMap { Int($0) } ?? KafkaProducerConfiguration().queueBufferingMaxMessages
    }

    public init() {}

    /// The settings among these that change what the processor decides, as its handlers take them.
    public var decisionRules: DecisionRules {
        DecisionRules(maxDevicesPerUser: maxDevicesPerUser, maxUsersPerApp: maxUsersPerApp, trackingParkTtlMs: trackingParkTtlMs,
                      registrationStatusTtlMs: registrationStatusTtlMs, ackTtlMs: ackTtlMs,
                      maxBadgeUpdatesPerMinute: maxBadgeUpdatesPerMinute,
                      idempotencyWindowHours: shared.idempotencyWindowHours, appParts: shared.appParts,
                      messageIdKeys: MessageIdKeys(keyring: secrets))
    }

    /// Reads the shared settings and the processor's own. `overrides` are command-line flags, by
    /// the variable each replaces; `defaultLogLevel` applies when `PUSHLINE_LOG_LEVEL` is unset.
    public static func fromEnvironment(_ env: [String: String] = ProcessInfo.processInfo.environment,
                                       overrides: [String: String?] = [:],
                                       defaultLogLevel: Logger.Level = .info) throws -> ProcessorConfiguration {
        var c = ProcessorConfiguration()
        let reader = SettingsReader(environment: env, overrides: overrides)
        c.shared = try SharedSettings(reader, defaultLogLevel: defaultLogLevel)
        c.host = reader.string("PUSHLINE_PROCESSOR_HOST", default: c.host)
        c.port = try reader.int("PUSHLINE_PROCESSOR_PORT", default: c.port, range: 0...65535)
        c.groupId = reader.string("PUSHLINE_GROUP_ID", default: c.groupId)
        c.consumerTimings = try ConsumerTimings(reader)
        c.maxBatchSize = try reader.int("PUSHLINE_MAX_BATCH", default: c.maxBatchSize, range: Self.batchSizes)
        c.webhookConcurrency = try reader.int("PUSHLINE_WEBHOOK_CONCURRENCY", default: c.webhookConcurrency, range: 1...10_000)
        c.webhookTimeoutMs = try reader.int("PUSHLINE_WEBHOOK_TIMEOUT_MS", default: c.webhookTimeoutMs, range: 100...600_000)
        c.trackingParkTtlMs = try reader.int("PUSHLINE_TRACKING_PARK_TTL_MS", default: c.trackingParkTtlMs, range: 1_000...31_536_000_000)
        c.registrationStatusTtlMs = try reader.int("PUSHLINE_REGISTRATION_STATUS_TTL_MS", default: c.registrationStatusTtlMs,
                                                   range: 1_000...31_536_000_000)
        c.ackTtlMs = try reader.int("PUSHLINE_ACK_TTL_MS", default: c.ackTtlMs, range: 1_000...31_536_000_000)
        c.maxBadgeUpdatesPerMinute = try reader.int("PUSHLINE_MAX_BADGE_UPDATES_PER_MINUTE", default: c.maxBadgeUpdatesPerMinute,
                                                    range: 1...600)
        c.maxDevicesPerUser = try reader.int("PUSHLINE_MAX_DEVICES_PER_USER", default: c.maxDevicesPerUser, range: 1...100_000)
        c.maxUsersPerApp = try reader.int("PUSHLINE_MAX_USERS_PER_APP", default: c.maxUsersPerApp, range: 1...1_000_000_000)
        c.webhookAppConcurrency = try reader.int("PUSHLINE_WEBHOOK_APP_CONCURRENCY", default: c.webhookAppConcurrency, range: 1...10_000)
        c.webhookAllowPrivateTargets = try reader.bool("PUSHLINE_WEBHOOK_ALLOW_PRIVATE_TARGETS", default: c.webhookAllowPrivateTargets)
        c.stallTimeoutMs = try reader.int("PUSHLINE_STALL_TIMEOUT_MS", default: c.stallTimeoutMs, range: 1_000...86_400_000)
        c.acceptExistingLog = try reader.bool("PUSHLINE_ACCEPT_EXISTING_LOG", default: c.acceptExistingLog)
        c.secrets = try reader.secretsKeyring()
        return c
    }
}

extension ProcessorConfiguration {
    /// A consumer of the command topics in group `groupId`, with the processor's settings. Its
    /// `client.id`, `pushline-processor-<pid>`, tells the group's members apart on one host
    /// (`pushline lag`).
    public func consumerConfiguration(groupId: String) -> KafkaConsumerConfiguration {
        var config = shared.consumerConfiguration(groupId: groupId, clientId: "pushline-processor-\(ProcessInfo.processInfo.processIdentifier)")
        consumerTimings.apply(to: &config)
        config.maxBatchSize = maxBatchSize
        return config
    }
}
